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

source scripts/lib/bench-gateway.sh
bench_setup h2load:nghttp2-client curl:curl -- --binary-port 0 --feedback-port 0
BINARY=$(json "$WORK/gw/gateway.json" binaryAddress)
curl -sf -X POST "$ADMIN/apps/com.example.bench/certificates" -H "$AUTH" -d '{"environments":["development"]}' \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); open(sys.argv[1],"w").write(d["certificate"]); open(sys.argv[2],"w").write(d["privateKey"])' \
        "$WORK/cert.pem" "$WORK/key.pem"

# One line per notification (the payload is the 200-byte one of scripts/bench-provider-api.sh).
python3 -c 'import sys; open(sys.argv[1], "w").write((sys.argv[2] + "\n") * int(sys.argv[3]))' \
    "$WORK/tokens.txt" "$TOKEN" "$COUNT"

"$HERALD" push --binary --binary-address "$BINARY" --cert "$WORK/cert.pem" --cert-key "$WORK/key.pem" \
    --ca "$WORK/gw/ca.pem" --tokens "$WORK/tokens.txt" --payload "$WORK/payload.json" --up /dev/null --json \
    > "$WORK/binary.json"
BINARY_RATE=$(json "$WORK/binary.json" perSecond)
FAILED=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["failures"]))' "$WORK/binary.json")
CONNECTIONS=$(json "$WORK/binary.json" connections)

bench_h2load_one_connection "$COUNT"

echo "binary interface: $BINARY_RATE notifications/s ($COUNT on $CONNECTIONS connection(s), $FAILED refused)"
echo "HTTP/2 API:       $H2_RATE req/s (one connection, 100 streams; $H2_CODES)"
python3 -c "import sys; b,h=float(sys.argv[1]),float(sys.argv[2]); print(f'ratio binary/HTTP2: {b/h:.2f}; binary vs Apple\'s 9,000/s guidance: {b/9000:.1f}x')" "$BINARY_RATE" "$H2_RATE"
