#!/usr/bin/env python3
"""A freedesktop notification server that records what it is sent (python3-dbus, GLib main loop).

    fake_notifications.py RECORD CAPABILITY,CAPABILITY,...

Owns org.freedesktop.Notifications on the session bus, answers GetCapabilities with the given list
(a server without `actions`, say), and appends one JSON line to RECORD per Notify (app, replaces_id,
icon, summary, body, actions, hints, timeout, and the id it answered) and per CloseNotification.
Like real servers it keeps the id of a notification it replaces. For the desktop presenter's test.
"""
import json
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

RECORD, CAPABILITIES = sys.argv[1], [c for c in sys.argv[2].split(",") if c]
NAME, PATH = "org.freedesktop.Notifications", "/org/freedesktop/Notifications"


def plain(value):
    if isinstance(value, (dbus.Boolean, bool)):
        return bool(value)
    if isinstance(value, (dbus.Byte, dbus.UInt32, dbus.Int32, int)):
        return int(value)
    return str(value)


def record(**fields):
    with open(RECORD, "a") as file:
        file.write(json.dumps(fields) + "\n")


class Server(dbus.service.Object):
    next_id = 0

    @dbus.service.method(NAME, in_signature="", out_signature="as")
    def GetCapabilities(self):
        return CAPABILITIES

    @dbus.service.method(NAME, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces_id, icon, summary, body, actions, hints, timeout):
        if replaces_id:
            answer = int(replaces_id)
        else:
            Server.next_id += 1
            answer = Server.next_id
        record(call="Notify", app=str(app), replaces_id=int(replaces_id), icon=str(icon), summary=str(summary),
               body=str(body), actions=[str(a) for a in actions], hints={str(k): plain(v) for k, v in hints.items()},
               timeout=int(timeout), id=answer)
        return answer

    @dbus.service.method(NAME, in_signature="u", out_signature="")
    def CloseNotification(self, id):
        record(call="CloseNotification", id=int(id))
        self.NotificationClosed(id, 3)

    @dbus.service.method(NAME, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("fake", "herald-tests", "1", "1.2")

    @dbus.service.signal(NAME, signature="uu")
    def NotificationClosed(self, id, reason):
        pass


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName(NAME, bus)
Server(bus, PATH)
GLib.MainLoop().run()
