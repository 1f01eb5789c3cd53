#!/usr/bin/env bash
# A reconnect storm: N devices held on the device link (cleartext loopback), the gateway restarted,
# and the time until all are connected again and every push stored meanwhile is delivered.
#
#   scripts/bench-reconnect.sh N [--processes P] [--kill]     (N: idle devices; default 18000)
#
# Builds herald in release unless HERALD names a binary. The gateway holds N + P links, so it needs
# that many file descriptors: the script raises the soft limit to the hard one and refuses an N that
# does not fit. What is measured is described in scripts/lib/bench_reconnect.py.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-18000}"
[ $# -gt 0 ] && shift
ulimit -n "$(ulimit -Hn)"
if [ $((N + 1024)) -gt "$(ulimit -n)" ]; then
    echo "bench-reconnect: the gateway would need $((N + 1024)) file descriptors; this machine allows a process" \
        "$(ulimit -Hn): pass N of at most $(($(ulimit -Hn) - 1024))" >&2
    exit 1
fi
if [ -z "${HERALD:-}" ]; then
    swift build -c release --product herald >/dev/null
    HERALD="$(swift build -c release --show-bin-path)/herald"
fi
exec python3 scripts/lib/bench_reconnect.py "$HERALD" "$N" "$@"
