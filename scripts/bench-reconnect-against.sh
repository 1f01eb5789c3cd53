#!/usr/bin/env bash
# The one-node reconnect storm of this tree against an earlier commit's, alternating round by round
# in one run, and the ratio of CPU per reconnection on the gateway and on the test devices (what is
# measured: scripts/lib/bench_reconnect_against.py). BENCHMARKS.md, "Reconnect storm".
#
#   scripts/bench-reconnect-against.sh REV [N] [ROUNDS]     (defaults 18000 devices, 3 rounds)
#
# REV must have scripts/bench-reconnect.sh (7ba008a, the code before resumption tickets, is the
# reference issue 35 names). Its tree is checked out as a worktree in .build/against/REV and built in
# release there (about ten minutes the first time), unless AGAINST_TREE names a checkout of REV and
# AGAINST_HERALD its binary. This tree's herald is built in release unless HERALD names a binary.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
    echo "usage: scripts/bench-reconnect-against.sh REV [N] [ROUNDS]" >&2
    exit 2
fi
REV="$1"
N="${2:-18000}"
ROUNDS="${3:-3}"
git rev-parse --verify --quiet "$REV^{commit}" >/dev/null || { echo "bench-reconnect-against: no commit $REV" >&2; exit 2; }
git cat-file -e "$REV:scripts/bench-reconnect.sh" 2>/dev/null \
    || { echo "bench-reconnect-against: $REV has no scripts/bench-reconnect.sh" >&2; exit 2; }
TREE="${AGAINST_TREE:-}"
if [ -z "$TREE" ]; then
    TREE=".build/against/$(git rev-parse --short "$REV")"
    if [ ! -d "$TREE" ]; then
        git worktree prune
        git worktree add --detach "$TREE" "$REV" >&2
    fi
fi
TREE="$(cd "$TREE" && pwd)"
if [ -z "${AGAINST_HERALD:-}" ]; then
    (cd "$TREE" && swift build -c release --product herald >&2)
    AGAINST_HERALD="$(cd "$TREE" && swift build -c release --show-bin-path)/herald"
fi
if [ -z "${HERALD:-}" ]; then
    swift build -c release --product herald >&2
    HERALD="$(swift build -c release --show-bin-path)/herald"
fi
exec python3 scripts/lib/bench_reconnect_against.py "$TREE" "$AGAINST_HERALD" "$HERALD" "$N" "$ROUNDS"
