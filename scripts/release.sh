#!/usr/bin/env bash
# Builds a release of herald and writes to dist/ (or --out DIR):
#
#   herald-VERSION-linux-ARCH.tar.gz   the binary (Swift's runtime linked in, stripped), the systemd
#                                      units, an example configuration, the licences, a README for
#                                      operators, shell completions and the manual
#   herald_VERSION_DEBARCH.deb         the same as a Debian package made with dpkg-deb: /usr/bin/herald,
#                                      herald-gateway.service and .socket (system, the socket not
#                                      enabled) and herald-device.service (user),
#                                      /etc/herald/gateway.toml as a conffile, the herald account, and
#                                      the libraries the binary needs as Depends (dpkg-shlibdeps)
#   SHA256SUMS                         of both
#
#   scripts/release.sh VERSION [--binary PATH [--allow-dynamic-runtime]] [--out DIR]
#
# VERSION is 1.2.0 or 1.2.0~rc1. The binary is built with `swift build -c release --static-swift-stdlib`
# after writing VERSION and the commit into Sources/herald/BuildInfo.swift (put back afterwards), so
# `herald --version` says both. --binary packages an existing binary instead; one that loads Swift's
# runtime from the toolchain (a plain `swift build`) runs only where that toolchain is, so it is
# refused unless --allow-dynamic-runtime says the packages are for this machine (the tests package
# the debug build so). The systemd units are checked with `systemd-analyze verify` (systemd does not need to
# run). Needs dpkg-dev, systemd (for systemd-analyze), binutils (strip) and git; on Debian:
#   apt-get install dpkg-dev systemd binutils
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

die() { echo "release: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: scripts/release.sh VERSION [--binary PATH] [--out DIR]"
VERSION=$1
shift
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([~+][0-9A-Za-z.]+)?$ ]] \
    || die "VERSION must look like 1.2.0 or 1.2.0~rc1, not '$VERSION'"
BINARY=
OUT=dist
DYNAMIC=no
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) BINARY=${2:?--binary needs a path}; shift 2 ;;
        --allow-dynamic-runtime) DYNAMIC=yes; shift ;;
        --out) OUT=${2:?--out needs a directory}; shift 2 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
for tool in dpkg-deb dpkg-shlibdeps dpkg systemd-analyze strip readelf gzip sha256sum tar; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install dpkg-dev systemd binutils)"
done

COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$COMMIT" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then COMMIT="$COMMIT-dirty"; fi
ARCH=$(uname -m)
DEB_ARCH=$(dpkg --print-architecture)
WORK=$(mktemp -d)
INFO=Sources/herald/BuildInfo.swift
cleanup() {
    [ -f "$WORK/BuildInfo.swift" ] && cp "$WORK/BuildInfo.swift" "$INFO"
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "$BINARY" ]; then
    # The version and the commit go into the binary; the file is put back however the build ends.
    cp "$INFO" "$WORK/BuildInfo.swift"
    sed -i -e "s|static let version = \".*\"|static let version = \"$VERSION\"|" \
        -e "s|static let commit = \".*\"|static let commit = \"$COMMIT\"|" "$INFO"
    swift build -c release --product herald --static-swift-stdlib
    BINARY="$(swift build -c release --static-swift-stdlib --show-bin-path)/herald"
    cp "$WORK/BuildInfo.swift" "$INFO"
    rm "$WORK/BuildInfo.swift"
fi
[ -x "$BINARY" ] || die "$BINARY is not an executable"
RUNTIME=$(readelf -d "$BINARY" | sed -n 's/.*NEEDED.*\[\(lib\(swift\|Foundation\|dispatch\|BlocksRuntime\|_Foundation\)[^]]*\)\].*/\1/p' | tr '\n' ' ')
if [ -n "$RUNTIME" ] && [ "$DYNAMIC" != yes ]; then
    die "$BINARY loads Swift's runtime from the toolchain ($RUNTIME); build with --static-swift-stdlib, or give --allow-dynamic-runtime for packages used on this machine only"
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The archive's tree.
NAME="herald-$VERSION-linux-$ARCH"
A="$WORK/$NAME"
mkdir -p "$A/bin" "$A/systemd" "$A/completions" "$A/man"
strip -o "$A/bin/herald" "$BINARY"
"$A/bin/herald" --version >/dev/null || die "the stripped binary does not run"
cp packaging/systemd/herald-gateway.service packaging/systemd/herald-gateway.socket \
    packaging/systemd/herald-device.service "$A/systemd/"
cp packaging/gateway.toml "$A/gateway.toml"
cp LICENSE "$A/LICENSE"
sed "s|@VERSION@|$VERSION|g" packaging/README.md > "$A/README.md"
"$A/bin/herald" --generate-completion-script bash > "$A/completions/herald.bash"
"$A/bin/herald" --generate-completion-script zsh > "$A/completions/_herald"
"$A/bin/herald" --generate-completion-script fish > "$A/completions/herald.fish"
sed "s|^\.Dd .*|.Dd $(date -u '+%B %-d, %Y')|; s|^\.Os.*|.Os herald $VERSION|" packaging/herald.1 > "$A/man/herald.1"
# The licences of the Swift packages herald is built with, as resolved by the build (no `swift
# package resolve` here: under `swift test` it would wait for the build's lock).
compgen -G ".build/checkouts/*/" >/dev/null || die "no resolved packages in .build/checkouts: build herald here first"
{
    echo "herald $VERSION is built with these Swift packages; their licences follow."
    for dir in .build/checkouts/*/; do
        for file in "$dir"LICENSE* "$dir"NOTICE*; do
            [ -f "$file" ] || continue
            printf '\n==== %s: %s ====\n\n' "$(basename "$dir")" "$(basename "$file")"
            cat "$file"
        done
    done
} > "$A/THIRD-PARTY-LICENSES"
grep -q "==== " "$A/THIRD-PARTY-LICENSES" || die "no package licences found in .build/checkouts"

# Everything owned by root and dated by the commit, so that the archive depends on its contents only.
EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf - "$NAME" \
    | gzip -9n > "$OUT/$NAME.tar.gz"

# The Debian package's tree.
D="$WORK/deb"
install -D -m 755 "$A/bin/herald" "$D/usr/bin/herald"
install -D -m 644 packaging/systemd/herald-gateway.service "$D/lib/systemd/system/herald-gateway.service"
install -D -m 644 packaging/systemd/herald-gateway.socket "$D/lib/systemd/system/herald-gateway.socket"
install -D -m 644 packaging/systemd/herald-device.service "$D/usr/lib/systemd/user/herald-device.service"
install -D -m 644 packaging/gateway.toml "$D/etc/herald/gateway.toml"
install -D -m 644 "$A/completions/herald.bash" "$D/usr/share/bash-completion/completions/herald"
install -D -m 644 "$A/completions/_herald" "$D/usr/share/zsh/vendor-completions/_herald"
install -D -m 644 "$A/completions/herald.fish" "$D/usr/share/fish/vendor_completions.d/herald.fish"
install -d "$D/usr/share/man/man1" "$D/usr/share/doc/herald"
gzip -9n < "$A/man/herald.1" > "$D/usr/share/man/man1/herald.1.gz"
install -m 644 "$A/README.md" "$A/THIRD-PARTY-LICENSES" "$D/usr/share/doc/herald/"
{
    cat packaging/debian/copyright.in
    sed -e 's/^$/./' -e 's/^/ /' LICENSE
} > "$D/usr/share/doc/herald/copyright"
printf 'herald (%s) stable; urgency=medium\n\n  * Release %s (commit %s).\n\n -- Herald maintainers <maintainers@herald.invalid>  %s\n' \
    "$VERSION" "$VERSION" "$COMMIT" "$(date -u -R -d "@$EPOCH")" | gzip -9n > "$D/usr/share/doc/herald/changelog.gz"
install -d "$D/DEBIAN"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$D/DEBIAN/"
echo /etc/herald/gateway.toml > "$D/DEBIAN/conffiles"
# The libraries the binary needs, read from it by Debian's own tool.
mkdir -p "$WORK/src/debian"
printf 'Source: herald\n\nPackage: herald\nArchitecture: any\n' > "$WORK/src/debian/control"
SHLIBS=$(cd "$WORK/src" && dpkg-shlibdeps -O "-e$D/usr/bin/herald" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$SHLIBS" ] || die "dpkg-shlibdeps found no libraries for the binary"
SIZE=$(du -sk --exclude=DEBIAN "$D" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$DEB_ARCH|" -e "s|@SIZE@|$SIZE|" -e "s|@DEPENDS@|$SHLIBS|" \
    packaging/debian/control.in > "$D/DEBIAN/control"
DEB="herald_${VERSION}_${DEB_ARCH}.deb"
SOURCE_DATE_EPOCH=$EPOCH dpkg-deb --root-owner-group -Zxz -z6 --build "$D" "$OUT/$DEB" >/dev/null

# The units, as systemd reads them: the ExecStart binary and the manual page must exist, so the
# check runs on copies that name the packaged binary, with the packaged manual on MANPATH.
V="$WORK/verify"
mkdir -p "$V/man/man1" "$V/runtime"
chmod 700 "$V/runtime"
cp "$D/usr/share/man/man1/herald.1.gz" "$V/man/man1/"
for unit in herald-gateway herald-device; do
    sed "s|/usr/bin/herald|$D/usr/bin/herald|g" "packaging/systemd/$unit.service" > "$V/$unit.service"
done
cp packaging/systemd/herald-gateway.socket "$V/"
check() {
    local said
    said=$("$@" 2>&1) || die "systemd-analyze refused a unit: $said"
    [ -z "$said" ] || die "systemd-analyze warned about a unit: $said"
}
check env MANPATH="$V/man" systemd-analyze verify "$V/herald-gateway.service"
check env MANPATH="$V/man" systemd-analyze verify "$V/herald-gateway.socket"
check env MANPATH="$V/man" XDG_RUNTIME_DIR="$V/runtime" systemd-analyze verify --user "$V/herald-device.service"

(cd "$OUT" && sha256sum "$NAME.tar.gz" "$DEB" > SHA256SUMS)
echo "release: herald $("$A/bin/herald" --version) for $ARCH"
echo "release: $OUT/$NAME.tar.gz"
echo "release: $OUT/$DEB (Depends: $SHLIBS, adduser)"
echo "release: $OUT/SHA256SUMS"
