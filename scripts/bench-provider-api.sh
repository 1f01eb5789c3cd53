#!/usr/bin/env bash
# Provider API throughput: herald gateway vs nginx (HTTP/2 + TLS, returning 200), same machine,
# same run, same client: h2load -c 4 -m 100, 200,000 requests, a valid JWT, a 200-byte alert payload.
# The gateway runs with everything on: authentication, validation, routing, link QoS, and delivery to
# one connected test device (herald test-device over the device link) that acknowledges every push,
# so each 200 means "delivered and acknowledged".
#
#   scripts/bench-provider-api.sh [requests]
#
# Needs h2load (Debian: nghttp2-client), nginx and curl; installs them with apt-get if missing.
# Prints both rates, the ratio, and the gateway's and test device's CPU time per request during the
# gateway run (from /proc), h2load's own in each run, and what the two cores leave the gateway and
# the device per push at 55% of nginx's rate (the issue 35 target); record the result in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-200000}

source scripts/lib/bench-gateway.sh
bench_extra_cleanup() {
    [ -f "$WORK/nginx/nginx.pid" ] && nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" -s stop 2>/dev/null || true
}
bench_setup h2load:nghttp2-client nginx:nginx curl:curl -- --no-legacy

# nginx: HTTP/2 over TLS with the gateway's own certificate, answering 200 on the same path.
mkdir -p "$WORK/nginx"
NGINX_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
error_log $WORK/nginx/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $WORK/nginx;
    server {
        listen 127.0.0.1:$NGINX_PORT ssl;
        http2 on;
        ssl_certificate $WORK/gw/server.pem;
        ssl_certificate_key $WORK/gw/server-key.pem;
        http2_max_concurrent_streams 1000;
        location /3/device/ { return 200; }
    }
}
NGX
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2>/dev/null || {
    # nginx before 1.25 has no 'http2 on;': fall back to 'listen … ssl http2'.
    sed -i -e "s/listen 127.0.0.1:$NGINX_PORT ssl;/listen 127.0.0.1:$NGINX_PORT ssl http2;/" -e '/http2 on;/d' "$WORK/nginx/nginx.conf"
    nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx"
}

# Prints "rate|CPU seconds h2load used|status codes".
run_h2load() {
    local TIMEFORMAT='%U %S'
    { time bench_h2load_load "$REQUESTS" "$1" > "$WORK/h2load.out"; } 2> "$WORK/h2load.time"
    local codes rate cpu
    codes=$(grep "status codes:" "$WORK/h2load.out")
    rate=$(grep -o "[0-9.]* req/s" "$WORK/h2load.out" | head -1 | cut -d' ' -f1)
    cpu=$(awk '{print $1 + $2}' "$WORK/h2load.time")
    echo "$rate|$cpu|$codes"
}

# CPU time (user + system, clock ticks) of a process and all its threads.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
GW_CPU0=$(cpu_ticks "$GW_PID"); DEV_CPU0=$(cpu_ticks "$DEV_PID")
H=$(run_h2load "$PROVIDER/3/device/$TOKEN")
GW_CPU1=$(cpu_ticks "$GW_PID"); DEV_CPU1=$(cpu_ticks "$DEV_PID")
N=$(run_h2load "https://127.0.0.1:$NGINX_PORT/3/device/$TOKEN")
HR=${H%%|*}; NR=${N%%|*}
H_CPU=$(echo "$H" | cut -d'|' -f2); N_CPU=$(echo "$N" | cut -d'|' -f2)
echo "herald gateway: $HR req/s ($(echo "$H" | cut -d'|' -f3))"
echo "nginx:          $NR req/s ($(echo "$N" | cut -d'|' -f3))"
python3 -c "print(f'ratio herald/nginx: {float($HR)/float($NR)*100:.1f}%')"
METRICS=$(curl -sf "$ADMIN/metrics" -H "$AUTH")
ACKED=$(echo "$METRICS" | grep '^herald_deliveries_total{result="acknowledged"}' | awk '{print $2}')
STORED=$(echo "$METRICS" | grep '^herald_pushes_stored_total' | awk '{print $2}')
echo "delivered to the device and acknowledged: $ACKED; stored instead (no acknowledgement in time): $STORED"
# Whether the store fell behind the run (docs/listeners.md, "Memory"): delivery-log lines dropped, and
# pushes answered 503 because the store's queue was full. Both should be 0.
# (A build from before the limits, given as HERALD for a comparison, has no such counter.)
DROPPED=$(echo "$METRICS" | grep '^herald_delivery_log_lines_dropped_total' | awk '{print $2}' || true)
BEHIND=$(grep -c "the store is behind" "$WORK/gw.out" || true)
echo "delivery-log lines dropped with the store behind: ${DROPPED:-0}; times the gateway logged the store behind: $BEHIND"
python3 -c "
n, tick = $REQUESTS, $(getconf CLK_TCK)
gateway, device = ($GW_CPU1 - $GW_CPU0) / tick / n * 1e6, ($DEV_CPU1 - $DEV_CPU0) / tick / n * 1e6
client, reference = $H_CPU / n * 1e6, $N_CPU / n * 1e6
print(f'CPU per request: gateway {gateway:.1f} us, test device {device:.1f} us, h2load {client:.1f} us (against nginx: {reference:.1f} us)')
# At 55% of nginx's rate the machine's cores give each push 1/(0.55 x rate) of CPU time each; h2load
# takes its share (as measured against the gateway), and the gateway and the device share the rest.
cores = $(nproc)
budget = cores / (0.55 * float($NR)) * 1e6 - client
print(f'at 55% of nginx, {cores} cores leave the gateway and the device {budget:.1f} us per push together; they used {gateway + device:.1f} us')"
