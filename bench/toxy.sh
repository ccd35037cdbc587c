#!/usr/bin/env bash
# toxy's benchmark (its benchmark/run.sh: four suites at a constant rate,
# reported in vegeta's layout) with versus as the load generator, twice:
#   toxy    real toxy 0.3 from npm (on node 14) as the proxy under test,
#           in front of nginx, poisoned as toxy's suites poison it;
#   versus  versus's own faults (--fault) in front of the same nginx.
# Then the fault proxy's own added latency at 1,000 req/s (a `latency 0ms`
# endpoint beside a direct one, in one run).
#
#   bench/toxy.sh                 # all of it (~2 minutes)
#   bench/toxy.sh toxy|versus|overhead|scenario
# `scenario` runs examples/toxy.toml (the three payload suites side by side
# in one run, versus's faults) against the same nginx.
#
# Settings (environment): DURATION (10s), RATE_FORWARD (100), RATE_PAYLOAD
# (60), OVERHEAD_RATE (1000), OVERHEAD_DURATION (10s), TOXY_DIR (where
# node 14 and toxy are installed; bench/.tools/toxy).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION="${DURATION:-10s}"
RATE_FORWARD="${RATE_FORWARD:-100}"
RATE_PAYLOAD="${RATE_PAYLOAD:-60}"
OVERHEAD_RATE="${OVERHEAD_RATE:-1000}"
OVERHEAD_DURATION="${OVERHEAD_DURATION:-10s}"
TOXY_DIR="${TOXY_DIR:-$BENCH_DIR/.tools/toxy}"
PAYLOAD="$BENCH_DIR/toxy-payload.json"   # 1723 bytes, the size of toxy's sample.json
WORK="$BENCH_DIR/.work/toxy"
what="${1:-all}"

# install_toxy: node 14 and toxy 0.3 from npm into TOXY_DIR, when missing.
install_toxy() {
  if [ ! -x "$TOXY_DIR/node_modules/node/bin/node" ] || [ ! -d "$TOXY_DIR/node_modules/toxy" ]; then
    log "installing node@14 and toxy@0.3 from npm into $TOXY_DIR"
    npm install --silent --prefix "$TOXY_DIR" node@14 toxy@0.3 >&2
  fi
  NODE14="$TOXY_DIR/node_modules/node/bin/node"
  "$NODE14" --version >/dev/null || die "node 14 from npm does not run ($NODE14)"
}

TOXY_PID=""
stop_toxy() {
  if [ -n "$TOXY_PID" ]; then kill "$TOXY_PID" 2>/dev/null || true; wait "$TOXY_PID" 2>/dev/null || true; TOXY_PID=""; fi
}

# start_toxy SUITE: toxy on a free port in front of nginx; sets TOXY_PORT.
start_toxy() {
  TOXY_PORT="$(free_port)"
  NODE_PATH="$TOXY_DIR/node_modules" "$NODE14" "$BENCH_DIR/toxy-suite.js" "$1" "$TOXY_PORT" \
    "http://127.0.0.1:$H1PORT" >"$WORK/toxy-$1.log" 2>&1 &
  TOXY_PID=$!
  local i
  for i in $(seq 1 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$TOXY_PORT/hello" 2>/dev/null && return 0
    sleep 0.1
  done
  die "toxy did not start (see $WORK/toxy-$1.log)"
}

# suite NAME VIA URL [versus options...]: one suite, vegeta's layout.
suite() {
  local name="$1" via="$2" url="$3"; shift 3
  local req=(-m GET) rate="$RATE_FORWARD"
  if [ "$name" != forward ]; then req=(-d "@$PAYLOAD"); rate="$RATE_PAYLOAD"; fi
  echo "# Running benchmark suite: $name ($via)"
  "$VERSUS" --rate "$rate" --stop-after "$DURATION" --max-in-flight 200 --timeout 60s --drain 60s \
    --format vegeta --output "$WORK/$via-$name.jsonl" "${req[@]}" "$@" "$url" </dev/null
  echo
}

NAMES=(forward forward+payload forward+payload+bandwidth forward+payload+slow-read)
TOXY_SUITES=(forward payload bandwidth slow-read)
FAULTS=("" "" "bandwidth 1KB/s up" "slow-read 1KB every 1s")

run_toxy() {
  install_toxy
  local i
  for i in 0 1 2 3; do
    start_toxy "${TOXY_SUITES[$i]}"
    suite "${NAMES[$i]}" toxy "http://127.0.0.1:$TOXY_PORT/hello"
    stop_toxy
  done
  # toxy's slow read once more, against a target that answers on the
  # request's head without waiting for the body, as toxy's own benchmark
  # server does: the seed's setting (bench/RESULTS.md says why it differs).
  start_toxy slow-read
  suite forward+payload+slow-read toxy-on-head "http://127.0.0.1:$TOXY_PORT/hello-on-head"
  stop_toxy
}

run_versus() {
  local i
  for i in 0 1 2 3; do
    if [ -n "${FAULTS[$i]}" ]; then
      suite "${NAMES[$i]}" versus "http://127.0.0.1:$H1PORT/hello" --fault "0=${FAULTS[$i]}"
    else
      # A fault that does nothing still puts the proxy in the path, as
      # toxy is in the path of its unpoisoned suites.
      suite "${NAMES[$i]}" versus "http://127.0.0.1:$H1PORT/hello" --fault "0=latency 0ms"
    fi
  done
}

# The proxy's own cost: a direct endpoint and a proxied one (a fault that
# adds nothing) in one run, at OVERHEAD_RATE each.
run_overhead() {
  echo "# Fault proxy overhead at $OVERHEAD_RATE req/s: direct vs proxied (latency 0ms)"
  "$VERSUS" --rate "$OVERHEAD_RATE" --stop-after "$OVERHEAD_DURATION" --max-in-flight 200 \
    --format vegeta --output "$WORK/overhead.jsonl" -m GET --fault "proxied=latency 0ms" \
    "direct=http://127.0.0.1:$H1PORT/" "proxied=http://127.0.0.1:$H1PORT/" </dev/null
  echo
}

# examples/toxy.toml with nginx's port: the payload suites in one run.
run_scenario() {
  echo "# examples/toxy.toml: the payload suites side by side, versus's faults"
  sed "s|127.0.0.1:8080|127.0.0.1:$H1PORT|" "$REPO_DIR/examples/toxy.toml" > "$WORK/toxy.toml"
  "$VERSUS" run "$WORK/toxy.toml" --rate "$RATE_PAYLOAD" --stop-after "$DURATION" \
    --max-in-flight 200 --timeout 60s --drain 60s --format vegeta --output "$WORK/scenario.jsonl" </dev/null
  echo
}

mkdir -p "$WORK"
resolve_versus
nginx_start "$WORK/nginx"
trap 'stop_toxy; nginx_stop' EXIT
case "$what" in
  toxy) run_toxy ;;
  versus) run_versus ;;
  overhead) run_overhead ;;
  scenario) run_scenario ;;
  all) run_toxy; run_versus; run_overhead ;;
  *) die "usage: $0 [all|toxy|versus|overhead|scenario]" ;;
esac
