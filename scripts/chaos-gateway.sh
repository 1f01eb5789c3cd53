#!/usr/bin/env bash
# Kills the gateway with SIGKILL at random moments while pushes flow, and accounts for every 200.
# Usage: scripts/chaos-gateway.sh CYCLES [--seed N] [--nodes N] [--database postgres|URL]
#        scripts/chaos-gateway.sh --rolling CYCLES [--nodes N] [--database postgres|URL] [--drain-window S]
# (--rolling: the nodes restarted one at a time with SIGTERM under load, each restart's cost printed;
# see scripts/lib/chaos_rolling.py.)
# (--nodes 3 --database postgres: three gateways on a private PostgreSQL, a random one killed each
# cycle; needs Debian's postgresql, installed here if missing.)
# Needs Debian's python3 and python3-h2 (installed here if missing). Builds herald (debug) unless
# HERALD names a binary. Prints cycles, 200s, delivered, replaced, discarded, duplicates and LOST;
# exits non-zero if anything is LOST. What it does is described in scripts/lib/chaos_gateway.py.
set -euo pipefail
cd "$(dirname "$0")/.."
ROLLING=
if [ "${1:-}" = --rolling ]; then
    ROLLING=yes
    shift
fi
CYCLES="${1:?usage: scripts/chaos-gateway.sh [--rolling] CYCLES [--seed N] [--nodes N] [--database postgres|URL]}"
shift
source scripts/lib/chaos-setup.sh
if [[ " $* " == *" --database postgres "* || " $* " == *" --nodes "* ]] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
if [ -n "$ROLLING" ]; then
    if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    fi
    exec /usr/bin/python3 scripts/lib/chaos_rolling.py "$HERALD" "$CYCLES" "$@"
fi
exec /usr/bin/python3 scripts/lib/chaos_gateway.py "$HERALD" "$CYCLES" "$@"
