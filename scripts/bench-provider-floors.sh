#!/usr/bin/env bash
# Where the provider path's time goes: scripts/bench-provider-api.sh (h2load -c 4 -m 100 against
# the gateway, then nginx, same run) with the gateway stopping at a series of floors, each a
# complete HTTP/2 exchange answered 200:
#
#   transport  the request read whole (TLS, HTTP/2, HPACK, the gateway's header check), then 200
#              with a new apns-id: nothing of the provider API
#   api        also the provider API's work (JWT check, topic, token, payload scan, warnings), then 200:
#              nothing routed, delivered, logged or counted
#   no-insert  the whole path (routed, delivered to the test device, acknowledged, counted, group
#              committed) except the delivery-log rows' INSERT
#   no-log     the whole path except the delivery-log line of a delivered push
#   full       the gateway as it ships
#
# The floors are a patch (scripts/lib/provider-floors.patch: an environment variable read by the
# gateway, HERALD_BENCH_FLOOR) applied to a worktree of HEAD in .build-floors/, built in release
# there; the gateway that ships has no such switch. The committed HEAD is measured, not the work
# tree's changes.
#
#   scripts/bench-provider-floors.sh [requests] [rounds]      (defaults 200000, 1)
#
# Needs what scripts/bench-provider-api.sh needs (h2load, nginx, curl), and git. Prints a line per
# floor and round: the gateway's rate, nginx's in the same run, the ratio, CPU per request.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-200000}
ROUNDS=${2:-1}
SCRATCH=.build-floors
TREE=$SCRATCH/source

remove_tree() {
    git worktree remove --force "$TREE" 2>/dev/null || rm -rf "$TREE"
    git worktree prune
}
remove_tree
mkdir -p "$SCRATCH"
trap remove_tree EXIT
git worktree add --detach "$TREE" HEAD >/dev/null
git -C "$TREE" apply "$PWD/scripts/lib/provider-floors.patch" || {
    echo "bench-provider-floors: scripts/lib/provider-floors.patch no longer applies to HEAD; make it again" >&2
    exit 1
}
echo "bench-provider-floors: building the floors' gateway in release (.build-floors/build)" >&2
swift build -c release --product herald --package-path "$TREE" --scratch-path "$SCRATCH/build" \
    > "$SCRATCH/build.log" 2>&1 || { tail -30 "$SCRATCH/build.log" >&2; exit 1; }
BINARY="$PWD/$SCRATCH/build/release/herald"

for round in $(seq 1 "$ROUNDS"); do
    for floor in transport api no-insert no-log full; do
        out=$(HERALD_BENCH_FLOOR=$floor HERALD="$BINARY" bash scripts/bench-provider-api.sh "$REQUESTS" 2>&1) || {
            echo "$out" >&2
            exit 1
        }
        rate=$(echo "$out" | sed -n 's/^herald gateway: \([0-9.]*\) req.*/\1/p')
        nginx=$(echo "$out" | sed -n 's/^nginx: *\([0-9.]*\) req.*/\1/p')
        ratio=$(echo "$out" | sed -n 's/^ratio herald\/nginx: \(.*\)/\1/p')
        cpu=$(echo "$out" | sed -n 's/^CPU per request: \(.*\)/\1/p')
        codes=$(echo "$out" | sed -n 's/^herald gateway: .*(status codes: \([0-9]*\) 2xx.*/\1/p')
        acked=$(echo "$out" | sed -n 's/^delivered to the device and acknowledged: \([0-9]*\);.*/\1/p')
        printf 'round %s %-9s herald %8.0f req/s, nginx %8.0f req/s, ratio %6s; %s; %s of %s answered 200, %s acknowledged by the device\n' \
            "$round" "$floor" "$rate" "$nginx" "$ratio" "$cpu" "$codes" "$REQUESTS" "${acked:-0}"
    done
done
