#!/usr/bin/env bash
# What a device that stops reading costs the gateway's memory (docs/device-link.md, "A device that
# does not read"). A gateway and a `herald test-device` connected through a proxy
# (scripts/lib/stalled_proxy.py) that then stops reading what the gateway sends; h2load sends
# PUSHES pushes of a 3,000-byte payload to that device (-c 10 -m 100: each written push waits for
# its acknowledgement deadline, 2 s, before it is stored and answered). Prints the gateway's
# resident memory before and after, its growth per push, the answers, and the gateway's
# back-pressure counters.
#
#   scripts/bench-stalled-device.sh [pushes]
#
# HERALD=<binary> measures another build (an A/B comparison). BENCH_STALLED_OFFLINE=1 disconnects
# the device before the pushes instead, so that all of them are stored as for an offline device:
# the reference for what storing them costs. Needs h2load (Debian:
# nghttp2-client) and curl; installs them with apt-get if missing. Record the result in
# BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PUSHES=${1:-20000}

source scripts/lib/bench-gateway.sh
bench_extra_cleanup() {
    [ -n "${STALLED_PID:-}" ] && kill "$STALLED_PID" 2>/dev/null && wait "$STALLED_PID" 2>/dev/null || true
    [ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
}
bench_setup h2load:nghttp2-client curl:curl -- --no-legacy

LINK=$(json "$WORK/gw/gateway.json" linkURL)
LINK_PORT=$(python3 -c "import sys, urllib.parse; print(urllib.parse.urlparse(sys.argv[1]).port)" "$LINK")
python3 scripts/lib/stalled_proxy.py 127.0.0.1 "$LINK_PORT" "$WORK/proxy.port" > "$WORK/proxy.out" 2>&1 &
PROXY_PID=$!
until [ -s "$WORK/proxy.port" ]; do
    kill -0 "$PROXY_PID" 2>/dev/null || { cat "$WORK/proxy.out"; exit 1; }
    sleep 0.1
done
"$HERALD" test-device --gateway "ws://127.0.0.1:$(cat "$WORK/proxy.port")/device/v1" --gateway-state "$WORK/gw" \
    --identity "$WORK/stalled.json" --device-id stalled-device --topic com.example.bench --quiet --json \
    > "$WORK/stalled.out" 2>&1 &
STALLED_PID=$!
until grep -q '"ready"' "$WORK/stalled.out" 2>/dev/null; do
    kill -0 "$STALLED_PID" 2>/dev/null || { cat "$WORK/stalled.out"; exit 1; }
    sleep 0.1
done
STALLED_TOKEN=$(head -1 "$WORK/stalled.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"]["com.example.bench"])')
if [ "${BENCH_STALLED_OFFLINE:-0}" = 1 ]; then
    kill "$STALLED_PID"; wait "$STALLED_PID" 2>/dev/null || true; STALLED_PID=
    # Until the gateway has the device offline: only the benchmark's own device is online.
    until curl -sf "$ADMIN/metrics" -H "$AUTH" | grep -q '^herald_devices_online 1'; do sleep 0.1; done
    echo "the device is offline: every push is stored"
else
    kill -USR1 "$PROXY_PID"
    until grep -q "stopped reading" "$WORK/proxy.out"; do sleep 0.1; done
fi

python3 - "$WORK/big.json" <<'PY'
import json, sys
text = json.dumps({"aps": {"alert": "stalled"}, "padding": "x" * 3000}, separators=(",", ":"))
open(sys.argv[1], "w").write(text)
PY

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
RSS0=$(rss_kib "$GW_PID")
START=$(date +%s.%N)
h2load -n "$PUSHES" -c 10 -m 100 -d "$WORK/big.json" \
    -H "authorization: bearer $JWT" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
    "$PROVIDER/3/device/$STALLED_TOKEN" > "$WORK/h2load.out"
END=$(date +%s.%N)
RSS1=$(rss_kib "$GW_PID"); HWM=$(hwm_kib "$GW_PID")
METRICS=$(curl -sf "$ADMIN/metrics" -H "$AUTH")
metric() { echo "$METRICS" | grep "^$1" | awk '{print $2}' || true; }
echo "answers: $(grep "status codes:" "$WORK/h2load.out" | sed 's/^ *//') in $(python3 -c "print(f'{$END - $START:.1f}')") s"
BACKED=$(metric herald_link_backed_up_total)
echo "pushes stored: $(metric herald_pushes_stored_total); link backed up: ${BACKED:-(no such counter in this build)} time(s)"
python3 -c "
before, after, peak, n = $RSS0, $RSS1, $HWM, $PUSHES
print(f'gateway resident memory: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after (peak {peak / 1024:.1f} MiB): '
      f'{(after - before) / 1024:.1f} MiB more, {(after - before) * 1024 / n:.0f} bytes per push')"
