#!/usr/bin/env bash
# Bulk sends: `herald push --tokens-file` (HeraldProvider's client: its own HTTP/2 client on
# swift-nio-http2's frames, one connection, --concurrency 100 streams) against h2load on one
# connection with 100 streams, the same requests to the same gateway in the same run, release build.
# Every push goes to one connected test device that acknowledges it, so both measure the client plus
# the whole delivery path; the ratio says how much of the gateway's pace the provider client reaches.
#
#   scripts/bench-bulk-push.sh [pushes]      (default 20000)
#
# With APNSWIFT_BENCH naming a program, it is run third against the same gateway, as
#   $APNSWIFT_BENCH HOST PORT P8 KEY-ID TEAM TOPIC TOKEN COUNT 100
# and must print a line "apnswift: ... N pushes/s". Such a program is a few lines over APNSwift's
# `APNSClient` (`sendAlertNotification` in a task group, 100 in flight), built beside the project;
# neither it nor APNSwift is part of this repository (BENCHMARKS.md says how it was run). APNSwift
# trusts only the system's CA bundle, so it runs in a private mount namespace (`unshare -m`, root)
# that shows it the gateway's CA there.
#
# Needs h2load (Debian: nghttp2-client) and curl; installs them with apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-20000}

source scripts/lib/bench-gateway.sh
bench_setup h2load:nghttp2-client curl:curl --

python3 -c 'import sys; open(sys.argv[1], "w").write((sys.argv[2] + "\n") * int(sys.argv[3]))' \
    "$WORK/tokens.txt" "$TOKEN" "$COUNT"

BULK_TIME=$( { TIMEFORMAT='%U %S'; time "$HERALD" push --url "$PROVIDER" --ca "$WORK/gw/ca.pem" --p8 "$WORK/key.p8" \
    --key-id BENCHKEY01 --team BENCH12345 --topic com.example.bench --tokens-file "$WORK/tokens.txt" \
    --payload "$WORK/payload.json" --up /dev/null --concurrency 100 --json > "$WORK/bulk.json" || true; } 2>&1)
BULK_CPU=$(echo "$BULK_TIME" | tail -1 | awk '{print $1 + $2}')
BULK_RATE=$(json "$WORK/bulk.json" perSecond)
BULK_RESULTS=$(json "$WORK/bulk.json" results)

bench_h2load_one_connection "$COUNT"

APNSWIFT_RATE=
if [ -n "${APNSWIFT_BENCH:-}" ]; then
    HOSTPORT=${PROVIDER#https://}
    APNSWIFT_LINE=$(unshare -m bash -c "mount --bind '$WORK/gw/ca.pem' /etc/ssl/certs/ca-certificates.crt && \
        '$APNSWIFT_BENCH' localhost ${HOSTPORT#*:} '$WORK/key.p8' BENCHKEY01 BENCH12345 com.example.bench '$TOKEN' $COUNT 100" \
        | grep '^apnswift:')
    APNSWIFT_RATE=$(echo "$APNSWIFT_LINE" | sed -n 's/.* \([0-9.]*\) pushes\/s.*/\1/p')
fi

echo "herald push --tokens-file: $BULK_RATE pushes/s ($COUNT, one connection, 100 streams; $BULK_RESULTS)"
echo "h2load:                    $H2_RATE req/s (one connection, 100 streams; $H2_CODES)"
[ -n "$APNSWIFT_RATE" ] && echo "APNSwift:                  $APNSWIFT_RATE pushes/s (${APNSWIFT_LINE#apnswift: })"
python3 -c "import sys; b,h=float(sys.argv[1]),float(sys.argv[2]); print(f'ratio herald push/h2load: {b/h:.2f}')" \
    "$BULK_RATE" "$H2_RATE"
# The clients' own CPU per push: what each takes from the two cores the gateway and the device share
# (herald push's includes its start: reading the key and the tokens file, the TLS handshake).
python3 -c "import sys; c,h,n=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f'client CPU per push: herald push {c/n*1e6:.1f} us, h2load {h/n*1e6:.1f} us')" \
    "$BULK_CPU" "$H2_CPU" "$COUNT"
if [ -n "$APNSWIFT_RATE" ]; then
    python3 -c "import sys; b,a=float(sys.argv[1]),float(sys.argv[2]); print(f'ratio herald push/APNSwift: {b/a:.2f}')" \
        "$BULK_RATE" "$APNSWIFT_RATE"
fi
