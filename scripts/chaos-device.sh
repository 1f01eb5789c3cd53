#!/usr/bin/env bash
# Kills the device daemon with SIGKILL at random moments while an app adds notifications and pushes
# arrive; checks that every add fires once and every 200 lands.
# Usage: scripts/chaos-device.sh CYCLES [--seed N]
# Needs Debian's python3 and python3-h2 (installed here if missing). Builds herald (debug) unless
# HERALD names a binary. Prints what fired once, late, twice or not at all, and what became of every
# 200; exits non-zero if anything is LOST or presented twice. What it does is described in scripts/lib/chaos_device.py.
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES="${1:?usage: scripts/chaos-device.sh CYCLES [--seed N]}"
shift
if ! /usr/bin/python3 -c 'import h2' 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 python3-h2 >/dev/null
fi
if [ -z "${HERALD:-}" ]; then
    swift build --product herald >/dev/null
    HERALD="$(swift build --show-bin-path)/herald"
fi
exec /usr/bin/python3 scripts/lib/chaos_device.py "$HERALD" "$CYCLES" "$@"
