#!/usr/bin/env python3
"""One HTTP/2 request over TLS (ALPN h2), as a Python provider would send it, printed as JSON:
{"status": 201, "headers": {...}, "body": "..."}. Exits 2 if no answer comes within the timeout.

usage: h2_request.py HOST PORT METHOD PATH CA_FILE BODY [AUTHORITY] [HEADER:VALUE ...]
(BODY "-" for none; AUTHORITY "-" for HOST:PORT). Debian's python3-h2 is enough.
"""
import json
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events


def main():
    host, port, method, path, ca, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
    authority = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] != "-" else f"{host}:{port}"
    extra = []
    for item in sys.argv[8:]:
        name, _, value = item.partition(":")
        extra.append((name.strip().lower(), value.strip()))
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection((host, port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname=host)
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    data = b"" if body == "-" else body.encode()
    headers = [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path)] + extra
    if data:
        headers.append(("content-length", str(len(data))))
    connection.send_headers(1, headers, end_stream=not data)
    if data:
        connection.send_data(1, data, end_stream=True)
    sock.sendall(connection.data_to_send())
    answer = {"status": 0, "headers": {}, "body": ""}
    done = False
    try:
        while not done:
            chunk = sock.recv(65535)
            if not chunk:
                break
            for event in connection.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    for name, value in event.headers:
                        name = name.decode() if isinstance(name, bytes) else name
                        value = value.decode() if isinstance(value, bytes) else value
                        if name == ":status":
                            answer["status"] = int(value)
                        else:
                            answer["headers"][name] = value
                elif isinstance(event, h2.events.DataReceived):
                    answer["body"] += event.data.decode()
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    done = True
            sock.sendall(connection.data_to_send())
    except socket.timeout:
        print(json.dumps(answer))
        sys.exit(2)
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
