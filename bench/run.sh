#!/usr/bin/env bash
# The side-by-side load bench (see BENCHMARKS.md): every target in one go, on the same mock model
# server, the proxy (or peer) pinned to core 0, the mock and the load driver pinned to core 1.
#
#   bench/run.sh           full run: mock direct, a bare hyper relay (the rig's floor), passthrough,
#                          opencode with titles off (a diagnostic row) and as shipped (titles on,
#                          SQLite file store) with and without a conversation id (small chat,
#                          32 KB agent turn), the Responses / Messages fronts as shipped with
#                          their clients' ids, TensorZero and LiteLLM (installed pinned into
#                          bench/.venv on first use), Portkey's gateway (npm, into bench/.node)
#   bench/run.sh --quick   seconds per target, proxy targets only, no peers (CI runs this so the
#                          bench never rots; its figures are printed, never asserted)
#   bench/run.sh --harnesses    only the mock and the harness rows (passthrough, opencode, pi,
#                          deepseek-tui with titles off): the rebuilds side by side
#   bench/run.sh --no-litellm   the full run without LiteLLM (its ~6 minutes), e.g. for
#                          bench/median-of-three.sh, which runs the bench three times and prints
#                          the medians with every run's figure and the targets met or missed
#
# Output: one markdown table on stdout, also in bench/out/table.md; raw figures in
# bench/out/results.jsonl; process logs in bench/out/*.log.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=()
LITELLM=1
HARNESSES_ONLY=0
RUN_ARGS="${*:-(full)}"
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=(--quick) ;;
    --no-litellm) LITELLM=0 ;;
    --harnesses) HARNESSES_ONLY=1 ;;
    *) echo "unknown argument $arg (--quick, --no-litellm, --harnesses)" >&2; exit 2 ;;
  esac
done
TZ_VERSION=2026.6.0
LITELLM_VERSION=1.108.7
PORTKEY_VERSION=1.15.2
OUT=bench/out
mkdir -p "$OUT"
rm -f "$OUT/results.jsonl" "$OUT"/*.addr

if command -v taskset >/dev/null 2>&1 && [[ "$(nproc)" -ge 2 ]]; then
  PIN_SERVER=(taskset -c 0)
  PIN_CLIENT=(taskset -c 1)
  PINNING="proxy/peer pinned to core 0 (taskset -c 0); mock and driver pinned to core 1 (taskset -c 1)"
else
  PIN_SERVER=()
  PIN_CLIENT=()
  PINNING="NOT pinned (taskset missing or fewer than 2 cores): figures are not comparable"
fi
# Thousands of concurrent streams need thousands of descriptors in each process.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "building release binaries …" >&2
cargo build --release --quiet --bin harness-proxy
cargo build --release --quiet --manifest-path bench/Cargo.toml
DRIVER=bench/target/release/driver
PROXY_BIN=target/release/harness-proxy

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
note() { "$DRIVER" note --name "$1" --kind "$2" --note "$3" --out "$OUT/results.jsonl"; }
measure() { # name kind url pid [driver flags…]
  local name=$1 kind=$2 url=$3 pid=$4
  shift 4
  local pid_flag=()
  [[ -n "$pid" ]] && pid_flag=(--pid "$pid")
  if ! "${PIN_CLIENT[@]}" "$DRIVER" run --name "$name" --kind "$kind" --url "$url" "${pid_flag[@]}" \
      --fixtures bench/fixtures --out "$OUT/results.jsonl" "${QUICK[@]}" "$@"; then
    note "$name" "$kind" "the driver failed against this target (see the output above)"
  fi
}
wait_file() { # file pid seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [[ -s "$1" ]] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

"${PIN_CLIENT[@]}" bench/target/release/mock --addr-file "$OUT/mock.addr" 2>"$OUT/mock.log" &
MOCK_PID=$!
PIDS+=("$MOCK_PID")
wait_file "$OUT/mock.addr" "$MOCK_PID" 10 || { echo "the mock did not start" >&2; exit 1; }
MOCK=$(cat "$OUT/mock.addr")
measure "mock direct" direct "http://$MOCK/v1/chat/completions" ""

# The rig's floor: a bare hyper relay (bench/src/bin/relay.rs) in front of the same mock, pinned
# where the proxy runs. What one more loopback hop and process cost on this machine; the part of
# the proxy's added time above this row is the proxy's own.
"${PIN_SERVER[@]}" bench/target/release/relay --upstream "$MOCK" --addr-file "$OUT/relay.addr" \
  2>"$OUT/relay.log" &
RELAY_PID=$!
PIDS+=("$RELAY_PID")
if wait_file "$OUT/relay.addr" "$RELAY_PID" 10; then
  measure "bare hyper relay (rig floor)" floor "http://$(cat "$OUT/relay.addr")/v1/chat/completions" "$RELAY_PID"
else
  note "bare hyper relay (rig floor)" floor "did not start: $(tail -n 1 "$OUT/relay.log")"
fi
stop "$RELAY_PID"

# The proxy as shipped (info-level access log, to a file), titles off so each request is one
# upstream call, and room for the 2,048-stream phase (default max_concurrent_requests is 1,024).
cat >"$OUT/proxy.toml" <<TOML
[titles]
order = "off"
store = "memory"

[limits]
max_concurrent_requests = 4096
TOML
start_proxy() {
  PROXY_PORT=$("$DRIVER" free-port)
  "${PIN_SERVER[@]}" "$PROXY_BIN" --config "$OUT/proxy.toml" --listen "127.0.0.1:$PROXY_PORT" \
    --upstream "http://$MOCK/v1" 2>>"$OUT/proxy.log" &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  "$DRIVER" wait --url "http://127.0.0.1:$PROXY_PORT/healthz" --pid "$PROXY_PID" --seconds 30
}

# A fresh process per target, so idle memory and CPU counters belong to that target alone.
# pi and deepseek-tui (the largest tool set) beside opencode: a reference harness's rebuild is held to
# opencode's cost (added p50 and p99 within 1.2x of opencode's row in the same run).
for harness in passthrough opencode pi deepseek-tui; do
  start_proxy
  label=$harness
  [[ "$harness" != passthrough ]] && label="$harness, titles off (diagnostic)"
  measure "$label" proxy "http://127.0.0.1:$PROXY_PORT/v1/chat/completions" "$PROXY_PID" \
    --header "x-harness: $harness"
  stop "$PROXY_PID"
done

# Everything but the harness rows: the shipped configuration, the other fronts, the peers.
rest_of_bench() {
# The proxy as shipped: titles at their defaults, the SQLite file store in the run's directory
# (as README's first command makes it in its working directory), with and without a conversation
# id. Only the request limit is raised, for the 2,048-stream phase.
cat >"$OUT/shipped.toml" <<TOML
[titles]
store = "sqlite://$PWD/$OUT/shipped-titles.db"

[limits]
max_concurrent_requests = 4096
TOML
start_shipped() {
  rm -f "$OUT"/shipped-titles.db*
  PROXY_PORT=$("$DRIVER" free-port)
  "${PIN_SERVER[@]}" "$PROXY_BIN" --config "$OUT/shipped.toml" --listen "127.0.0.1:$PROXY_PORT" \
    --upstream "http://$MOCK/v1" 2>>"$OUT/proxy.log" &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  "$DRIVER" wait --url "http://127.0.0.1:$PROXY_PORT/healthz" --pid "$PROXY_PID" --seconds 30
}
for variant in "no id" "with id"; do
  start_shipped
  id_header=()
  [[ "$variant" == "with id" ]] && id_header=(--header "x-session-id: bench-session-1")
  measure "opencode as shipped, $variant" proxy "http://127.0.0.1:$PROXY_PORT/v1/chat/completions" \
    "$PROXY_PID" --header "x-harness: opencode" "${id_header[@]}"
  stop "$PROXY_PID"
done

# The other fronts as shipped, each with the conversation id its client sends (Codex's
# `session_id`, Claude Code's `x-claude-code-session-id`).
for front in "responses:Responses:session_id" "messages:Messages:x-claude-code-session-id"; do
  IFS=: read -r path label id_name <<<"$front"
  start_shipped
  status=$("$DRIVER" probe --url "http://127.0.0.1:$PROXY_PORT/v1/$path" --header "x-harness: opencode" || echo "no answer")
  if [[ "$status" == "200" ]]; then
    measure "opencode · $label as shipped, with id" proxy "http://127.0.0.1:$PROXY_PORT/v1/$path" "$PROXY_PID" \
      --header "x-harness: opencode" --header "$id_name: bench-session-1" --protocol "$path"
  else
    note "opencode · $label" proxy "skipped: POST /v1/$path through the opencode harness answered $status (no $label front in this build)"
  fi
  stop "$PROXY_PID"
done

# Gemini CLI's front as shipped: Gemini CLI sends no conversation id, so neither does this row.
# The model and the method are in the path (`models/{model}:streamGenerateContent?alt=sse`).
start_shipped
measure "opencode · Gemini as shipped, no id" proxy "http://127.0.0.1:$PROXY_PORT/v1beta/models" "$PROXY_PID" \
  --header "x-harness: opencode" --protocol gemini
stop "$PROXY_PID"

peer_venv() {
  if [[ ! -x bench/.venv/bin/python ]]; then
    python3 -m venv bench/.venv >"$OUT/venv.log" 2>&1 || return 1
  fi
  bench/.venv/bin/pip install --quiet --disable-pip-version-check "$@" >>"$OUT/venv.log" 2>&1
}

if [[ ${#QUICK[@]} -eq 0 ]]; then
  MODELS=$("$DRIVER" models)

  name="TensorZero $TZ_VERSION"
  if ! peer_venv "tensorzero==$TZ_VERSION"; then
    note "$name" peer "install failed: $(tail -n 1 "$OUT/venv.log")"
  else
    {
      printf '[gateway.observability]\nenabled = false\n'
      for m in $MODELS; do
        printf '\n[models."%s"]\nrouting = ["mock"]\n\n[models."%s".providers.mock]\n' "$m" "$m"
        printf 'type = "openai"\nmodel_name = "%s"\napi_base = "http://%s/v1/"\napi_key_location = "none"\n' "$m" "$MOCK"
      done
    } >"$OUT/tensorzero.toml"
    "${PIN_SERVER[@]}" bench/.venv/bin/python bench/peers/tensorzero_gateway.py "$OUT/tensorzero.toml" \
      "$OUT/tensorzero.addr" >"$OUT/tensorzero.log" 2>&1 &
    TZ_PID=$!
    PIDS+=("$TZ_PID")
    if wait_file "$OUT/tensorzero.addr" "$TZ_PID" 60; then
      measure "$name" peer "$(cat "$OUT/tensorzero.addr")/chat/completions" "$TZ_PID" \
        --model-format "tensorzero::model_name::{}"
    else
      note "$name" peer "did not start: $(tail -n 1 "$OUT/tensorzero.log")"
    fi
    stop "$TZ_PID"
  fi

  # Portkey's gateway from npm, as its README runs it (`npx @portkey-ai/gateway`), with an
  # OpenAI-compatible upstream named per request by its headers (`x-portkey-provider: openai`,
  # `x-portkey-custom-host`). @hono/node-server is pinned to 1.12.2 (bench/peers/portkey-package.json):
  # with the 1.19 that 1.15.2 resolves to, every streamed answer was a 500 (Portkey issues 1389, 1550).
  name="Portkey gateway $PORTKEY_VERSION"
  mkdir -p bench/.node
  cp bench/peers/portkey-package.json bench/.node/package.json
  if ! (cd bench/.node && npm install --no-audit --no-fund --silent) >"$OUT/portkey-install.log" 2>&1; then
    note "$name" peer "install failed: $(tail -n 1 "$OUT/portkey-install.log")"
  else
    port=$("$DRIVER" free-port)
    NODE_ENV=production "${PIN_SERVER[@]}" node bench/.node/node_modules/@portkey-ai/gateway/build/start-server.js \
      --port="$port" --headless >"$OUT/portkey.log" 2>&1 &
    PK_PID=$!
    PIDS+=("$PK_PID")
    if "$DRIVER" wait --url "http://127.0.0.1:$port/" --pid "$PK_PID" --seconds 60; then
      measure "$name" peer "http://127.0.0.1:$port/v1/chat/completions" "$PK_PID" \
        --header "x-portkey-provider: openai" --header "x-portkey-custom-host: http://$MOCK/v1"
    else
      note "$name" peer "did not start: $(tail -n 1 "$OUT/portkey.log")"
    fi
    stop "$PK_PID"
  fi

  name="LiteLLM $LITELLM_VERSION"
  if [[ $LITELLM -eq 0 ]]; then
    note "$name" peer "not run (--no-litellm)"
  elif ! peer_venv "litellm[proxy]==$LITELLM_VERSION"; then
    note "$name" peer "install failed: $(tail -n 1 "$OUT/venv.log")"
  else
    {
      echo "model_list:"
      for m in $MODELS; do
        printf '  - model_name: %s\n    litellm_params:\n      model: openai/%s\n' "$m" "$m"
        printf '      api_base: http://%s/v1\n      api_key: sk-bench-not-a-key\n' "$MOCK"
      done
      printf 'litellm_settings:\n  drop_params: true\n  telemetry: false\n'
    } >"$OUT/litellm.yaml"
    port=$("$DRIVER" free-port)
    # No master key (no credentials at all): 1.108 refuses that unless told it is local use.
    LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true LITELLM_LOCAL_MODEL_COST_MAP=True \
      "${PIN_SERVER[@]}" bench/.venv/bin/litellm --config "$OUT/litellm.yaml" --host 127.0.0.1 \
      --port "$port" >"$OUT/litellm.log" 2>&1 &
    LL_PID=$!
    PIDS+=("$LL_PID")
    if "$DRIVER" wait --url "http://127.0.0.1:$port/health/liveliness" --pid "$LL_PID" --seconds 180; then
      measure "$name" peer "http://127.0.0.1:$port/v1/chat/completions" "$LL_PID"
    else
      note "$name" peer "did not start: $(tail -n 1 "$OUT/litellm.log")"
    fi
    stop "$LL_PID"
  fi
fi

}
[[ $HARNESSES_ONLY -eq 1 ]] || rest_of_bench

{
  echo "bench/run.sh $RUN_ARGS — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "$PINNING; added = target − mock direct; µs unless named"
  echo
  "$DRIVER" table "$OUT/results.jsonl"
} | tee "$OUT/table.md"
