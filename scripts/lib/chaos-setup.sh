# Shared by scripts/chaos-gateway.sh and scripts/chaos-device.sh; source it.
# Installs Debian's python3 and python3-h2 if missing, and sets HERALD to a built herald (debug)
# unless it names one already.
if ! /usr/bin/python3 -c 'import h2' 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 python3-h2 >/dev/null
fi
if [ -z "${HERALD:-}" ]; then
    swift build --product herald >/dev/null
    HERALD="$(swift build --show-bin-path)/herald"
fi
