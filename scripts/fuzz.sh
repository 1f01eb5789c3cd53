#!/usr/bin/env bash
# Fuzzes every parser that takes bytes from outside, with libFuzzer and AddressSanitizer.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET ...]
#   SECONDS  how long each target runs (default 600)
#   TARGET   any of: payload jwt device-link app-link localization calendar-spec apns-file
#            legacy-binary (default: all of them, one after the other)
#
# Each target (Fuzz/*.swift) checks a property besides "never crashes" (see the comment at its top).
# HeraldCore is compiled once with coverage and AddressSanitizer (swiftc -sanitize=fuzzer,address),
# against swift-crypto from the package's own debug build (`swift build --target HeraldCore`, run
# here if needed), which every target links; the JWT target also compiles the gateway's
# Provider/ProviderToken.swift. Corpora start
# from the small seeds committed in Fuzz/corpus/<target> and grow in .build/fuzz/corpus/<target>; a
# failing input is written to .build/fuzz/<target>-crash-*. One line per target at the end says
# how many inputs ran and whether it failed; the script exits non-zero if any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-600}"
shift || true
ALL=(payload jwt device-link app-link localization calendar-spec apns-file legacy-binary)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
OUT=.build/fuzz
MOD="$OUT/modules"
mkdir -p "$OUT" "$MOD"

quiet() { grep -v "Cannot export local symbol" >&2 || true; }

# swift-crypto, from the package's debug build (HeraldCore signs provider tokens and checks link
# tickets with it): the code under test is ours, not BoringSSL's, so it is linked uninstrumented.
[ -f .build/debug/Modules/Crypto.swiftmodule ] || swift build --target HeraldCore >/dev/null
CRYPTO=(-I .build/debug/Modules)
while IFS= read -r object; do CRYPTO+=("$object"); done < <(
    find .build/debug/Crypto.build .build/debug/CryptoBoringWrapper.build \
        .build/debug/CCryptoBoringSSL.build .build/debug/CCryptoBoringSSLShims.build .build/debug/CXKCP.build \
        .build/debug/CXKCPShims.build -name '*.o' | sort)
CRYPTO+=(-lstdc++)

# HeraldCore, instrumented, as a module the targets import.
CORE_SOURCES=(Sources/HeraldCore/*.swift)
if [ ! -f "$OUT/HeraldCore.o" ] || [ -n "$(find Sources/HeraldCore -newer "$OUT/HeraldCore.o" -name '*.swift')" ]; then
    echo "fuzz: compiling HeraldCore with coverage and AddressSanitizer"
    swiftc -sanitize=fuzzer,address -parse-as-library -O -wmo -module-name HeraldCore -package-name herald -I .build/debug/Modules \
        -emit-module -emit-module-path "$MOD/HeraldCore.swiftmodule" \
        -c "${CORE_SOURCES[@]}" -o "$OUT/HeraldCore.o" 2> >(quiet)
fi

source_of() {
    case "$1" in
    payload) echo Fuzz/PayloadFuzz.swift ;;
    jwt) echo Fuzz/JWTFuzz.swift ;;
    device-link) echo Fuzz/DeviceLinkFuzz.swift ;;
    app-link) echo Fuzz/AppLinkFuzz.swift ;;
    localization) echo Fuzz/LocalizationFuzz.swift ;;
    calendar-spec) echo Fuzz/CalendarSpecFuzz.swift ;;
    apns-file) echo Fuzz/ApnsFileFuzz.swift ;;
    legacy-binary) echo Fuzz/LegacyBinaryFuzz.swift ;;
    *) echo "unknown fuzz target '$1' (known: ${ALL[*]})" >&2; return 1 ;;
    esac
}

build() {
    local target=$1 source
    source=$(source_of "$target")
    local extra=()
    # The JWT target also compiles the gateway's token reader.
    [ "$target" = jwt ] && extra=(Sources/HeraldGateway/Provider/ProviderToken.swift)
    swiftc -sanitize=fuzzer,address -parse-as-library -O -package-name herald -I "$MOD" \
        "$source" Fuzz/FuzzSupport.swift "${extra[@]}" "$OUT/HeraldCore.o" "${CRYPTO[@]}" -o "$OUT/fuzz-$target" \
        2> >(quiet)
}

failed=()
summary=()
for target in "${TARGETS[@]}"; do
    source_of "$target" >/dev/null
    echo "fuzz: building $target"
    build "$target"
    corpus="$OUT/corpus/$target"
    mkdir -p "$corpus"
    seeds=()
    [ -d "Fuzz/corpus/$target" ] && seeds=("Fuzz/corpus/$target")
    log="$OUT/$target.log"
    echo "fuzz: running $target for $SECONDS_EACH s"
    set +e
    SWIFT_BACKTRACE=enable=no "$OUT/fuzz-$target" "$corpus" "${seeds[@]}" -max_total_time="$SECONDS_EACH" -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$OUT/$target-" >"$log" 2>&1
    status=$?
    set -e
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
    corpus_size=$(find "$corpus" -type f | wc -l)
    if [ $status -eq 0 ]; then
        summary+=("$target: $runs inputs in $SECONDS_EACH s, corpus $corpus_size, crashes 0")
    else
        failed+=("$target")
        summary+=("$target: FAILED after $runs inputs (exit $status); see $log and $OUT/$target-crash-*")
        tail -30 "$log" >&2
    fi
done
printf 'fuzz: %s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
