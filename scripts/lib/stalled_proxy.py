"""A TCP proxy on loopback for scripts/bench-stalled-device.sh: it forwards a device's link to the
gateway and, on SIGUSR1, stops reading what the gateway sends, so that the device behind it reads
nothing more, as a device that hangs or whose network stalls.

    python3 stalled_proxy.py GATEWAY_HOST GATEWAY_PORT PORT_FILE

It listens on a free port, writes that port to PORT_FILE, and runs until killed. Its socket toward
the gateway keeps a small receive buffer, so that the kernel holds little of what the gateway sends.
"""
import asyncio
import signal
import socket
import sys

upstreams = []
flowing = None  # an asyncio.Event, cleared by SIGUSR1: the gateway's side is then read no more


async def pipe(reader, writer, stoppable=False):
    try:
        while True:
            if stoppable:
                await flowing.wait()
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(device_reader, device_writer):
    host, port = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    gateway_reader, gateway_writer = await asyncio.open_connection(sock=sock)
    upstreams.append(gateway_writer.transport)
    await asyncio.gather(
        pipe(device_reader, gateway_writer), pipe(gateway_reader, device_writer, stoppable=True))


def stall():
    flowing.clear()
    for transport in upstreams:
        transport.pause_reading()
    print(f"stalled_proxy: stopped reading from the gateway on {len(upstreams)} connection(s)", flush=True)


async def main():
    global flowing
    flowing = asyncio.Event()
    flowing.set()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, stall)
    with open(sys.argv[3], "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


asyncio.run(main())
