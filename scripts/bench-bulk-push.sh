#!/usr/bin/env bash
# Bulk sends: `herald push --tokens-file` (HeraldProvider's client: AsyncHTTPClient, one HTTP/2
# connection, --concurrency 100 streams) against h2load on one connection with 100 streams, the same
# requests to the same gateway in the same run, release build. Every push goes to one connected test
# device that acknowledges it, so both measure the client plus the whole delivery path; the ratio says
# how much of the gateway's pace the provider client reaches.
#
#   scripts/bench-bulk-push.sh [pushes]      (default 20000)
#
# Needs h2load (Debian: nghttp2-client) and curl; installs them with apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-20000}

source scripts/lib/bench-gateway.sh
bench_setup h2load:nghttp2-client curl:curl --

python3 -c 'import sys; open(sys.argv[1], "w").write((sys.argv[2] + "\n") * int(sys.argv[3]))' \
    "$WORK/tokens.txt" "$TOKEN" "$COUNT"

"$HERALD" push --url "$PROVIDER" --ca "$WORK/gw/ca.pem" --p8 "$WORK/key.p8" --key-id BENCHKEY01 --team BENCH12345 \
    --topic com.example.bench --tokens-file "$WORK/tokens.txt" --payload "$WORK/payload.json" --up /dev/null \
    --concurrency 100 --json > "$WORK/bulk.json" || true
BULK_RATE=$(json "$WORK/bulk.json" perSecond)
BULK_RESULTS=$(json "$WORK/bulk.json" results)

bench_h2load_one_connection "$COUNT"

echo "herald push --tokens-file: $BULK_RATE pushes/s ($COUNT, one connection, 100 streams; $BULK_RESULTS)"
echo "h2load:                    $H2_RATE req/s (one connection, 100 streams; $H2_CODES)"
python3 -c "import sys; b,h=float(sys.argv[1]),float(sys.argv[2]); print(f'ratio herald push/h2load: {b/h:.2f}')" \
    "$BULK_RATE" "$H2_RATE"
