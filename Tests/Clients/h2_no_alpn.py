#!/usr/bin/env python3
"""An HTTP/2 client that opens TLS without offering ALPN and starts HTTP/2 with the connection
preface at once, as some Python APNs clients do. Sends one request and prints the answer as JSON:
{"alpn": null, "status": 200, "headers": {...}, "body": "..."}. Exits 2 if no answer comes within
the timeout (the client would otherwise hang).

usage: h2_no_alpn.py HOST PORT PATH CA_FILE BODY [HEADER:VALUE ...]
Debian's python3-h2 is enough.
"""
import json
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events


def main():
    host, port, path, ca, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    extra = []
    for item in sys.argv[6:]:
        name, _, value = item.partition(":")
        extra.append((name.strip().lower(), value.strip()))
    context = ssl.create_default_context(cafile=ca)  # no set_alpn_protocols: no ALPN at all
    raw = socket.create_connection((host, port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname=host)
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    stream = connection.get_next_available_stream_id()
    connection.send_headers(
        stream,
        [(":method", "POST"), (":scheme", "https"), (":authority", f"{host}:{port}"), (":path", path)] + extra,
    )
    connection.send_data(stream, body.encode(), end_stream=True)
    sock.sendall(connection.data_to_send())
    status, headers, data = None, {}, b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            for event in connection.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    for name, value in event.headers:
                        name, value = name.decode(), value.decode()
                        if name == ":status":
                            status = int(value)
                        else:
                            headers[name] = value
                elif isinstance(event, h2.events.DataReceived):
                    data += event.data
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    print(json.dumps({"alpn": sock.selected_alpn_protocol(), "status": status,
                                      "headers": headers, "body": data.decode()}))
                    connection.close_connection()
                    sock.sendall(connection.data_to_send())
                    sock.close()
                    return 0
            outgoing = connection.data_to_send()
            if outgoing:
                sock.sendall(outgoing)
    except socket.timeout:
        print(json.dumps({"error": "no answer within 10 s"}))
        return 2
    print(json.dumps({"error": "the connection closed before an answer", "status": status}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
