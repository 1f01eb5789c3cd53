#!/usr/bin/env bash
# A reconnect storm: N devices held on the device link (cleartext loopback), every gateway restarted,
# and the time until all are connected again and every push stored meanwhile is delivered.
#
#   scripts/bench-reconnect.sh N [--nodes K] [--processes P] [--kill] [--reference] [--hold-sockets [S]]
#       N: idle devices (default 18000); K gateways on one private PostgreSQL (default 1: SQLite);
#       P test-device processes per gateway; --reference: first a storm where every device signs,
#       and the ratio of CPU per device with tickets to it; --hold-sockets: each gateway's device
#       link socket is held across the restart and handed over, as a systemd socket unit does
#       (S: that many sockets per gateway on one port, with SO_REUSEPORT, each queueing 4,096).
#
# Builds herald in release unless HERALD names a binary. A gateway holds its share of the N links,
# so it needs that many file descriptors: the script raises the soft limit to the hard one and
# refuses a share that does not fit. What is measured is described in scripts/lib/bench_reconnect.py.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-18000}"
[ $# -gt 0 ] && shift
ulimit -n "$(ulimit -Hn)"
if [ -z "${HERALD:-}" ]; then
    swift build -c release --product herald >/dev/null
    HERALD="$(swift build -c release --show-bin-path)/herald"
fi
exec python3 scripts/lib/bench_reconnect.py "$HERALD" "$N" "$@"
