"""Sends broadcasts one after another and reads, from each test-device's JSON lines, when the last of
its idle devices had each one; prints the fan-out time against one push to one device.

usage: bench_broadcast.py DEV_URL JWT CHANNEL BROADCASTS TOKEN PAYLOAD_FILE SUBSCRIBER_OUTPUT...
"""
import json
import statistics
import subprocess
import sys
import time

dev, jwt, channel, count, token, payload_file = sys.argv[1:7]
outputs = sys.argv[7:]


def curl(args):
    r = subprocess.run(["curl", "-sS", "-D", "-", "-o", "/dev/null", "--http2-prior-knowledge"] + args,
                       capture_output=True, text=True, timeout=60)
    headers = {}
    for line in r.stdout.splitlines():
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


def fanouts():
    seen = {}
    for path in outputs:
        for line in open(path):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "fanout":
                seen.setdefault(event["uniqueID"], []).append((event["at"], event["devices"]))
    return seen


times = []
for i in range(int(count)):
    body = json.dumps({"aps": {"event": "update", "timestamp": 1700000000 + i,
                               "content-state": {"stop": i, "eta": "12:40"}}}, separators=(",", ":"))
    sent = time.time()
    headers = curl([dev + "/4/broadcasts/apps/com.example.bench", "-H", f"authorization: bearer {jwt}",
                    "-H", f"apns-channel-id: {channel}", "-H", "apns-push-type: liveactivity",
                    "-H", "apns-expiration: 0", "--data-binary", body])
    answered = time.time()
    unique = headers.get("apns-unique-id")
    if not unique:
        sys.exit(f"the broadcast was refused: {headers}")
    deadline = time.time() + 120
    while True:
        got = fanouts().get(unique, [])
        if len(got) == len(outputs):
            break
        if time.time() > deadline:
            sys.exit(f"broadcast {i}: only {len(got)} of {len(outputs)} processes had it after 120 s")
        time.sleep(0.05)
    last = max(at for at, _ in got)
    devices = sum(n for _, n in got)
    times.append(last - sent)
    print(f"broadcast {i}: answered in {(answered - sent) * 1000:.1f} ms; the last of {devices} idle devices "
          f"had it {(last - sent) * 1000:.0f} ms after the request")

# The reference: one push to one device, from the request to its acknowledged 200.
single = []
for _ in range(20):
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{time_total}", "--http2-prior-knowledge",
                        f"{dev}/3/device/{token}", "-H", f"authorization: bearer {jwt}",
                        "-H", "apns-topic: com.example.bench", "--data-binary", f"@{payload_file}"],
                       capture_output=True, text=True, timeout=60)
    single.append(float(r.stdout))
fan = statistics.median(times)
one = statistics.median(single)
print(f"fan-out (median of {len(times)}): {fan * 1000:.0f} ms to the last device, "
      f"{devices / fan:,.0f} deliveries/s; one push to one device (median of 20): {one * 1000:.1f} ms; "
      f"ratio {fan / one:.1f}x the time of one push for {devices} devices")
