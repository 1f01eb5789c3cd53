#!/usr/bin/env bash
# What a push costs on PostgreSQL (statements and WAL bytes), and what crossing between two nodes
# costs, beside one gateway on SQLite.
#
#   scripts/bench-cluster.sh [--pushes N]      (default 20000 pushes per run)
#
# Needs h2load (nghttp2-client) and Debian's postgresql (installed here if missing; a private server
# in a temporary directory, no system service). Builds herald in release unless HERALD names a
# binary. What each run measures is described in scripts/lib/bench_cluster.py.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v h2load >/dev/null || missing+=(nghttp2-client)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ -z "${HERALD:-}" ]; then
    swift build -c release --product herald >/dev/null
    HERALD="$(swift build -c release --show-bin-path)/herald"
fi
exec /usr/bin/python3 scripts/lib/bench_cluster.py "$HERALD" "$@"
