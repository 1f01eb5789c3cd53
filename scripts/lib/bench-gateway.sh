# Shared by the gateway benchmarks (scripts/bench-provider-api.sh, scripts/bench-binary.sh,
# scripts/bench-bulk-push.sh); source it.
#
#   bench_setup TOOL:PACKAGE... -- GATEWAY-ARGUMENTS...
#
# Installs the Debian packages of missing tools, builds herald in release (unless HERALD names a
# binary), and starts a gateway in a temporary directory ($WORK, removed on exit) with the extra
# arguments. It then registers team BENCH12345, key BENCHKEY01 ($WORK/key.p8) and app
# com.example.bench, and connects one device with `herald test-device`, which registers the app and
# acknowledges every push. It writes a 200-byte alert
# payload to $WORK/payload.json. Sets HERALD, WORK, ADMIN, PROVIDER, AUTH, TOKEN and JWT. A script
# that starts more processes may define bench_extra_cleanup, which runs first on exit.

json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

bench_cleanup() {
    declare -F bench_extra_cleanup >/dev/null && bench_extra_cleanup
    [ -n "${DEV_PID:-}" ] && kill "$DEV_PID" 2>/dev/null && wait "$DEV_PID" 2>/dev/null || true
    [ -n "${GW_PID:-}" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null || true
    rm -rf "$WORK"
}

bench_setup() {
    local need=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        command -v "${1%%:*}" >/dev/null || need+=("${1#*:}")
        shift
    done
    [ $# -gt 0 ] && shift
    if [ ${#need[@]} -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi

    # HERALD may name another build (an A/B comparison); by default this checkout's, in release.
    if [ -z "${HERALD:-}" ]; then
        swift build -c release --product herald >/dev/null
        HERALD="$(swift build -c release --show-bin-path)/herald"
    fi

    WORK=$(mktemp -d)
    trap bench_cleanup EXIT
    # BENCH_CHANNELS=1: with the channel management listeners (a broadcast benchmark creates channels).
    local channels=(--no-channels)
    [ "${BENCH_CHANNELS:-0}" = 1 ] && channels=(--channels-port 0 --channels-dev-port 0)
    "$HERALD" gateway --state "$WORK/gw" --port 0 --dev-port 0 --admin-port 0 --link-port 0 "${channels[@]}" \
        --log-level warning \
        "$@" > "$WORK/gw.out" 2>&1 &
    GW_PID=$!
    until grep -q "herald gateway ready" "$WORK/gw.out" 2>/dev/null; do
        kill -0 "$GW_PID" 2>/dev/null || { cat "$WORK/gw.out"; exit 1; }
        sleep 0.1
    done
    ADMIN=$(json "$WORK/gw/gateway.json" adminURL)
    PROVIDER=$(json "$WORK/gw/gateway.json" providerURL)
    AUTH="authorization: Bearer $(json "$WORK/gw/gateway.json" adminToken)"
    "$HERALD" keys new --state "$WORK/gw" --team BENCH12345 --key-id BENCHKEY01 --out "$WORK/key.p8" >/dev/null
    curl -sf -X POST "$ADMIN/apps" -H "$AUTH" -d '{"bundleID":"com.example.bench","teamID":"BENCH12345"}' >/dev/null
    # The device: connected over the device link (loopback), acknowledging everything.
    "$HERALD" test-device --gateway-state "$WORK/gw" --identity "$WORK/device.json" --device-id bench-device \
        --topic com.example.bench --quiet --json > "$WORK/device.out" 2>&1 &
    DEV_PID=$!
    until grep -q '"ready"' "$WORK/device.out" 2>/dev/null; do
        kill -0 "$DEV_PID" 2>/dev/null || { cat "$WORK/device.out"; exit 1; }
        sleep 0.1
    done
    TOKEN=$(head -1 "$WORK/device.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"]["com.example.bench"])')
    JWT=$("$HERALD" keys token --p8 "$WORK/key.p8" --key-id BENCHKEY01 --team BENCH12345)

    # A 200-byte alert payload.
    python3 - "$WORK/payload.json" <<'PY'
import json, sys
body = {"aps": {"alert": {"title": "Benchmark", "body": ""}, "sound": "default", "badge": 1}}
base = len(json.dumps(body, separators=(",", ":")))
body["aps"]["alert"]["body"] = "x" * (200 - base)
text = json.dumps(body, separators=(",", ":"))
assert len(text) == 200, len(text)
open(sys.argv[1], "w").write(text)
PY
}

# The provider benchmarks' load: h2load with COUNT of the payload to URL (by default the device's
# token on the gateway) over 4 connections with 100 streams each.
bench_h2load_load() {
    h2load -n "$1" -c 4 -m 100 -d "$WORK/payload.json" -H "authorization: bearer $JWT" \
        -H "apns-topic: com.example.bench" -H "apns-push-type: alert" "${2:-$PROVIDER/3/device/$TOKEN}"
}

# h2load with COUNT of the payload to the device's token on one connection with 100 streams, the
# reference the one-connection benchmarks compare with. Sets H2_RATE (requests a second), H2_CODES and
# H2_CPU (the CPU seconds h2load used, user and system).
bench_h2load_one_connection() {
    local output TIMEFORMAT='%U %S'
    output=$( { time h2load -n "$1" -c 1 -m 100 -d "$WORK/payload.json" -H "authorization: bearer $JWT" \
        -H "apns-topic: com.example.bench" "$PROVIDER/3/device/$TOKEN" > "$WORK/h2load-one.out" 2>&1; } 2>&1)
    H2_CPU=$(echo "$output" | awk '{print $1 + $2}')
    H2_RATE=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$WORK/h2load-one.out")
    H2_CODES=$(grep '^status codes:' "$WORK/h2load-one.out")
}
