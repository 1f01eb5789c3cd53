#!/usr/bin/env bash
# What a device's failed reconnection attempts cost it: N idle devices (`herald test-device
# --idle-devices N --reconnect`) on a gateway that is then killed; the test device's CPU over the
# next 20 s, while every device's attempts are refused and it backs off (0.5 s doubling, each wait
# 50-100% of that: about five attempts each in 20 s).
#
#   scripts/bench-refused.sh [N]        N idle devices (default 3000)
#
# Builds herald in release unless HERALD names a binary. With HERALD_REFERENCE naming another
# binary, both are measured twice, interleaved, and the ratio of their CPU is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-3000}"
if [ -z "${HERALD:-}" ]; then
    swift build -c release --product herald >/dev/null
    HERALD="$(swift build -c release --show-bin-path)/herald"
fi
ulimit -n "$(ulimit -Hn)"
work="$(mktemp -d /tmp/herald-refused-XXXXXX)"
trap 'pkill -KILL -f "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

# One measurement: prints the test device's CPU in seconds over the 20 s after the gateway dies.
measure() {
    local herald="$1" state="$work/gw-$RANDOM" port
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$herald" gateway --state "$state" --port 0 --dev-port 0 --admin-port 0 --link-port "$port" --no-legacy \
        --no-channels --log-level warning >"$state.out" 2>"$state.log" &
    local gateway=$!
    until grep -q "herald gateway ready" "$state.out" 2>/dev/null; do
        kill -0 "$gateway" 2>/dev/null || { echo "the gateway did not start: $state.log" >&2; exit 1; }
        sleep 0.1
    done
    local admin token
    admin="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["adminURL"])' "$state/gateway.json")"
    token="$(cat "$state/admin-token")"
    curl -sf -X POST "$admin/teams" -H "authorization: Bearer $token" -d '{"id":"REFUSED123","name":"bench"}' >/dev/null
    curl -sf -X POST "$admin/apps" -H "authorization: Bearer $token" \
        -d '{"bundleID":"com.example.refused","teamID":"REFUSED123"}' >/dev/null
    local sources=()
    for k in 1 2 3 4; do sources+=(--idle-source "127.9.9.$k"); done
    "$herald" test-device --gateway "ws://127.0.0.1:$port/device/v1" --identity "$state/device.json" \
        --topic com.example.refused --idle-devices "$N" --reconnect --json "${sources[@]}" >"$state.device" 2>&1 &
    local device=$!
    until grep -q '"event":"ready"' "$state.device" 2>/dev/null; do
        kill -0 "$device" 2>/dev/null || { echo "the test device did not start: $state.device" >&2; exit 1; }
        sleep 0.1
    done
    local ticks=$(($(getconf CLK_TCK))) before after
    before=$(awk '{print $14 + $15}' "/proc/$device/stat")
    kill -KILL "$gateway"
    sleep 20  # the interval measured: the devices' attempts meanwhile are what is counted
    after=$(awk '{print $14 + $15}' "/proc/$device/stat")
    kill "$device"
    wait "$device" 2>/dev/null || true
    python3 -c "print(f'{($after - $before) / $ticks:.2f}')"
}

if [ -n "${HERALD_REFERENCE:-}" ]; then
    results=()
    for round in 1 2; do
        for binary in "$HERALD" "$HERALD_REFERENCE"; do
            cpu="$(measure "$binary")"
            echo "bench-refused: $binary: $N devices used $cpu s of CPU in the 20 s after their gateway died"
            results+=("$cpu")
        done
    done
    python3 -c "
a, b, c, d = (float(x) for x in '${results[*]}'.split())
print(f'bench-refused: {(a + c) / (b + d):.2f} of the reference\'s CPU')"
else
    cpu="$(measure "$HERALD")"
    echo "bench-refused: $N devices used $cpu s of CPU in the 20 s after their gateway died"
fi
