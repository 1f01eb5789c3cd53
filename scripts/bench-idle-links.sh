#!/usr/bin/env bash
# What an idle device link costs the gateway: memory per connected, authenticated, idle device, over
# the loopback development link (WebSocket, no TLS) and over the TLS link (wss://, port 5223 in
# production), in the same run. The goal (docs/scaling.md) is a million idle links on one box.
#
#   scripts/bench-idle-links.sh [devices-per-phase]     (default 9000)
#
# Starts a gateway (--durability normal: each new device's first contact is a write, and this measures
# memory, not fsync), reads its resident memory (VmRSS), connects N devices with fresh keys through
# `herald test-device --idle-devices N` (each one authenticates with its own key and stays connected,
# idle), reads VmRSS again, and prints the difference per link; then the same over TLS. The numbers
# include everything a device costs the gateway: the socket, the channel and its handlers, the device
# record in the registry. The gateway holds both phases' links at once, so it needs 2N file descriptors
# (the script raises the soft limit as far as the hard one allows).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-9000}
NEED=$((2 * N + 1024))
ulimit -n "$NEED" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge "$NEED" ] || {
    echo "the gateway needs $NEED file descriptors for 2 x $N links; the limit is $(ulimit -Hn): pass a smaller N"
    exit 1
}

source scripts/lib/bench-gateway.sh
IDLE_PIDS=()
bench_extra_cleanup() { for p in "${IDLE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
bench_setup curl:curl -- --no-legacy --durability normal

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$GW_PID/status"; }
online() { curl -sf "$ADMIN/metrics" -H "$AUTH" | awk '/^herald_devices_online / {print $2}'; }

# One phase: connect N idle devices to $1 (a ws:// or wss:// link URL), print the memory per link.
phase() {
    local url=$1 tag=$2 name=$3 out="$WORK/idle-$2.out" before after start elapsed
    before=$(rss_kib)
    start=$(date +%s.%N)
    "$HERALD" test-device --gateway "$url" --gateway-state "$WORK/gw" --identity "$WORK/idle-$tag.json" \
        --idle-devices "$N" --quiet --json > "$out" 2>&1 &
    IDLE_PIDS+=($!)
    until grep -q '"ready"' "$out" 2>/dev/null; do
        kill -0 "${IDLE_PIDS[-1]}" 2>/dev/null || { cat "$out"; exit 1; }
        sleep 0.2
    done
    elapsed=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
    after=$(rss_kib)
    python3 -c "
n, before, after = $N + 1, $before, $after
per = (after - before) / n
print(f'$name: {n} idle links in ${elapsed} s; gateway VmRSS {before / 1024:.0f} -> {after / 1024:.0f} MiB: '
      f'{per:.1f} KiB per link; a million would take {per * 1e6 / 1024 / 1024:.1f} GiB')"
}

LINK_DEV=$(json "$WORK/gw/gateway.json" linkDevelopmentURL)
LINK_TLS=$(json "$WORK/gw/gateway.json" linkURL)
phase "$LINK_DEV" ws "ws (loopback, no TLS)"
phase "$LINK_TLS" wss "wss (TLS)"
echo "devices online (gateway metrics): $(online)"
