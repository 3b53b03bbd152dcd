#!/bin/bash
# By-hand check of deploy/nginx.conf.template (deploy/README.md "Checked by hand"): a compose
# replica recreated on a new address while two clients post streamed chats through nginx. Runs
# in a private network and mount namespace (root), loopback only, about 45 s; not part of CI.
#
#   scripts/lb-recreate.sh NGINX_CMD CONFIG MODE OUT_DIR
#     NGINX_CMD  how to run nginx >= 1.27.3, e.g. "/usr/sbin/nginx"
#     CONFIG     deploy/nginx.conf.template, or a plain nginx.conf to compare with
#     MODE       graceful: SIGTERM, the name leaves the DNS, the new replica 2 s later
#                kill: SIGKILL, the DNS keeps the old address, the new replica 8 s later
#   Needs target/release/harness-proxy or target/debug/harness-proxy, python3, curl, envsubst.
#
# proxy-a runs on 127.0.0.2:8080, proxy-b on 127.0.0.3:8080, nginx on 127.0.0.1:8080 and a DNS
# server on 127.0.0.53 (nginx's resolver); the recreated proxy-a comes up on 127.0.0.4 and its
# old address is black-holed (no connect completes), as a removed container's address is.
set -u
if [ "${LB_RECREATE_INSIDE:-}" != 1 ]; then
  exec env LB_RECREATE_INSIDE=1 unshare --net --mount "$0" "$@"
fi
NGINX=$1; CONFIG=$(realpath "$2"); MODE=$3; OUT=$(realpath -m "$4")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY="python3 $ROOT/scripts/lb-recreate.py"
BIN=$ROOT/target/release/harness-proxy; [ -x "$BIN" ] || BIN=$ROOT/target/debug/harness-proxy
# Whatever happens, nothing this run started outlives it.
trap 'kill $(jobs -p) 2>/dev/null' EXIT
trap 'exit 1' TERM INT
rm -rf "$OUT"; mkdir -p "$OUT"/{body,proxy,fastcgi,uwsgi,scgi}
mount --make-rprivate /
ip link set lo up
NAMES=$OUT/names.json
echo '{"proxy-a":["127.0.0.2"],"proxy-b":["127.0.0.3"]}' > "$NAMES"
# For a plain nginx.conf that resolves the names once, at start, through the system resolver.
printf '127.0.0.1 localhost\n127.0.0.2 proxy-a\n127.0.0.3 proxy-b\n' > "$OUT/hosts"
mount --bind "$OUT/hosts" /etc/hosts
$PY dns 127.0.0.53 "$NAMES" & DNS=$!
$PY upstream 18999 & UP=$!
start_proxy() {
  HARNESS_PROXY__LISTEN=$1:8080 HARNESS_PROXY__UPSTREAM__BASE_URL=http://127.0.0.1:18999/v1 \
  HARNESS_PROXY__UPSTREAM__API_KEY=fake HARNESS_PROXY__TITLES__STORE=memory \
  HARNESS_PROXY__SHUTDOWN_GRACE=5s HARNESS_PROXY__LOG_FORMAT=json \
    "$BIN" serve > "$OUT/proxy-$2.log" 2>&1 &
}
wait_up() {
  for _ in $(seq 100); do curl -fs "http://$1:8080/healthz" >/dev/null && return; sleep 0.1; done
  echo "$1 did not come up"
}
start_proxy 127.0.0.2 a; A=$!
start_proxy 127.0.0.3 b; B=$!
wait_up 127.0.0.2; wait_up 127.0.0.3
# The nginx image's entrypoint would put the container's DNS server here.
NGINX_LOCAL_RESOLVERS=127.0.0.53 envsubst '${NGINX_LOCAL_RESOLVERS}' < "$CONFIG" > "$OUT/nginx.conf"
# Run-only changes: loopback listen address, writable temp paths, an access log with the
# upstream's address and times.
sed -i "s/listen 8080;/listen 127.0.0.1:8080;/" "$OUT/nginx.conf"
sed -i "s#^http {#http {\n  client_body_temp_path $OUT/body; proxy_temp_path $OUT/proxy; fastcgi_temp_path $OUT/fastcgi; uwsgi_temp_path $OUT/uwsgi; scgi_temp_path $OUT/scgi;\n  log_format timing '\$msec|\$request_method|\$status|\$request_time|\$upstream_addr|\$upstream_connect_time|\$upstream_status';\n  access_log $OUT/access.log timing;#" "$OUT/nginx.conf"
$NGINX -t -e "$OUT/error.log" -c "$OUT/nginx.conf" -g "pid $OUT/nginx.pid; user root;" || exit 1
$NGINX -e "$OUT/error.log" -c "$OUT/nginx.conf" -g "pid $OUT/nginx.pid; user root; daemon off;" & NG=$!
for _ in $(seq 50); do curl -fs http://127.0.0.1:8080/healthz >/dev/null && break; sleep 0.1; done
$PY client 30 "$OUT/client.log" & CL=$!
sleep 8
echo "recreate starts $(date +%s.%N)" > "$OUT/events"
if [ "$MODE" = graceful ]; then
  kill -TERM $A; while kill -0 $A 2>/dev/null; do sleep 0.05; done
  echo '{"proxy-b":["127.0.0.3"]}' > "$NAMES"
else
  kill -KILL $A; while kill -0 $A 2>/dev/null; do sleep 0.05; done
fi
$PY blackhole 127.0.0.2 8080 & BH=$!
echo "proxy-a gone, its address black-holed $(date +%s.%N)" >> "$OUT/events"
if [ "$MODE" = graceful ]; then sleep 2; else sleep 8; fi
start_proxy 127.0.0.4 a2; A2=$!
wait_up 127.0.0.4
echo '{"proxy-a":["127.0.0.4"],"proxy-b":["127.0.0.3"]}' > "$NAMES"
echo "proxy-a up on 127.0.0.4, DNS updated $(date +%s.%N)" >> "$OUT/events"
wait $CL
kill $NG $A2 $B $DNS $UP $BH 2>/dev/null; wait 2>/dev/null
$PY analyse "$OUT"
