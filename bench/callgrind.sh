#!/usr/bin/env bash
# Instructions per request of versus vs wrk (or, in h2 mode, vs h2load),
# counted by valgrind's callgrind: a count of executed user-space
# instructions, unaffected by other work on the machine (unlike CPU time).
#
#   bench/callgrind.sh            # VERSUS=path, SMALL=5000, BIG=25000
#   bench/callgrind.sh h2         # HTTP/2 (h2c): versus --http2 vs h2load
#   bench/callgrind.sh stream2    # run.sh stream2's compared stream: SMALL and
#                                 # BIG `versus gen ethereum` lines POSTed to two
#                                 # endpoints, per request SENT; no peer
#   PEER_RUNS=0 STRACE_RUNS=0 bench/callgrind.sh   # versus's instructions alone
#                                 # (a before/after check of a hot-path change)
#
# Method (printed with the results):
# * Both tools run single-request mode against the benchmark nginx, GET /,
#   HTTP/1.1, 50 connections, one thread (versus --threads 1, wrk -t1).
#   h2 mode runs them as `run.sh h2` does: h2c with prior knowledge, one
#   connection of H2_STREAMS=50 streams (h2load -t1 -c1 -m50, versus --http2
#   -c 50 --threads 1), and h2load stops after SMALL and BIG requests too
#   (-n).
# * Each tool runs twice, a short and a long run; instructions per request is
#   the MARGINAL cost (Ir_long - Ir_short) / (requests_long - requests_short),
#   so start-up and shutdown (runtime creation, connection set-up, report)
#   cancel out. versus stops after SMALL and BIG requests (--stop-after=N);
#   wrk has no count option, so it runs WRK_SHORT and WRK_LONG seconds and
#   its own "N requests in" line gives the count.
# * callgrind counts user space only: the kernel's share (syscalls, the TCP
#   stack) is not in Ir. So the same runs are repeated under `strace -f -c`
#   for syscalls per request (same marginal method), which is where the kernel
#   time comes from.
# * The top functions of versus's long run (callgrind_annotate, exclusive Ir)
#   follow, then the request path's layers with all they call (inclusive Ir
#   per request).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODE="${1:-h1}"
case "$MODE" in h1|h2|stream2) ;; *) die "unknown mode '$MODE' (h1 h2 stream2)" ;; esac
H2_STREAMS="${H2_STREAMS:-50}"
SMALL="${SMALL:-5000}"
BIG="${BIG:-25000}"
WRK_SHORT="${WRK_SHORT:-3}"
WRK_LONG="${WRK_LONG:-13}"
command -v valgrind >/dev/null || die "valgrind missing (apt-get install valgrind)"
command -v callgrind_annotate >/dev/null || die "callgrind_annotate missing (valgrind package)"
resolve_versus

WORK="$BENCH_DIR/.work/callgrind-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
trap nginx_stop EXIT
trap 'exit 130' INT TERM
nginx_start "$WORK/nginx"
if [ "$MODE" = h2 ]; then URL="http://127.0.0.1:$H2PORT/"; else URL="http://127.0.0.1:$H1PORT/"; fi

# cg NAME CMD...: run CMD under callgrind, print total Ir
cg() {
  local name="$1"; shift
  log "callgrind $name: $*"
  valgrind --tool=callgrind --dump-instr=no --collect-systime=no \
    --callgrind-out-file="$WORK/$name.cg" "$@" > "$WORK/$name.out" 2> "$WORK/$name.vg" \
    || { tail -5 "$WORK/$name.vg" >&2; die "$name failed under valgrind"; }
  awk '/^(summary|totals):/ { print $2; exit }' "$WORK/$name.cg"
}
# sc NAME CMD...: run CMD under strace -f -c, print total syscalls
sc() {
  local name="$1"; shift
  log "strace $name: $*"
  strace -f -c -o "$WORK/$name.strace" "$@" > "$WORK/$name.out" 2>&1 || die "$name failed under strace"
  awk '$NF == "total" { print $4 + 0 }' "$WORK/$name.strace" | tail -1
}
versus_reqs() { awk '/Completed:/ { print $5 }' "$1"; }
wrk_reqs() { awk '/requests in/ { print $1 }' "$1"; }
h2load_reqs() { awk '/^requests:/ { print $8 }' "$1"; }

TARGETS=("$URL")
if [ "$MODE" = h2 ]; then
  V=("$VERSUS" --http2 --method GET -c "$H2_STREAMS" --threads 1 --compare none)
  PEER=h2load
elif [ "$MODE" = stream2 ]; then
  # The lines from a file (--stop-after takes SMALL or BIG of them); each
  # is sent to both endpoints and compared, as in run.sh stream2.
  "$VERSUS" gen ethereum -n "$BIG" > "$WORK/ethereum.txt"
  V=("$VERSUS" -c 50 --threads 1 --input lines --input-file "$WORK/ethereum.txt")
  TARGETS=("a=$URL" "b=$URL")
  PEER=none
else
  V=("$VERSUS" --method GET -c 50 --threads 1 --compare none)
  PEER=wrk
fi
W=(wrk -t1 -c50)
H=(h2load -t1 -c1 -m "$H2_STREAMS")

vs_ir1="$(cg versus-small "${V[@]}" --stop-after="$SMALL" "${TARGETS[@]}")"; vs_n1="$(versus_reqs "$WORK/versus-small.out")"
vs_ir2="$(cg versus-big "${V[@]}" --stop-after="$BIG" "${TARGETS[@]}")";     vs_n2="$(versus_reqs "$WORK/versus-big.out")"
# The peer (wrk, or h2load in h2 mode): its short and long runs, under
# callgrind (peer_cg) or strace (peer_sc); sets the count and requests.
peer_run() {
  local how="$1" name="$2" short="$3"
  if [ "$PEER" = h2load ]; then
    local n="$BIG"; [ "$short" = 1 ] && n="$SMALL"
    count="$("$how" "$name" "${H[@]}" -n "$n" "$URL")"; reqs="$(h2load_reqs "$WORK/$name.out")"
  else
    local d="$WRK_LONG"; [ "$short" = 1 ] && d="$WRK_SHORT"
    count="$("$how" "$name" "${W[@]}" -d"${d}s" "$URL")"; reqs="$(wrk_reqs "$WORK/$name.out")"
  fi
}
have_peer=0
if [ "${PEER_RUNS:-1}" != 0 ] && command -v "$PEER" >/dev/null; then
  have_peer=1
  peer_run cg "$PEER-short" 1; wk_ir1="$count"; wk_n1="$reqs"
  peer_run cg "$PEER-long" 0;  wk_ir2="$count"; wk_n2="$reqs"
fi
have_strace=0
if [ "${STRACE_RUNS:-1}" != 0 ] && command -v strace >/dev/null; then
  have_strace=1
  vs_sc1="$(sc versus-small-strace "${V[@]}" --stop-after="$SMALL" "${TARGETS[@]}")"; vs_sn1="$(versus_reqs "$WORK/versus-small-strace.out")"
  vs_sc2="$(sc versus-big-strace "${V[@]}" --stop-after="$BIG" "${TARGETS[@]}")";     vs_sn2="$(versus_reqs "$WORK/versus-big-strace.out")"
  if [ "$have_peer" = 1 ]; then
    peer_run sc "$PEER-short-strace" 1; wk_sc1="$count"; wk_sn1="$reqs"
    peer_run sc "$PEER-long-strace" 0;  wk_sc2="$count"; wk_sn2="$reqs"
  fi
fi

per() { awk -v a="$1" -v b="$2" -v n="$3" -v m="$4" 'BEGIN { if (m - n > 0) printf "%.0f", (b - a) / (m - n); else print "-" }'; }
per2() { awk -v a="$1" -v b="$2" -v n="$3" -v m="$4" 'BEGIN { if (m - n > 0) printf "%.2f", (b - a) / (m - n); else print "-" }'; }

if [ "$PEER" = none ]; then
  echo "# callgrind: instructions per request sent, versus's compared stream"
else
  echo "# callgrind: instructions per request, versus vs $PEER"
fi
echo
if [ "$MODE" = h2 ]; then
  echo "GET $URL (nginx, bench/nginx.conf), HTTP/2 cleartext (prior knowledge), 1 connection x $H2_STREAMS streams, one client thread."
elif [ "$MODE" = stream2 ]; then
  echo "versus gen ethereum lines POSTed to two endpoints (both $URL), compared, 50 connections each, one client thread; requests = requests sent (both endpoints')."
else
  echo "GET $URL (nginx, bench/nginx.conf), HTTP/1.1, 50 connections, one client thread."
fi
echo "Marginal cost: (count_long - count_short) / (requests_long - requests_short); start-up cancels out."
echo "Ir = user-space instructions (callgrind; the kernel is not counted). Syscalls from strace -f -c."
echo
echo "| tool | short run: requests / Ir | long run: requests / Ir | Ir per request | syscalls per request |"
echo "|---|---:|---:|---:|---:|"
vs_ipr="$(per "$vs_ir1" "$vs_ir2" "$vs_n1" "$vs_n2")"
vs_spr="-"; [ "$have_strace" = 1 ] && vs_spr="$(per2 "$vs_sc1" "$vs_sc2" "$vs_sn1" "$vs_sn2")"
echo "| versus | $vs_n1 / $vs_ir1 | $vs_n2 / $vs_ir2 | $vs_ipr | $vs_spr |"
if [ "$have_peer" = 1 ]; then
  wk_ipr="$(per "$wk_ir1" "$wk_ir2" "$wk_n1" "$wk_n2")"
  wk_spr="-"; [ "$have_strace" = 1 ] && wk_spr="$(per2 "$wk_sc1" "$wk_sc2" "$wk_sn1" "$wk_sn2")"
  echo "| $PEER | $wk_n1 / $wk_ir1 | $wk_n2 / $wk_ir2 | $wk_ipr | $wk_spr |"
  echo
  awk -v a="$vs_ipr" -v b="$wk_ipr" -v p="$PEER" 'BEGIN { if (b > 0) printf "versus / %s, user-space instructions per request: %.2fx\n", p, a / b }'
fi
echo
echo "Commands:"
echo "    valgrind --tool=callgrind --dump-instr=no --collect-systime=no $(echo "${V[*]}" | sed "s|$VERSUS|versus|") --stop-after={$SMALL,$BIG} ${TARGETS[*]}"
if [ "$PEER" = none ]; then
  :
elif [ "$PEER" = h2load ]; then
  echo "    valgrind --tool=callgrind --dump-instr=no --collect-systime=no ${H[*]} -n {$SMALL,$BIG} $URL"
else
  echo "    valgrind --tool=callgrind --dump-instr=no --collect-systime=no ${W[*]} -d{$WRK_SHORT,$WRK_LONG}s $URL"
fi
echo "    strace -f -c (the same commands)"
if [ "$have_strace" = 1 ]; then
  echo
  echo "versus syscalls in the long run (strace -f -c, top 8 by calls):"
  echo '```'
  awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ { print $4, $NF }' "$WORK/versus-big-strace.strace" | sort -rn | head -8
  echo '```'
  if [ "$have_peer" = 1 ]; then
    echo "$PEER syscalls in the long run:"
    echo '```'
    awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ { print $4, $NF }' "$WORK/$PEER-long-strace.strace" | sort -rn | head -8
    echo '```'
  fi
fi
echo
echo "versus, long run: top functions by exclusive Ir (callgrind_annotate; includes start-up, which is small at $BIG requests):"
echo '```'
callgrind_annotate --inclusive=no "$WORK/versus-big.cg" 2>/dev/null | sed -n '/^-* *$/!p' | grep -E '^ *[0-9,]+ \(' | sed 's|/[^ ]*/registry/src/[^/]*/||; s|/rustc/[0-9a-f]*/||' | sed -n '1,25p' | cut -c1-200
echo '```'
echo
# Inclusive counts of the request path's layers, per request of the long
# run (start-up included, small at BIG requests): what each layer costs
# with all it calls, for RESULTS' "where the time goes".
echo "versus, long run: the request path by layer, inclusive Ir per request (callgrind_annotate --inclusive=yes; the same function may show under more than one source file when inlined):"
echo '```'
callgrind_annotate --inclusive=yes "$WORK/versus-big.cg" 2>/dev/null | grep -E '^ *[0-9,]+ \(' \
  | grep -E 'Slots<F> as core::future::future::Future>::poll \[|worker::drive::\{\{closure\}\} \[|http::Slot::send::\{\{closure\}\}$|http::Slot::exchange::\{\{closure\}\}$|h1::Conn<S>::read_more::\{\{closure\}\} \[|h1::Conn<S>::poll_fill \[|worker::deliver::\{\{closure\}\}$|judge::verdict$|worker::record \[|worker::feed::\{\{closure\}\}$|uring::Ring::turn \[|record_n_inner \[|__memcpy|__memcmp' \
  | awk -v n="$BIG" '{ v = $1; gsub(",", "", v); sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, ""); sub(/ \[.*\]$/, ""); f = $0; sub(/:.*$/, "", f); sub(/^.*\//, "", f); sub(/^[^:]*:/, ""); printf "%6.0f  %s (%s)\n", v / n, $0, f }' | sed -n '1,20p'
echo '```'
echo
echo "raw files: $WORK"
