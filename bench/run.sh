#!/usr/bin/env bash
# End-to-end benchmark: versus against wrk, oha, hey and h2load on the same
# workload, all against one local nginx (bench/nginx.conf); and against ghz
# on a gRPC server (examples/grpc_server.rs, the Items service of the tests).
#
#   bench/run.sh [single stream2 h2 flow2 scenario sleep100 memory grpc compare]   (default: all)
#   bench/run.sh quick   the regression guard: versus, wrk and the floor clients,
#                        a few seconds each, interleaved, best and median
#
# nginx gets one worker on core 0; every client runs under `taskset -c 1`
# (versus also with --threads 1), under /usr/bin/time for CPU and peak RSS.
# Environment:
#   VERSUS=path        versus binary (default target/release-lto/versus, built if missing)
#   DURATION=10        seconds per timed run
#   REPEAT=1           runs per tool; the run with the least CPU per request is shown
#   STREAM_LINES=N     lines for stream2 (default 60000 * DURATION: about DURATION seconds)
#   MEM_SMALL=100000 MEM_BIG=10000000   request counts of the memory scenario
#   CONNS=50           connections of single and quick (every tool, the floor clients too)
#   CONCS="1000 10000" connection counts of sleep100
#   H2_CONNS=1 H2_STREAMS=50            h2load -c/-m (versus --http2 -c = product)
#   GRPC_MEM_SMALL=100000 GRPC_MEM_BIG=1000000   unary call counts of grpc's memory runs
#   OUT=file           also write the markdown report here
#   QUICK_SECS=3 QUICK_REPEAT=5          quick: seconds per run, rounds
#   VERSUS_BASE=path   quick, sleep100: a second versus binary (e.g. before a change) in the same rounds
#   QUICK_IO="uring epoll"  quick: versus also with each --io driver named, as versus-io-<driver>
#   COMPARE_BIN=path   compare: the benches/compare.rs binary (default: built with cargo bench --no-run)
#   COMPARE_BASE=path  compare: a second one (e.g. before a change), run after it on the same core
# Raw tool outputs go to bench/.work/run-<time>/.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION="${DURATION:-10}"
REPEAT="${REPEAT:-1}"
STREAM_LINES="${STREAM_LINES:-$((60000 * DURATION))}"
MEM_SMALL="${MEM_SMALL:-100000}"
MEM_BIG="${MEM_BIG:-10000000}"
CONNS="${CONNS:-50}"
CONCS="${CONCS:-1000 10000}"
H2_CONNS="${H2_CONNS:-1}"
H2_STREAMS="${H2_STREAMS:-50}"
CLIENT_CORE=1

SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=(single stream2 h2 flow2 scenario sleep100 memory grpc compare)
NEED_NGINX=0
for s in "${SCENARIOS[@]}"; do
  case "$s" in single|stream2|h2|flow2|scenario|sleep100|memory|quick) NEED_NGINX=1 ;; grpc|compare) ;; *) die "unknown scenario '$s' (single stream2 h2 flow2 scenario sleep100 memory grpc compare quick)";; esac
done
GRPC_MEM_SMALL="${GRPC_MEM_SMALL:-100000}"
GRPC_MEM_BIG="${GRPC_MEM_BIG:-1000000}"

[ -x /usr/bin/time ] || die "/usr/bin/time missing (apt-get install time, or run bench/setup.sh)"
command -v taskset >/dev/null || die "taskset missing (util-linux)"
[ "$(nproc)" -ge 2 ] || die "needs at least 2 cores (nginx on core 0, clients on core 1)"
resolve_versus
if [ -n "${VERSUS_BASE:-}" ]; then [ -x "$VERSUS_BASE" ] || die "VERSUS_BASE=$VERSUS_BASE is not an executable"; fi

WORK="$BENCH_DIR/.work/run-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
REPORT="$WORK/report.md"
: > "$REPORT"
GRPC_SERVER_PID=""
cleanup() {
  nginx_stop
  if [ -n "$GRPC_SERVER_PID" ]; then kill "$GRPC_SERVER_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every connection is a file descriptor: sleep100 needs > 10,000.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE="$(ulimit -n)"

have() { command -v "$1" >/dev/null 2>&1; }
MISSING=()
for t in wrk oha hey h2load k6 ghz; do have "$t" || MISSING+=("$t"); done

out() { echo "$*" | tee -a "$REPORT"; }

# The process whose CPU the tables show as the server's ('nginx core %'):
# the nginx worker, or in the grpc scenario the gRPC server.
SERVER_PID=""
if [ "$NEED_NGINX" = 1 ]; then
  nginx_start "$WORK/nginx"
  BASE="http://127.0.0.1:$H1PORT"
  H2BASE="http://127.0.0.1:$H2PORT"
  NGINX_WORKER="$(pgrep -P "$(cat "$NGINX_DIR/nginx.pid")" | head -1)"
  SERVER_PID="$NGINX_WORKER"
fi

# CPU ticks (user+sys) of the server (the nginx worker), to tell whether the
# server or the client was the bottleneck.
nginx_ticks() { if [ -n "$SERVER_PID" ]; then awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; else echo 0; fi; }
CLK_TCK="$(getconf CLK_TCK)"

# --- parsing: each prints "completed rps mean_ms p99_ms errors" -------------
# to_ms VALUE-WITH-UNIT (awk function shared by the parsers)
AWK_UNITS='
function to_ms(v,   n, u) {
  n = v; sub(/[a-zµ]+$/, "", n); u = v; sub(/^[0-9.eE+-]+/, "", u)
  if (u == "s" || u == "secs" || u == "sec") return n * 1000
  if (u == "ms") return n + 0
  if (u == "us" || u == "µs") return n / 1000
  if (u == "ns") return n / 1000000
  if (u == "m") return n * 60000
  if (u == "h") return n * 3600000
  return n * 1000
}'
parse_wrk() {
  awk "$AWK_UNITS"'
    /requests in/ { req = $1 }
    /Requests\/sec:/ { rps = $2 }
    $1 == "Latency" && mean == "" { mean = to_ms($2) }
    $1 == "99%" { p99 = to_ms($2) }
    /Non-2xx or 3xx responses:/ { bad += $NF }
    /Socket errors:/ { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
    END { printf "%d %s %s %s %d\n", req - bad, rps, mean, (p99 == "" ? "-" : p99), bad + err }' "$1"
}
parse_oha() {
  awk "$AWK_UNITS"'
    /Requests\/sec:/ { rps = $2 }
    /^ *Average:/ { mean = to_ms($2 $3) }
    /99\.00% in/ { p99 = to_ms($3 $4) }
    /^ *\[2[0-9][0-9]\] [0-9]+ responses/ { ok += $2 }
    /^ *\[[0-9]+\] [0-9]+ responses/ && !/\[2[0-9][0-9]\]/ { bad += $2 }
    /^Error distribution/ { inerr = 1; next }
    inerr && /^ *\[[0-9]+\]/ && !/deadline/ { gsub(/[\[\]]/, "", $1); bad += $1 }
    END { printf "%d %s %s %s %d\n", ok, rps, mean, p99, bad }' "$1"
}
parse_hey() {
  awk "$AWK_UNITS"'
    /Requests\/sec:/ { rps = $2 }
    /^ *Average:/ { mean = to_ms($2 $3) }
    /99% in/ { p99 = to_ms($3 $4) }
    /^ *\[2[0-9][0-9]\]/ { ok += $2 }
    /^ *\[[013-9][0-9][0-9]\]/ { bad += $2 }
    /^Error distribution/ { inerr = 1; next }
    inerr && /^ *\[[0-9]+\]/ { gsub(/[\[\]]/, "", $1); bad += $1 }
    END { printf "%d %s %s %s %d\n", ok, rps, mean, p99, bad }' "$1"
}
# k6: completed = http_reqs less http_req_failed's count; latency =
# http_req_duration avg and p(99).
parse_k6() {
  awk "$AWK_UNITS"'
    /http_reqs\.*:/ { ok = $2; rps = $3; sub(/\/s$/, "", rps) }
    /http_req_duration\.*:/ {
      for (i = 2; i <= NF; i++) {
        if ($i ~ /^avg=/) { v = $i; sub(/^avg=/, "", v); mean = to_ms(v) }
        if ($i ~ /^p\(99\)=/) { v = $i; sub(/^p\(99\)=/, "", v); p99 = to_ms(v) }
      }
    }
    /http_req_failed\.*:/ { bad = $3 }
    END { printf "%d %s %s %s %d\n", ok - bad, rps, mean, p99, bad }' "$1"
}
# ghz: completed = the [OK] responses; req/s, Average and the 99 % line
# of its summary; errors = every other status and error.
parse_ghz() {
  awk "$AWK_UNITS"'
    /^ *Requests\/sec:/ { rps = $2 }
    /^ *Average:/ { mean = to_ms($2 $3) }
    /^ *99 % in/ { p99 = to_ms($4 $5) }
    /^ *\[OK\] +[0-9]+ +responses/ { ok += $2 }
    /^ *\[[A-Za-z]+\] +[0-9]+ +responses/ && !/\[OK\]/ { bad += $2 }
    /^Error distribution/ { inerr = 1; next }
    inerr && /^ *\[[0-9]+\]/ { gsub(/[\[\]]/, "", $1); bad += $1 }
    END { printf "%d %s %s %s %d\n", ok, rps, mean, (p99 == "" ? "-" : p99), bad }' "$1"
}
parse_h2load() {
  awk "$AWK_UNITS"'
    /^finished in/ { rps = $4 }
    /^requests:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^succeeded/) ok = $i; if ($(i+1) ~ /^failed/) f = $i; if ($(i+1) ~ /^errored/) e = $i } }
    /^time for request:/ { mean = to_ms($6) }
    END { printf "%d %s %s - %d\n", ok, rps, mean, f + e }' "$1"
}
# versus: completed = the summary's total requests; req/s = that / run time;
# latency = the first endpoint's avg and 99%.
parse_versus() {
  awk "$AWK_UNITS"'
    /Completed:/ { total = $5 }
    # "…avg, 1m 17.1s total run time": every part of the duration counts.
    /total run time/ { run = 0; for (i = 1; i <= NF; i++) if ($i == "avg,") for (j = i + 1; $j != "total"; j++) run += to_ms($j) / 1000 }
    /^ *Timing:.* avg, / && mean == "" { mean = to_ms($2) }
    /^ *99% in/ && p99 == "" { p99 = to_ms($3) }
    /^ *Errors: *[0-9]+ \(/ { errs = $2 }
    END { printf "%d %.2f %s %s %d\n", total, (run > 0 ? total / run : 0), mean, p99, errs }' "$1"
}

# The floor clients (bench/floor/*.c, built by setup.sh): one line
# "NAME: N responses, E errors, B bytes/response, T s, R req/s", and with
# option t or T "latency: mean M ms, p99 P ms"; no line (killed by its
# drain limit) is one error.
parse_floor() {
  awk '/^latency: mean/ { mean = $3; p99 = $6; next }
    { for (i = 1; i < NF; i++) {
           if ($(i+1) == "responses,") { ok = $i; seen = 1 }
           if ($(i+1) == "errors,") err = $i
           if ($(i+1) == "req/s") rps = $i } }
    END { if (!seen) print "0 0 - - 1"; else printf "%d %s %s %s %d\n", ok, rps, (mean == "" ? "-" : mean), (p99 == "" ? "-" : p99), err }' "$1"
}

# --- measured runs ------------------------------------------------------------
# measure TAG PARSER SENT_FACTOR -- CMD...   (stdin: STDIN_FILE if set)
# Queues a run; run_queued makes the rows
# "tag completed rps mean p99 errors user sys rss_kb wall ngx_pct factor busy".
# Other work on this machine (a compiler on core 0 or 1) skews every number.
# Before each run wait (up to QUIET_WAIT seconds, default 120) until the
# machine is idle: less than QUIET_PCT% (default 10) of all cores busy over 1 s.
QUIET_WAIT="${QUIET_WAIT:-120}"
QUIET_PCT="${QUIET_PCT:-10}"
busy_pct() {
  local a b
  a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
  local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) total=0 i
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  [ "$total" -gt 0 ] || { echo 0; return; }
  echo $(( 100 * (total - idle) / total ))
}
wait_quiet() {
  local waited=0 b
  while :; do
    b="$(busy_pct)"
    [ "$b" -lt "$QUIET_PCT" ] && { BUSY_BEFORE="$b"; return 0; }
    if [ "$waited" -ge "$QUIET_WAIT" ]; then
      log "  machine still ${b}% busy after ${waited}s: measuring anyway (marked in the table)"
      BUSY_BEFORE="$b"; return 0
    fi
    [ "$waited" = 0 ] && log "  machine ${b}% busy (other work): waiting up to ${QUIET_WAIT}s"
    sleep 4; waited=$((waited + 5))
  done
}

STDIN_FILE=""
# measure queues a tool's run; run_queued runs the queue REPEAT times
# round-robin (A B C, A B C, ...), so that the machine's drift over minutes
# falls on every tool alike, and appends each tool's best run (least CPU per
# request) to $ROWS in queue order.
QUEUE_TAGS=(); QUEUE_PARSERS=(); QUEUE_FACTORS=(); QUEUE_CMDS=(); QUEUE_STDIN=()
measure() {
  local tag="$1" parser="$2" factor="$3"; shift 4
  QUEUE_TAGS+=("$tag"); QUEUE_PARSERS+=("$parser"); QUEUE_FACTORS+=("$factor")
  QUEUE_CMDS+=("$(printf '%q ' "$@")"); QUEUE_STDIN+=("$STDIN_FILE")
}

run_queued() {
  local n=${#QUEUE_TAGS[@]} i j
  local -a best=() bestcpu=()
  for i in $(seq 1 "$REPEAT"); do
    for ((j = 0; j < n; j++)); do
      local row cpu
      eval "set -- ${QUEUE_CMDS[$j]}"
      row="$(STDIN_FILE="${QUEUE_STDIN[$j]}" run_once "${QUEUE_TAGS[$j]}" "${QUEUE_PARSERS[$j]}" "${QUEUE_FACTORS[$j]}" "$i" "$@")"
      cpu="$(echo "$row" | awk '{ n = $2 * $12; print (n > 0 ? ($7 + $8) / n : 1e99), (n > 0 ? $7 / n : 1e99) }')"
      echo "${QUEUE_TAGS[$j]} $cpu" >> "$WORK/$SCEN.all"   # every run's CPU and user CPU s/request
      cpu="${cpu%% *}"
      if [ -z "${bestcpu[$j]:-}" ] || awk -v a="$cpu" -v b="${bestcpu[$j]}" 'BEGIN { exit !(a < b) }'; then
        best[$j]="$row"; bestcpu[$j]="$cpu"
      fi
      sleep 1
    done
  done
  for ((j = 0; j < n; j++)); do
    echo "${best[$j]}" >> "$ROWS"
    echo "${QUEUE_CMDS[$j]}" >> "$WORK/$SCEN.cmds"
  done
  QUEUE_TAGS=(); QUEUE_PARSERS=(); QUEUE_FACTORS=(); QUEUE_CMDS=(); QUEUE_STDIN=()
}

# run_once TAG PARSER SENT_FACTOR I CMD...: one run (stdin: STDIN_FILE if
# set); prints "tag completed rps mean p99 errors user sys rss_kb wall
# ngx_pct factor busy".
run_once() {
  local tag="$1" parser="$2" factor="$3" i="$4"; shift 4
  local base="$WORK/$SCEN.$tag.$i"
  echo "taskset -c $CLIENT_CORE $*" > "$base.cmd"
  wait_quiet
  log "$SCEN/$tag run $i/$REPEAT: $*"
  local t0 t1 n0 n1
  n0="$(nginx_ticks)"; t0="$(date +%s.%N)"
  set +e
  if [ -n "$STDIN_FILE" ]; then
    /usr/bin/time -f '%U %S %M %e' -o "$base.time" taskset -c "$CLIENT_CORE" "$@" < "$STDIN_FILE" > "$base.out" 2>&1
  else
    /usr/bin/time -f '%U %S %M %e' -o "$base.time" taskset -c "$CLIENT_CORE" "$@" < /dev/null > "$base.out" 2>&1
  fi
  local rc=$?
  set -e
  t1="$(date +%s.%N)"; n1="$(nginx_ticks)"
  if [ $rc -ne 0 ]; then
    log "  exit code $rc (output: $base.out)"; tail -5 "$base.out" >&2 || true
  fi
  local parsed timeline
  parsed="$("$parser" "$base.out")"
  timeline="$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.:]+$' "$base.time" | tail -1)"
  [ -n "$timeline" ] || timeline="0 0 0 0"
  local ngx
  ngx="$(awk -v a="$n0" -v b="$n1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" 'BEGIN { printf "%.0f", (b - a) / hz / (t1 - t0) * 100 }')"
  local row="$tag $parsed $timeline $ngx $factor $BUSY_BEFORE"
  echo "$row" > "$base.row"
  log "  -> $(echo "$row" | awk '{ n = $2 * $12; printf "%d ok, %s req/s, %.2f µs CPU/req, %d KB RSS, %d errors, nginx %s%%", $2, $3, (n > 0 ? ($7 + $8) * 1e6 / n : 0), $9, $6, $11 }')"
  echo "$row"
}

# table ROWS [latency]: markdown table, ratios against the row tagged versus.
table() {
  local rows="$1" lat="${2:-}"
  awk -v lat="$lat" '
    { tag[NR] = $1; ok[NR] = $2; rps[NR] = $3; mean[NR] = $4; p99[NR] = $5; err[NR] = $6
      u[NR] = $7; s[NR] = $8; rss[NR] = $9; sent[NR] = $2 * $12; ngx[NR] = $11; busy[NR] = $13
      cpu[NR] = (sent[NR] > 0 ? ($7 + $8) * 1e6 / sent[NR] : 0)
      if ($1 == "versus" && !vi) vi = NR
      if ($1 == "floor-uring-dm") fi = NR }
    function ratio(a, b) { return (b > 0 && a > 0) ? sprintf("%.2fx", a / b) : "-" }
    END {
      printf "| tool | completed | req/s | CPU µs/req (user+sys) | user µs | sys µs | peak RSS MB |"
      if (lat) printf " mean ms | p99 ms |"
      printf " errors | nginx core %% | busy before %% | CPU/req vs versus | req/s vs versus | RSS vs versus |"
      if (fi) printf " CPU/req vs floor |"
      printf "\n|---|---:|---:|---:|---:|---:|---:|"
      if (lat) printf "---:|---:|"
      printf "---:|---:|---:|---:|---:|---:|"
      if (fi) printf "---:|"
      printf "\n"
      for (i = 1; i <= NR; i++) {
        printf "| %s | %d | %.0f | %.2f | %.2f | %.2f | %.1f |", tag[i], ok[i], rps[i], cpu[i],
          (sent[i] > 0 ? u[i] * 1e6 / sent[i] : 0), (sent[i] > 0 ? s[i] * 1e6 / sent[i] : 0), rss[i] / 1024
        if (lat) printf " %s | %s |", (mean[i] == "-" ? "-" : sprintf("%.2f", mean[i])), (p99[i] == "-" ? "-" : sprintf("%.2f", p99[i]))
        printf " %d | %s | %s | %s | %s | %s |", err[i], ngx[i], busy[i], ratio(cpu[i], cpu[vi]), ratio(rps[i], rps[vi]), ratio(rss[i], rss[vi])
        if (fi) printf " %s |", ratio(cpu[i], cpu[fi])
        printf "\n"
      }
    }' "$rows"
}

commands() {
  out ""
  out "Commands (each under \`/usr/bin/time -f '%U %S %M %e' taskset -c $CLIENT_CORE\`):"
  out ""
  local line
  while IFS= read -r line; do
    out "    $(echo "$line" | sed "s|$VERSUS|versus|g; s|$BENCH_DIR/.tools/bin/||g")"
  done < "$WORK/$SCEN.cmds"
  [ -n "$STDIN_FILE" ] && out "    (versus's stdin: $(basename "$STDIN_FILE"))"
  out ""
}

header() {
  SCEN="$1"; ROWS="$WORK/$SCEN.rows"; : > "$ROWS"; : > "$WORK/$SCEN.cmds"; : > "$WORK/$SCEN.all"; STDIN_FILE=""
  out ""
  out "## $SCEN — $2"
  out ""
  out "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  out ""
}

# --- scenarios --------------------------------------------------------------

# measure_versus_single TAG BINARY [ARGS...]: versus's single-request run.
measure_versus_single() {
  local tag="$1" bin="$2"; shift 2
  measure "$tag" parse_versus 1 -- "$bin" "$@" --method GET -c "$CONNS" --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/"
}

# The floor clients (bench/floor, built by setup.sh into bench/.tools/bin),
# when built: the cheapest honest HTTP/1.1 clients on this machine. The
# latency-faithful floor is floor-uring-dm (io_uring with DEFER_TASKRUN,
# multishot recv, every answer handled as it arrives); the tables show
# every tool's CPU per request against it.
measure_floors() {
  have floor-epoll && measure floor-epoll parse_floor 1 -- floor-epoll "$CONNS" "$DURATION" 127.0.0.1 "$H1PORT"
  if have floor-uring; then
    measure floor-uring-d parse_floor 1 -- floor-uring "$CONNS" "$DURATION" 127.0.0.1 "$H1PORT" d
    measure floor-uring-dm parse_floor 1 -- floor-uring "$CONNS" "$DURATION" 127.0.0.1 "$H1PORT" dm
    # The floor doing what versus must: each request sent at once by a
    # plain send, and timed (an answer by its turn's clock), a histogram
    # record each: what honest latency and versus's sending cost the floor.
    measure floor-uring-dmxT parse_floor 1 -- floor-uring "$CONNS" "$DURATION" 127.0.0.1 "$H1PORT" dmxT
  fi
  return 0
}

# cpu_of TAG: the tag's CPU µs per request in $ROWS.
cpu_of() { awk -v t="$1" '$1 == t && $2 * $12 > 0 { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS"; }

floor_line() {
  local v f
  v="$(cpu_of versus)"; f="$(cpu_of floor-uring-dm)"
  [ -n "$v" ] && [ -n "$f" ] || return 0
  out ""
  out "versus against the latency-faithful floor (floor-uring-dm): $(printf %.2f "$v") µs vs $(printf %.2f "$f") µs per request = $(awk -v a="$v" -v b="$f" 'BEGIN { printf "%.2fx", a / b }') (target ≤ 1.05x)"
}

sc_single() {
  header single "single-request mode, GET /, HTTP/1.1, $CONNS connections, ${DURATION}s"
  have wrk && measure wrk parse_wrk 1 -- wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$BASE/"
  have oha && measure oha parse_oha 1 -- oha -c "$CONNS" -z "${DURATION}s" --no-tui "$BASE/"
  have hey && measure hey parse_hey 1 -- hey -c "$CONNS" -z "${DURATION}s" "$BASE/"
  measure_versus_single versus "$VERSUS"
  measure_floors
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  floor_line
  commands
}

# The regression guard, for before/after checks of a hot-path change:
# versus (and VERSUS_BASE, when given), wrk and the floor clients,
# QUICK_SECS each, QUICK_REPEAT rounds round-robin; every tool's best and
# median CPU per request over the rounds.
sc_quick() {
  local DURATION="${QUICK_SECS:-3}" REPEAT="${QUICK_REPEAT:-5}"
  header quick "regression guard: single-request mode, GET /, HTTP/1.1, $CONNS connections, ${DURATION}s per run, $REPEAT rounds round-robin"
  measure_versus_single versus "$VERSUS"
  [ -n "${VERSUS_BASE:-}" ] && measure_versus_single versus-base "$VERSUS_BASE"
  local io
  for io in ${QUICK_IO:-}; do measure_versus_single "versus-io-$io" "$VERSUS" --io "$io"; done
  have wrk && measure wrk parse_wrk 1 -- wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$BASE/"
  measure_floors
  run_queued
  table "$ROWS" lat >> "$WORK/quick.best.md"
  {
    echo "| tool | runs | CPU µs/req best | CPU µs/req median | median vs versus | median vs floor | user µs/req median | user median vs versus | errors (best run) | busy before % (best run) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -v rows="$ROWS" '
      BEGIN { while ((getline l < rows) > 0) { split(l, f, " "); err[f[1]] = f[6]; busy[f[1]] = f[13] } }
      { if (!($1 in n)) order[++k] = $1; n[$1]++; v[$1, n[$1]] = $2 * 1e6; u[$1, n[$1]] = $3 * 1e6 }
      # The median of the m values x[t, 1..m]; the least of them in low[t].
      function median(x, t, low,   i, j, y, m, a) {
        m = n[t]; for (i = 1; i <= m; i++) a[i] = x[t, i]
        for (i = 2; i <= m; i++) { y = a[i]; for (j = i - 1; j >= 1 && a[j] > y; j--) a[j + 1] = a[j]; a[j + 1] = y }
        low[t] = a[1]; return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
      function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2fx", a / b) : "-" }
      END {
        for (i = 1; i <= k; i++) { med[order[i]] = median(v, order[i], best); umed[order[i]] = median(u, order[i], ubest) }
        for (i = 1; i <= k; i++) { t = order[i]
          printf "| %s | %d | %.2f | %.2f | %s | %s | %.3f | %s | %s | %s |\n", t, n[t], best[t], med[t], ratio(med[t], med["versus"]), ratio(med[t], med["floor-uring-dm"]), umed[t], ratio(umed[t], umed["versus"]), err[t], busy[t] } }' "$WORK/$SCEN.all"
  } | tee -a "$REPORT"
  out ""
  out "(best-run table with req/s, latency and RSS: $WORK/quick.best.md)"
  commands
}

sc_stream2() {
  header stream2 "$STREAM_LINES JSON-RPC lines (versus gen ethereum) POSTed to two endpoints, compared (--compare auto), 50 in flight per endpoint; single-request mode in the same round-robin"
  local lines="$WORK/ethereum-$STREAM_LINES.jsonl"
  "$VERSUS" gen ethereum -n "$STREAM_LINES" > "$lines"
  out "input: $(wc -l < "$lines") lines, $(wc -c < "$lines") bytes (avg $(( $(wc -c < "$lines") / STREAM_LINES )) bytes/line)"
  out ""
  # The ratio's single figure is measured here, each run beside a stream
  # run (as flow2 and scenario do): the host drifts by more than the
  # margin between runs minutes apart.
  measure single parse_versus 1 -- "$VERSUS" --method GET -c 50 --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/"
  STDIN_FILE="$lines"
  # Completed counts both endpoints' requests: CPU per request SENT.
  measure versus parse_versus 1 -- "$VERSUS" -c 50 --threads 1 "a=$BASE/" "b=$BASE/"
  STDIN_FILE=""
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  local s2 single
  s2="$(cpu_of versus)"; single="$(cpu_of single)"
  out ""
  out "CPU per request sent: $(printf %.2f "$s2") µs vs single-request mode $(printf %.2f "$single") µs = $(awk -v a="$s2" -v b="$single" 'BEGIN { printf "%.2fx", a / b }') (target ≤ 1.10x)"
  STDIN_FILE="$lines"; commands; STDIN_FILE=""
}

sc_h2() {
  local total=$((H2_CONNS * H2_STREAMS))
  header h2 "HTTP/2 cleartext (h2c prior knowledge), GET /, $H2_CONNS connection(s) x $H2_STREAMS streams, ${DURATION}s"
  have h2load && measure h2load parse_h2load 1 -- h2load -t1 -c "$H2_CONNS" -m "$H2_STREAMS" -D "$DURATION" "$H2BASE/"
  measure versus parse_versus 1 -- "$VERSUS" --http2 --method GET -c "$total" --stop-after="${DURATION}s" --threads 1 --compare none "$H2BASE/"
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  out ""
  out "(h2load prints no percentiles; its mean is 'time for request'. versus --threads 1 opens one connection; with H2_CONNS>1 the connection counts differ.)"
  commands
}

# A two-step flow (examples/flow_bench.rs: step 2 takes a value from step
# 1's answer) against the plain single-request stream, run in the same
# round-robin: CPU per request of each, and their ratio.
# example NAME: the path of examples/NAME.rs built: beside $VERSUS when it
# was built with it, else built now from this checkout (into cargo's target
# directory, which a copied $VERSUS is not in).
example() {
  local bin="$(dirname "$VERSUS")/examples/$1"
  if [ ! -x "$bin" ]; then
    log "building examples/$1 from this checkout (cargo build --profile release-lto --example $1)"
    (cd "$REPO_DIR" && cargo build --profile release-lto --example "$1") >&2 || die "cannot build the $1 example"
    bin="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release-lto/examples/$1"
  fi
  echo "$bin"
}

sc_flow2() {
  header flow2 "two-step flow (examples/flow_bench.rs) against the plain stream, GET /, HTTP/1.1, 50 virtual users, ${DURATION}s"
  local bench_bin
  bench_bin="$(example flow_bench)"
  measure versus parse_versus 1 -- "$VERSUS" --method GET -c 50 --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/"
  measure flow2 parse_versus 1 -- "$bench_bin" -c 50 --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/"
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  local plain flow
  plain="$(awk '$1 == "versus" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  flow="$(awk '$1 == "flow2" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  out ""
  out "CPU per request: two-step flow $(printf %.2f "$flow") µs vs plain stream $(printf %.2f "$plain") µs = $(awk -v a="$flow" -v b="$plain" 'BEGIN { printf "%.2fx", a / b }') (target ≤ 1.20x)"
  commands
}

# A two-step scenario file (bench/scenario.toml: step 2 takes a value of
# step 1's answer) against the plain single-request stream, and k6 running
# the same sequence (bench/k6-scenario.js), in the same round-robin.
sc_scenario() {
  header scenario "two-step scenario file (bench/scenario.toml) against the plain stream and k6 (bench/k6-scenario.js), GET /, HTTP/1.1, 50 virtual users, ${DURATION}s"
  measure versus parse_versus 1 -- "$VERSUS" --method GET -c 50 --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/"
  measure scenario parse_versus 1 -- "$VERSUS" run "$BENCH_DIR/scenario.toml" -c 50 --stop-after="${DURATION}s" --threads 1 --compare none -q "$BASE/"
  if have k6; then
    measure k6 parse_k6 1 -- env BASE="$BASE" VUS=50 DURATION="${DURATION}s" k6 run --quiet --no-color "$BENCH_DIR/k6-scenario.js"
  fi
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  local plain scen k6cpu
  plain="$(awk '$1 == "versus" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  scen="$(awk '$1 == "scenario" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  out ""
  out "CPU per request: scenario $(printf %.2f "$scen") µs vs plain stream $(printf %.2f "$plain") µs = $(awk -v a="$scen" -v b="$plain" 'BEGIN { printf "%.2fx", a / b }') (target ≤ 1.20x)"
  k6cpu="$(awk '$1 == "k6" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  if [ -n "$k6cpu" ]; then
    out "CPU per request: k6 $(printf %.2f "$k6cpu") µs = $(awk -v a="$k6cpu" -v b="$scen" 'BEGIN { printf "%.2fx", a / b }') the scenario's"
  else
    out "(k6 missing: bench/setup.sh builds it with go install)"
  fi
  commands
}

sc_sleep100() {
  local c
  for c in $CONCS; do
    if [ "$NOFILE" -lt $((c + 100)) ]; then
      out ""; out "## sleep100 c=$c — SKIPPED: ulimit -n is $NOFILE"; continue
    fi
    header "sleep100-c$c" "GET /sleep (answers after 100 ms), $c connections, ${DURATION}s"
    have wrk && measure wrk parse_wrk 1 -- wrk -t1 -c "$c" -d"${DURATION}s" --timeout 10s --latency "$BASE/sleep"
    have oha && measure oha parse_oha 1 -- oha -c "$c" -z "${DURATION}s" --no-tui "$BASE/sleep"
    measure versus parse_versus 1 -- "$VERSUS" --method GET -c "$c" --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/sleep"
    if [ -n "${VERSUS_BASE:-}" ]; then
      measure versus-base parse_versus 1 -- "$VERSUS_BASE" --method GET -c "$c" --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/sleep"
    fi
    # A check that --lead (default 1024) does not cap requests in flight:
    # the window is never smaller than twice the connections, so both runs
    # keep every connection busy.
    if [ "$c" -gt 1024 ]; then
      measure "versus--lead-$((2 * c))" parse_versus 1 -- "$VERSUS" --method GET -c "$c" --lead $((2 * c)) --stop-after="${DURATION}s" --threads 1 --compare none "$BASE/sleep"
    fi
    run_queued
  table "$ROWS" lat | tee -a "$REPORT"
    local ideal; ideal=$(( c * 10 ))
    out ""
    out "ideal rate with every connection busy: $ideal req/s (c / 0.1 s); 'nginx core %' near 100 means the one nginx worker, not the client, set the pace."
    commands
  done
}

sc_memory() {
  local REPEAT=1   # peak RSS does not need the best of several runs
  header memory "versus single-request mode peak RSS: $MEM_SMALL vs $MEM_BIG requests, GET /, 50 connections"
  measure "versus" parse_versus 1 -- "$VERSUS" --method GET -c 50 --stop-after="$MEM_SMALL" --threads 1 --compare none "$BASE/"
  measure "versus-$MEM_BIG" parse_versus 1 -- "$VERSUS" --method GET -c 50 --stop-after="$MEM_BIG" --threads 1 --compare none "$BASE/"
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  out ""
  out "peak RSS $MEM_BIG vs $MEM_SMALL requests: $(awk 'NR == 1 { a = $9 } NR == 2 { b = $9 } END { printf "%.1f MB vs %.1f MB = %.2fx (target ≤ 1.10x)", b / 1024, a / 1024, b / a }' "$ROWS")"
  commands
}

# The gRPC server (examples/grpc_server.rs: the Items service of the
# tests), one runtime thread pinned to core 0 like nginx's worker; versus
# and ghz call items.Items/GetItem on one HTTP/2 connection with 50 calls
# in flight, schema from the same .proto. Then the memory of a long run:
# each tool's peak RSS after GRPC_MEM_SMALL and GRPC_MEM_BIG calls (ghz
# keeps every result to sort for its percentiles; versus records into
# histograms).
sc_grpc() {
  header grpc "gRPC unary items.Items/GetItem (examples/grpc_server.rs on core 0), 1 connection, 50 calls in flight, ${DURATION}s"
  local server_bin proto port
  server_bin="$(example grpc_server)"
  proto="$REPO_DIR/tests/fixtures/grpc/items.proto"
  port="$(free_port)"
  taskset -c 0 "$server_bin" "127.0.0.1:$port" 1 2> "$WORK/grpc_server.log" &
  GRPC_SERVER_PID=$!
  local i
  for i in $(seq 1 50); do
    if "$VERSUS" -q --proto "$proto" --body '{"id": "1"}' --stop-after 1 "grpc://127.0.0.1:$port/items.Items/GetItem" >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  SERVER_PID="$(pgrep -P "$GRPC_SERVER_PID" | head -1 || true)"; [ -n "$SERVER_PID" ] || SERVER_PID="$GRPC_SERVER_PID"
  local target="127.0.0.1:$port" body='{"id": "1"}'
  have ghz && measure ghz parse_ghz 1 -- ghz --insecure --proto "$proto" --import-paths "$(dirname "$proto")" --call items.Items/GetItem -d "$body" -c 50 --connections 1 -z "${DURATION}s" "$target"
  measure versus parse_versus 1 -- "$VERSUS" --proto "$proto" --body "$body" -c 50 --stop-after="${DURATION}s" --threads 1 --compare none "grpc://$target/items.Items/GetItem"
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  local v g
  v="$(awk '$1 == "versus" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  g="$(awk '$1 == "ghz" { print ($7 + $8) * 1e6 / ($2 * $12) }' "$ROWS")"
  out ""
  if [ -n "$g" ]; then
    out "CPU per unary call: versus $(printf %.2f "$v") µs vs ghz $(printf %.2f "$g") µs = $(awk -v a="$v" -v b="$g" 'BEGIN { printf "%.2fx", a / b }') (target ≤ 1.00x)"
  else
    out "(ghz missing: bench/setup.sh builds it with go install)"
  fi
  out "('nginx core %' is the gRPC server's CPU here.)"
  commands
  # Memory over a long run: the same call, counted.
  local REPEAT=1
  header grpc-memory "peak RSS after $GRPC_MEM_SMALL and $GRPC_MEM_BIG unary calls, 1 connection, 50 in flight"
  measure versus parse_versus 1 -- "$VERSUS" --proto "$proto" --body "$body" -c 50 --stop-after="$GRPC_MEM_SMALL" --threads 1 --compare none "grpc://$target/items.Items/GetItem"
  measure "versus-$GRPC_MEM_BIG" parse_versus 1 -- "$VERSUS" --proto "$proto" --body "$body" -c 50 --stop-after="$GRPC_MEM_BIG" --threads 1 --compare none "grpc://$target/items.Items/GetItem"
  if have ghz; then
    measure ghz parse_ghz 1 -- ghz --insecure --proto "$proto" --import-paths "$(dirname "$proto")" --call items.Items/GetItem -d "$body" -c 50 --connections 1 -n "$GRPC_MEM_SMALL" "$target"
    measure "ghz-$GRPC_MEM_BIG" parse_ghz 1 -- ghz --insecure --proto "$proto" --import-paths "$(dirname "$proto")" --call items.Items/GetItem -d "$body" -c 50 --connections 1 -n "$GRPC_MEM_BIG" "$target"
  fi
  run_queued
  table "$ROWS" lat | tee -a "$REPORT"
  out ""
  out "peak RSS $GRPC_MEM_BIG vs $GRPC_MEM_SMALL calls: $(awk -v big="versus-$GRPC_MEM_BIG" '$1 == "versus" { a = $9 } $1 == big { b = $9 } END { printf "versus %.1f MB vs %.1f MB = %.2fx", b / 1024, a / 1024, b / a }' "$ROWS")$(awk -v big="ghz-$GRPC_MEM_BIG" '$1 == "ghz" { a = $9 } $1 == big { b = $9 } END { if (a > 0) printf "; ghz %.1f MB vs %.1f MB = %.2fx", b / 1024, a / 1024, b / a }' "$ROWS") (versus's target: flat, ≤ 1.10x)"
  commands
  kill "$GRPC_SERVER_PID" 2>/dev/null || true; GRPC_SERVER_PID=""; SERVER_PID="${NGINX_WORKER:-}"
}

# The JSON comparison alone, on one core: per case, MB/s of both bodies
# compared, beside serde_json's and simd-json's parse of the same bytes.
sc_compare() {
  out ""
  out "## compare — JSON comparison (benches/compare.rs) on core $CLIENT_CORE, against the parse limit"
  local bin="${COMPARE_BIN:-}"
  if [ -z "$bin" ]; then
    bin="$(cd "$REPO_DIR" && cargo bench --bench compare --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)"
    [ -n "$bin" ] || die "cargo bench --bench compare --no-run gave no executable"
    case "$bin" in /*) ;; *) bin="$REPO_DIR/$bin" ;; esac
  fi
  out ""
  taskset -c "$CLIENT_CORE" "$bin" | tee -a "$REPORT"
  if [ -n "${COMPARE_BASE:-}" ]; then
    out ""
    out "before ($COMPARE_BASE):"
    out ""
    taskset -c "$CLIENT_CORE" "$COMPARE_BASE" | tee -a "$REPORT"
  fi
}

out "# versus benchmark run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
out ""
out "- host: $(nproc) cores, $(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }'), kernel $(uname -r)"
out "- versus: $VERSUS ($("$VERSUS" --version 2>/dev/null || echo '?'))"
out "- $( [ "$NEED_NGINX" = 1 ] && nginx -v 2>&1 || echo 'no nginx (grpc only)'), one worker on core 0; clients on core $CLIENT_CORE; DURATION=${DURATION}s REPEAT=$REPEAT (best of REPEAT by CPU/request)"
out "- tools: $(for t in wrk oha hey h2load k6 ghz; do have "$t" && printf '%s ' "$t"; done)$([ ${#MISSING[@]} -gt 0 ] && echo "(missing: ${MISSING[*]} — run bench/setup.sh)")"
out "- CPU µs/req = (user + sys CPU seconds of the client process) × 10⁶ / completed requests (2xx). Peak RSS = /usr/bin/time %M."
out "- 'nginx core %' = the nginx worker's CPU over the run (near 100: the server set the pace). 'busy before %' = all-core CPU use by other work in the second before the run (QUIET_PCT=$QUIET_PCT; higher values mean disturbed numbers)."
out "- raw outputs: $WORK"

for s in "${SCENARIOS[@]}"; do "sc_$s"; done

if [ -n "${OUT:-}" ]; then cp "$REPORT" "$OUT"; log "report written to $OUT"; fi
log "report: $REPORT"
