#!/usr/bin/env bash
# Legacy binary interface throughput: notifications per second on one TLS connection, release build,
# with everything on (certificate, parsing, validation, routing, link QoS, delivery to one connected
# test device that acknowledges every push). The same run measures the HTTP/2 provider API on one
# connection (h2load -c 1 -m 100) against the same gateway and device, and compares both with
# Apple's old guidance that a binary provider below about 9,000 notifications/s had a problem.
#
#   scripts/bench-binary.sh [notifications]      (default 100000)
#
# Needs h2load (Debian: nghttp2-client) and curl; installs them with apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-100000}

need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

swift build -c release --product herald >/dev/null
HERALD="$(swift build -c release --show-bin-path)/herald"

WORK=$(mktemp -d)
cleanup() {
    [ -n "${DEV_PID:-}" ] && kill "$DEV_PID" 2>/dev/null && wait "$DEV_PID" 2>/dev/null || true
    [ -n "${GW_PID:-}" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$HERALD" gateway --state "$WORK/gw" --port 0 --dev-port 0 --admin-port 0 --link-port 0 --binary-port 0 \
    --feedback-port 0 --log-level warning > "$WORK/gw.out" 2>&1 &
GW_PID=$!
until grep -q "herald gateway ready" "$WORK/gw.out" 2>/dev/null; do
    kill -0 "$GW_PID" 2>/dev/null || { cat "$WORK/gw.out"; exit 1; }
    sleep 0.1
done
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
ADMIN=$(json "$WORK/gw/gateway.json" adminURL)
PROVIDER=$(json "$WORK/gw/gateway.json" providerURL)
BINARY=$(json "$WORK/gw/gateway.json" binaryAddress)
AUTH="authorization: Bearer $(json "$WORK/gw/gateway.json" adminToken)"
"$HERALD" keys new --state "$WORK/gw" --team BENCH12345 --key-id BENCHKEY01 --out "$WORK/key.p8" >/dev/null
curl -sf -X POST "$ADMIN/apps" -H "$AUTH" -d '{"bundleID":"com.example.bench","teamID":"BENCH12345"}' >/dev/null
curl -sf -X POST "$ADMIN/apps/com.example.bench/certificates" -H "$AUTH" -d '{"environments":["development"]}' \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); open(sys.argv[1],"w").write(d["certificate"]); open(sys.argv[2],"w").write(d["privateKey"])' \
        "$WORK/cert.pem" "$WORK/key.pem"
"$HERALD" test-device --gateway-state "$WORK/gw" --identity "$WORK/device.json" --device-id bench-device \
    --topic com.example.bench --quiet --json > "$WORK/device.out" 2>&1 &
DEV_PID=$!
until grep -q '"ready"' "$WORK/device.out" 2>/dev/null; do
    kill -0 "$DEV_PID" 2>/dev/null || { cat "$WORK/device.out"; exit 1; }
    sleep 0.1
done
TOKEN=$(head -1 "$WORK/device.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"]["com.example.bench"])')

# The same 200-byte alert payload as scripts/bench-provider-api.sh, and one line per notification.
python3 - "$WORK/payload.json" "$WORK/tokens.txt" "$TOKEN" "$COUNT" <<'PY'
import json, sys
body = {"aps": {"alert": {"title": "Benchmark", "body": ""}, "sound": "default", "badge": 1}}
base = len(json.dumps(body, separators=(",", ":")))
body["aps"]["alert"]["body"] = "x" * (200 - base)
open(sys.argv[1], "w").write(json.dumps(body, separators=(",", ":")))
open(sys.argv[2], "w").write((sys.argv[3] + "\n") * int(sys.argv[4]))
PY

"$HERALD" push --binary --binary-address "$BINARY" --cert "$WORK/cert.pem" --cert-key "$WORK/key.pem" \
    --ca "$WORK/gw/ca.pem" --tokens "$WORK/tokens.txt" --payload "$WORK/payload.json" --up /dev/null --json \
    > "$WORK/binary.json"
BINARY_RATE=$(json "$WORK/binary.json" perSecond)
FAILED=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["failures"]))' "$WORK/binary.json")
CONNECTIONS=$(json "$WORK/binary.json" connections)

JWT=$("$HERALD" keys token --p8 "$WORK/key.p8" --key-id BENCHKEY01 --team BENCH12345)
H2=$(h2load -n "$COUNT" -c 1 -m 100 -d "$WORK/payload.json" -H "authorization: bearer $JWT" \
    -H "apns-topic: com.example.bench" "$PROVIDER/3/device/$TOKEN" 2>&1)
H2_RATE=$(echo "$H2" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
H2_CODES=$(echo "$H2" | grep '^status codes:')

echo "binary interface: $BINARY_RATE notifications/s ($COUNT on $CONNECTIONS connection(s), $FAILED refused)"
echo "HTTP/2 API:       $H2_RATE req/s (one connection, 100 streams; $H2_CODES)"
python3 -c "import sys; b,h=float(sys.argv[1]),float(sys.argv[2]); print(f'ratio binary/HTTP2: {b/h:.2f}; binary vs Apple\'s 9,000/s guidance: {b/9000:.1f}x')" "$BINARY_RATE" "$H2_RATE"
