#!/usr/bin/env bash
# Kills the gateway with SIGKILL at random moments while pushes flow, and accounts for every 200.
# Usage: scripts/chaos-gateway.sh CYCLES [--seed N]
# Needs Debian's python3 and python3-h2 (installed here if missing). Builds herald (debug) unless
# HERALD names a binary. Prints cycles, 200s, delivered, replaced, discarded, duplicates and LOST;
# exits non-zero if anything is LOST. What it does is described in scripts/lib/chaos_gateway.py.
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES="${1:?usage: scripts/chaos-gateway.sh CYCLES [--seed N]}"
shift
source scripts/lib/chaos-setup.sh
exec /usr/bin/python3 scripts/lib/chaos_gateway.py "$HERALD" "$CYCLES" "$@"
