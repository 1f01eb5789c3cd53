#!/usr/bin/env bash
# Fan-out of a broadcast: the time from a provider's broadcast request to the last subscribed device
# having it, for N devices subscribed to one channel over the loopback device link, against the
# same gateway's time for one push to one device (request to acknowledged 200), in the same run.
#
#   scripts/bench-broadcast.sh [subscribers] [processes] [broadcasts]     (default 18000 2 5)
#   scripts/bench-broadcast.sh --nodes K [subscribers] [broadcasts]       (a cluster: default 100000 5)
#
# Starts a gateway (release build, --durability normal), creates a no-storage channel, starts
# PROCESSES `herald test-device --idle-devices` each holding SUBSCRIBERS/PROCESSES devices with fresh
# keys, every one subscribed to the channel; then sends BROADCASTS broadcasts one after another with
# curl. Each test-device prints the wall-clock time at which the last of its devices had a broadcast
# (the processes share the machine's clock); the fan-out time is the latest of those minus the time
# the request was sent. The gateway holds every link, so it needs a file descriptor each (the script
# raises the soft limit as far as the hard one allows).
#
# With --nodes K: K gateways on a private PostgreSQL (Debian's postgresql, installed if missing), each
# holding SUBSCRIBERS/K of the devices; the broadcast goes to the first node and the others hear of it
# from the database (scripts/lib/bench_broadcast_cluster.py). This reaches more devices than one
# process may hold open files for.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--nodes" ]; then
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || {
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    }
    if [ -z "${HERALD:-}" ]; then
        swift build -c release --product herald >/dev/null
        HERALD="$(swift build -c release --show-bin-path)/herald"
    fi
    exec /usr/bin/python3 scripts/lib/bench_broadcast_cluster.py "$HERALD" "$2" "${3:-100000}" "${4:-5}"
fi
N=${1:-18000}
P=${2:-2}
B=${3:-5}
NEED=$((N + 1024))
ulimit -n "$NEED" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge "$NEED" ] || {
    echo "the gateway needs $NEED file descriptors for $N links; the limit is $(ulimit -Hn): pass a smaller N"
    exit 1
}

source scripts/lib/bench-gateway.sh
SUB_PIDS=()
bench_extra_cleanup() { for p in "${SUB_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
BENCH_CHANNELS=1 bench_setup curl:curl -- --no-legacy --durability normal

DEV=$(json "$WORK/gw/gateway.json" developmentURL)
CHANNELS=$(json "$WORK/gw/gateway.json" channelsDevelopmentURL)
LINK=$(json "$WORK/gw/gateway.json" linkDevelopmentURL)
CHANNEL=$(curl -sf --http2-prior-knowledge -D - -o /dev/null "$CHANNELS/1/apps/com.example.bench/channels" \
    -H "authorization: bearer $JWT" -d '{"message-storage-policy":0,"push-type":"LiveActivity"}' |
    awk 'tolower($1) == "apns-channel-id:" {print $2}' | tr -d '\r')
[ -n "$CHANNEL" ] || { echo "could not create a channel"; exit 1; }

PER=$((N / P))
start=$(date +%s.%N)
for i in $(seq 1 "$P"); do
    "$HERALD" test-device --gateway "$LINK" --identity "$WORK/sub-$i.json" --topic com.example.bench \
        --channel "$CHANNEL" --idle-devices "$PER" --quiet --json > "$WORK/sub-$i.out" 2>&1 &
    SUB_PIDS+=($!)
done
for i in $(seq 1 "$P"); do
    until grep -q '"ready"' "$WORK/sub-$i.out" 2>/dev/null; do
        kill -0 "${SUB_PIDS[$((i - 1))]}" 2>/dev/null || { cat "$WORK/sub-$i.out"; exit 1; }
        sleep 0.2
    done
done
echo "$((P * (PER + 1))) devices subscribed in $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
python3 scripts/lib/bench_broadcast.py "$DEV" "$JWT" "$CHANNEL" "$B" "$TOKEN" "$WORK/payload.json" \
    "$WORK"/sub-*.out
