#!/usr/bin/env bash
# Builds the container image of Herald's gateway (packaging/container/Containerfile) with podman,
# from a release binary and nothing downloaded: the image holds the binary, the C libraries it
# loads (read from the binary with ldd, so they are exactly what it needs), the dynamic loader, an
# account (herald, uid 10001) and the state directory as a volume.
#
#   scripts/container.sh [--binary PATH] [--tag NAME]     (default tag herald:VERSION, or herald:dev)
#
# Without --binary, the release binary is built (swift build -c release --static-swift-stdlib).
# Needs podman (Debian: apt-get install podman buildah runc). Run it as on this machine:
#   podman --runtime runc --cgroup-manager=cgroupfs run -d --network host \
#       --ulimit nofile=65536:65536 --ulimit nproc=4096:4096 -v herald-state:/var/lib/herald herald:dev
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=
TAG=
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) BINARY=${2:?--binary needs a path}; shift 2 ;;
        --tag) TAG=${2:?--tag needs a name}; shift 2 ;;
        *) echo "container: unknown argument '$1'" >&2; exit 1 ;;
    esac
done
command -v podman >/dev/null || { echo "container: podman is missing (apt-get install podman buildah runc)" >&2; exit 1; }
if [ -z "$BINARY" ]; then
    swift build -c release --product herald --static-swift-stdlib
    BINARY="$(swift build -c release --static-swift-stdlib --show-bin-path)/herald"
fi
[ -x "$BINARY" ] || { echo "container: $BINARY is not an executable" >&2; exit 1; }
if [ -z "$TAG" ]; then
    VERSION=$("$BINARY" --version | cut -d' ' -f1)
    [ "$VERSION" = development ] && VERSION=dev
    TAG="herald:$VERSION"
fi

CONTEXT=$(mktemp -d)
trap 'rm -rf "$CONTEXT"' EXIT
R="$CONTEXT/rootfs"
mkdir -p "$R/usr/bin" "$R/etc" "$R/tmp" "$R/var/lib/herald"
chmod 1777 "$R/tmp"
strip -o "$R/usr/bin/herald" "$BINARY" 2>/dev/null || cp "$BINARY" "$R/usr/bin/herald"
# Every library the binary loads, at the path it loads it from, and the loader itself.
for library in $(ldd "$BINARY" | awk '/=> \// { print $3 } /^\t\/[^ ]*ld-linux/ { print $1 }'); do
    mkdir -p "$R$(dirname "$library")"
    cp -L "$library" "$R$library"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nherald:x:10001:10001:Herald:/var/lib/herald:/sbin/nologin\n' > "$R/etc/passwd"
printf 'root:x:0:\nherald:x:10001:\n' > "$R/etc/group"
chown -R 10001:10001 "$R/var/lib/herald"
chmod 750 "$R/var/lib/herald"
cp packaging/container/Containerfile "$CONTEXT/"
podman build --format docker -f "$CONTEXT/Containerfile" -t "$TAG" "$CONTEXT" >&2
echo "$TAG"
