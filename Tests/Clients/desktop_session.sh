#!/bin/sh
# A private desktop for the desktop presenter's test: a private session bus (its own dbus-daemon),
# Xvfb on a free display, dunst (a real freedesktop notification server) with a stand-in for dmenu
# that picks the context-menu line named in $DIR/pick, and `herald device --presenter terminal,desktop`.
#
#   sh desktop_session.sh HERALD DIR [herald device options…]
#
# With SERVER set, that command is the notification server instead of dunst (a stand-in that
# records what it is sent: Tests/Clients/fake_notifications.py). The device's log goes to
# DIR/device.log.
#
# Prints `display :N`, `bus <address>` and `device-pid <pid>`, then the device's output; ends when
# the device does (SIGTERM it), stopping dunst, Xvfb and the bus. Fails, saying why on standard
# error and in DIR/session.log, when the bus, Xvfb or dunst cannot start.
set -eu
HERALD=$1
DIR=$2
shift 2
mkdir -p "$DIR"
fail() { echo "desktop session: $*" | tee -a "$DIR/session.log" >&2; exit 1; }

# The bus: its own daemon, whose output goes to files (it must not hold this script's output open).
dbus-daemon --session --fork --nopidfile --print-address=1 --print-pid=1 > "$DIR/bus" 2> "$DIR/bus.log" \
    < /dev/null || fail "dbus-daemon did not start: $(cat "$DIR/bus.log")"
DBUS_SESSION_BUS_ADDRESS=$(sed -n 1p "$DIR/bus")
BUS=$(sed -n 2p "$DIR/bus")
export DBUS_SESSION_BUS_ADDRESS
trap 'kill $BUS 2>/dev/null' EXIT
cat > "$DIR/pick.sh" <<PICK
#!/bin/sh
# dmenu's stand-in: keeps the menu dunst offered and answers with the line the test chose.
tee "$DIR/menu.txt" | grep -m1 -F "\$(cat "$DIR/pick")"
PICK
chmod +x "$DIR/pick.sh"
printf '[global]\n    dmenu = %s\n    timeout = 0\n    geometry = "360x5-10+10"\n' "$DIR/pick.sh" > "$DIR/dunstrc"

# Xvfb picks a free display and writes its number to fd 3.
Xvfb -displayfd 3 -screen 0 800x300x24 -nolisten tcp 3> "$DIR/display" > "$DIR/xvfb.log" 2>&1 < /dev/null &
XVFB=$!
trap 'kill $XVFB $BUS 2>/dev/null' EXIT
# Waiting for other processes to come up: they have no other way to say they are ready.
for _ in $(seq 1 200); do [ -s "$DIR/display" ] && break; sleep 0.05; done
[ -s "$DIR/display" ] || fail "Xvfb did not start: $(cat "$DIR/xvfb.log")"
DISPLAY=":$(cat "$DIR/display")"
export DISPLAY
if [ -n "${SERVER:-}" ]; then
    sh -c "exec $SERVER" > "$DIR/dunst.log" 2>&1 < /dev/null &
else
    dunst -config "$DIR/dunstrc" > "$DIR/dunst.log" 2>&1 < /dev/null &
fi
DUNST=$!
trap 'kill $DUNST $XVFB $BUS 2>/dev/null' EXIT
# NameHasOwner, not a call to the server: a call would start another dunst through D-Bus activation.
owned() {
    dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2> /dev/null | grep -q true
}
for _ in $(seq 1 200); do owned && break; sleep 0.05; done
owned || fail "dunst did not start: $(cat "$DIR/dunst.log")"
echo "display $DISPLAY"
echo "bus $DBUS_SESSION_BUS_ADDRESS"
"$HERALD" device "$@" --presenter terminal,desktop 2> "$DIR/device.log" &
DEVICE=$!
echo "device-pid $DEVICE"
# Stopped from outside: the device first, then the rest (EXIT).
trap 'kill -TERM $DEVICE 2>/dev/null' TERM INT
wait $DEVICE || wait $DEVICE
