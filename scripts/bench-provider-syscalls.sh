#!/usr/bin/env bash
# System calls per push on the provider path: the load of scripts/bench-provider-api.sh (h2load -c 4
# -m 100, a 200-byte alert, one test device acknowledging every push), with the kernel's syscall
# tracepoints counted on the gateway and on the test device (perf stat). CPU time per push moves
# by ±10% here with the machine's speed from one minute to the next; these counts do not, so a
# change that removes system calls shows in one run.
#
#   scripts/bench-provider-syscalls.sh [requests]
#
# Needs h2load (Debian: nghttp2-client), curl and perf (Debian: linux-perf); installs them with
# apt-get if missing. Prints each count per push for the gateway and the test device, and the bytes
# the gateway wrote per push (/proc/PID/io wchar: sockets, the SQLite WAL and database).
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-200000}

source scripts/lib/bench-gateway.sh
bench_setup h2load:nghttp2-client curl:curl perf:linux-perf -- --no-legacy

# Warm up (connections, caches, the log's first pages), then count.
bench_h2load_load 20000 > /dev/null
CALLS=(timerfd_settime write writev read pwrite64 pread64 fdatasync fsync epoll_wait futex)
EVENTS=$(printf 'syscalls:sys_enter_%s,' "${CALLS[@]}")context-switches
perf stat -x, -e "$EVENTS" -p "$GW_PID" -o "$WORK/gateway.stat" &
STAT_GW=$!
perf stat -x, -e "$EVENTS" -p "$DEV_PID" -o "$WORK/device.stat" &
STAT_DEV=$!
# perf stat starts counting as it attaches; give it a moment before the load.
sleep 0.5
WCHAR0=$(awk '/^wchar/ {print $2}' "/proc/$GW_PID/io")
bench_h2load_load "$REQUESTS" > "$WORK/h2load.out"
WCHAR1=$(awk '/^wchar/ {print $2}' "/proc/$GW_PID/io")
kill -INT "$STAT_GW" "$STAT_DEV"
wait "$STAT_GW" "$STAT_DEV" || true

echo "h2load: $(grep -o '[0-9.]* req/s' "$WORK/h2load.out" | head -1) ($(grep '^status codes:' "$WORK/h2load.out"))"
python3 - "$REQUESTS" "$WORK/gateway.stat" "$WORK/device.stat" "$WCHAR0" "$WCHAR1" <<'PY'
import sys
n = int(sys.argv[1])
def counts(path):
    out = {}
    for line in open(path):
        fields = line.strip().split(",")
        if len(fields) > 2 and fields[0].isdigit():
            out[fields[2].replace("syscalls:sys_enter_", "")] = int(fields[0])
    return out
gateway, device = counts(sys.argv[2]), counts(sys.argv[3])
print(f"{'per push':20s} {'gateway':>8s} {'device':>8s}")
for name in gateway:
    print(f"{name:20s} {gateway[name] / n:8.3f} {device.get(name, 0) / n:8.3f}")
print(f"gateway bytes written per push: {(int(sys.argv[5]) - int(sys.argv[4])) / n:.0f}")
PY
