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
source scripts/lib/chaos-setup.sh
exec /usr/bin/python3 scripts/lib/chaos_device.py "$HERALD" "$CYCLES" "$@"
