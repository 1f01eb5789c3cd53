#!/usr/bin/env bash
# The device daemon under a flood: pushes a second through the gateway into a real `herald device`
# (engine, store, presenters: what `herald up` runs), against the same gateway delivering to
# `herald test-device` (which acknowledges without an engine) in the same run, and again once the
# device already keeps 5,000 notifications (50 apps with a full Notification Center each).
#
#   scripts/bench-device.sh [pushes]
#
# Each phase: h2load -n PUSHES -c 1 -m 100 over TLS, a 200-byte alert payload; every 200 waits for
# the device's acknowledgement (the device acknowledges a push once it is saved). Prints each rate,
# the device's rate as a share of the reference's, the second device phase as a share of the first,
# and the device's CPU per push. Needs h2load (nghttp2-client) and curl; installs them if missing.
# BENCH_PERF=FILE also records a profile of the device during its first phase (`perf record -g`).
# Record the result in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PUSHES=${1:-20000}

source scripts/lib/bench-gateway.sh
bench_extra_cleanup() {
    [ -n "${REAL_PID:-}" ] && kill "$REAL_PID" 2>/dev/null && wait "$REAL_PID" 2>/dev/null || true
}
bench_setup h2load:nghttp2-client curl:curl -- --no-legacy

# The real device, as `herald up` starts it (terminal and web presenters), linked to the same gateway.
LINK=$(json "$WORK/gw/gateway.json" linkDevelopmentURL)
"$HERALD" device --state "$WORK/device" --gateway "$LINK" --api-port 0 --no-banner --log-level notice \
    > "$WORK/real.out" 2> "$WORK/real.err" &
REAL_PID=$!
until [ -f "$WORK/device/device.json" ]; do
    kill -0 "$REAL_PID" 2>/dev/null || { cat "$WORK/real.err"; exit 1; }
    sleep 0.1
done
API=$(json "$WORK/device/device.json" apiURL)

# An app on the real device, registered with the gateway under the bench team and authorized.
install_app() {
    curl -sf -X POST "$ADMIN/apps" -H "$AUTH" -d "{\"bundleID\":\"$1\",\"teamID\":\"BENCH12345\"}" >/dev/null
    curl -sf -X POST "$API/apps" -d "{\"bundleID\":\"$1\",\"apsEnvironment\":\"development\",\"authorized\":[\"alert\",\"sound\",\"badge\"]}" >/dev/null
    local token=""
    for _ in $(seq 1 100); do
        token=$(curl -sf "$API/apps/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token") or "")')
        [ -n "$token" ] && break
        sleep 0.1
    done
    [ -n "$token" ] || { echo "no token for $1" >&2; exit 1; }
    echo "$token"
}

# h2load to TOKEN for TOPIC; prints "rate|codes".
flood() {
    local output
    output=$(h2load -n "$1" -c 1 -m 100 -d "$WORK/payload.json" -H "authorization: bearer $JWT" \
        -H "apns-topic: $2" "$PROVIDER/3/device/$3" 2>&1)
    echo "$(echo "$output" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')|$(echo "$output" | grep '^status codes:')"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

TARGET=$(install_app com.example.bench.device)
REF=$(flood "$PUSHES" com.example.bench "$TOKEN")
C0=$(cpu_ticks "$REAL_PID")
if [ -n "${BENCH_PERF:-}" ]; then
    perf record -g -p "$REAL_PID" -o "$BENCH_PERF" > /dev/null 2>&1 &
    PERF_PID=$!
fi
FIRST=$(flood "$PUSHES" com.example.bench.device "$TARGET")
C1=$(cpu_ticks "$REAL_PID")
[ -n "${PERF_PID:-}" ] && kill -INT "$PERF_PID" && wait "$PERF_PID" || true

# 5,000 kept: 49 more apps, each with a full Notification Center (100), beside the target's 100.
for k in $(seq 1 49); do
    token=$(install_app "com.example.bench.fill$k")
    h2load -n 100 -c 1 -m 50 -d "$WORK/payload.json" -H "authorization: bearer $JWT" \
        -H "apns-topic: com.example.bench.fill$k" "$PROVIDER/3/device/$token" >/dev/null 2>&1
done
KEPT=$(curl -sf "$API/apps" | python3 -c 'import json,sys; print(sum(a["delivered"] for a in json.load(sys.stdin)))')
C2=$(cpu_ticks "$REAL_PID")
SECOND=$(flood "$PUSHES" com.example.bench.device "$TARGET")
C3=$(cpu_ticks "$REAL_PID")

R=${REF%%|*}; A=${FIRST%%|*}; B=${SECOND%%|*}
echo "reference (gateway → herald test-device): $R pushes/s (${REF#*|})"
echo "herald device, fresh:                     $A pushes/s (${FIRST#*|})"
echo "herald device, $KEPT kept before:         $B pushes/s (${SECOND#*|})"
python3 -c "
r, a, b, n, tick = float('$R'), float('$A'), float('$B'), $PUSHES, $(getconf CLK_TCK)
print(f'device / reference: {a / r * 100:.1f}% fresh, {b / r * 100:.1f}% with $KEPT kept')
print(f'with $KEPT kept / fresh: {b / a * 100:.1f}%')
print(f'device CPU per push: {($C1 - $C0) / tick / n * 1e6:.0f} us fresh, {($C3 - $C2) / tick / n * 1e6:.0f} us with $KEPT kept')"
echo "lines the device printed: $(wc -l < "$WORK/real.out")"
