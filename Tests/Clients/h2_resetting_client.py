#!/usr/bin/env python3
"""A well-behaved provider that resets each stream after its answer, as some HTTP/2 clients do.

usage: h2_resetting_client.py HOST PORT PATH COUNT IN_FLIGHT CODE [HEADER:VALUE ...]

Sends COUNT pushes (a small alert) on one cleartext h2c connection (prior knowledge), IN_FLIGHT at a
time, and sends RST_STREAM with error CODE (8 CANCEL, as APNSwift sends after some answers; 5
STREAM_CLOSED, as curl sends after every answer) on each stream once its answer has ended it. That is
legal (RFC 9113, section 5.1: a peer may receive RST_STREAM on a closed stream for a short while) and
costs the server nothing; a server that counts every RST_STREAM cuts such a client off.

Writes raw frames (hyperframe, hpack: Debian's python3-h2 brings both) so that it can send a reset on a
stream its own state already calls closed, which h2's state machine refuses. Respects the server's
connection window and gives back its own. Prints one JSON object:
  {"sent": requests sent, "statuses": {status: count}, "resets": RST_STREAM frames sent,
   "goaway": {"code": n, "debug": ...} or null, "closed": bool, "seconds": s}
"""
import json
import socket
import sys
import time

import hpack
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
BODY = b'{"aps":{"alert":"reset after its answer"}}'


def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    count, in_flight, code = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    extra = []
    for item in sys.argv[7:]:
        name, _, value = item.partition(":")
        extra.append((name.strip().lower(), value.strip()))
    request = [(":method", "POST"), (":scheme", "http"), (":authority", f"{host}:{port}"), (":path", path)] + extra

    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    encoder, decoder = hpack.Encoder(), hpack.Decoder()
    out = bytearray(PREFACE + SettingsFrame(0).serialize())
    buffer = b""
    window = 65535  # the server's connection window for what this client sends
    next_stream, sent, resets, open_streams = 1, 0, 0, 0
    statuses, goaway, closed = {}, None, False
    started = time.monotonic()

    while (sent < count or open_streams) and not closed and goaway is None:
        # Open streams up to IN_FLIGHT, as far as the window allows.
        while sent < count and open_streams < in_flight and window >= len(BODY):
            h = HeadersFrame(next_stream)
            h.data = encoder.encode(request)
            h.flags.add("END_HEADERS")
            d = DataFrame(next_stream)
            d.data = BODY
            d.flags.add("END_STREAM")
            out += h.serialize() + d.serialize()
            window -= len(BODY)
            next_stream += 2
            sent += 1
            open_streams += 1
        if out:
            sock.sendall(out)
            out = bytearray()
        try:
            chunk = sock.recv(1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            closed = True
            break
        buffer += chunk
        while len(buffer) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(buffer[:9]))
            if len(buffer) < 9 + length:
                break
            frame.parse_body(memoryview(buffer[9:9 + length]))
            buffer = buffer[9 + length:]
            if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                ack = SettingsFrame(0)
                ack.flags.add("ACK")
                out += ack.serialize()
            elif isinstance(frame, WindowUpdateFrame) and frame.stream_id == 0:
                window += frame.window_increment
            elif isinstance(frame, HeadersFrame):
                status = dict(decoder.decode(frame.data)).get(":status", "?")
                statuses[status] = statuses.get(status, 0) + 1
                if "END_STREAM" in frame.flags:
                    open_streams -= 1
                    out += RstStreamFrame(frame.stream_id, error_code=code).serialize()
                    resets += 1
            elif isinstance(frame, DataFrame):
                if frame.flow_controlled_length:
                    # Give the connection's window back: answers with a body need it.
                    out += WindowUpdateFrame(0, window_increment=frame.flow_controlled_length).serialize()
                if "END_STREAM" in frame.flags:
                    open_streams -= 1
                    out += RstStreamFrame(frame.stream_id, error_code=code).serialize()
                    resets += 1
            elif isinstance(frame, RstStreamFrame):
                open_streams -= 1
                statuses["reset"] = statuses.get("reset", 0) + 1
            elif isinstance(frame, GoAwayFrame):
                goaway = {"code": frame.error_code, "debug": frame.additional_data.decode(errors="replace")}
    if out and not closed:
        try:
            sock.sendall(out)
        except OSError:
            closed = True
    sock.close()
    print(json.dumps({"sent": sent, "statuses": statuses, "resets": resets, "goaway": goaway, "closed": closed,
                      "seconds": round(time.monotonic() - started, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
