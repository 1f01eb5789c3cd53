#!/usr/bin/env python3
"""One push over cleartext h2c (prior knowledge), then reads until the server closes: prints what a
provider would see of a GOAWAY that follows the answer, as JSON:
{"status": 200, "goaway": {"code": 11, "lastStream": 1, "debug": "..."} or null, "closed": true}

usage: h2_goaway.py HOST PORT PATH BODY [HEADER:VALUE ...]   (Debian's python3-h2 is enough)
"""
import json
import socket
import sys

import h2.config
import h2.connection
import h2.events


def main():
    host, port, path, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
    headers = [(":method", "POST"), (":scheme", "http"), (":authority", f"{host}:{port}"), (":path", path)]
    for item in sys.argv[5:]:
        name, _, value = item.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    sock = socket.create_connection((host, port), timeout=10)
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    connection.send_headers(1, headers)
    connection.send_data(1, body, end_stream=True)
    sock.sendall(connection.data_to_send())
    result = {"status": None, "goaway": None, "closed": False}
    while True:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            result["closed"] = True
            break
        if not data:
            result["closed"] = True
            break
        for event in connection.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                result["status"] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.ConnectionTerminated):
                result["goaway"] = {"code": int(event.error_code), "lastStream": event.last_stream_id,
                                    "debug": (event.additional_data or b"").decode()}
        pending = connection.data_to_send()
        if pending:
            sock.sendall(pending)
    print(json.dumps(result))


main()
