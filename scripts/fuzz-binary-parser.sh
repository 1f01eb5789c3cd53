#!/usr/bin/env bash
# Fuzzes the legacy binary frame parser with libFuzzer (swiftc -sanitize=fuzzer,address).
# Usage: scripts/fuzz-binary-parser.sh [seconds]   (default 600)
# Builds Fuzz/LegacyBinaryFuzz.swift with HeraldCore's codec into .build/fuzz/, seeds a corpus with
# one notification of each command and a few refusals, and runs until the time is up or a check
# fails. libFuzzer prints its statistics; the last line says how it ended.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-600}"
OUT=.build/fuzz
mkdir -p "$OUT/corpus"
swiftc -sanitize=fuzzer,address -parse-as-library -O \
    Sources/HeraldCore/LegacyBinary.swift Sources/HeraldCore/APNsReason.swift Fuzz/LegacyBinaryFuzz.swift \
    -o "$OUT/fuzz-legacy-binary" 2> >(grep -v "Cannot export local symbol" >&2)
python3 - "$OUT/corpus" <<'PY'
import struct, sys, os
d = sys.argv[1]
token = bytes(range(32))
payload = b'{"aps":{"alert":"hi"}}'
def item(i, data): return struct.pack(">BH", i, len(data)) + data
seeds = {
    "simple": struct.pack(">BH", 0, 32) + token + struct.pack(">H", len(payload)) + payload,
    "enhanced": struct.pack(">BIIH", 1, 7, 0, 32) + token + struct.pack(">H", len(payload)) + payload,
}
items = item(1, token) + item(2, payload) + item(3, struct.pack(">I", 9)) + item(4, struct.pack(">I", 0)) + item(5, b"\x0a")
seeds["frame"] = struct.pack(">BI", 2, len(items)) + items
seeds["two-frames"] = seeds["frame"] * 2
seeds["bad-token"] = struct.pack(">BH", 0, 3) + b"abc" + struct.pack(">H", 2) + b"{}"
seeds["unknown-item"] = struct.pack(">BI", 2, 4) + item(9, b"x")
for name, data in seeds.items():
    open(os.path.join(d, name), "wb").write(data)
PY
"$OUT/fuzz-legacy-binary" "$OUT/corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=140000 -print_final_stats=1 \
    -artifact_prefix="$OUT/"
echo "fuzz-binary-parser: $SECONDS_TO_RUN s without a failed check or crash"
