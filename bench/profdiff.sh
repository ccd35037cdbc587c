#!/usr/bin/env bash
# Where two clients' CPU per request differs, symbol by symbol: sampling
# profiles (`perf record -e cpu-clock`, user and kernel) of TOOL_A and
# TOOL_B in the `single` scenario, alternated for ROUNDS rounds (A B A B …,
# so that the machine's drift falls on both alike), each symbol's self time
# in µs per request averaged over the rounds; then the kernel's work per
# request counted by tracepoints (system calls, packets, socket buffers,
# io_uring completions, context switches), which drift does not change.
#
#   bench/profdiff.sh [SECONDS [TOOL_A [TOOL_B]]]   # 4 versus floor-uring-dm
#   ROUNDS=2 TOP=20 VERSUS=path
#
# Tools as bench/profile.sh names them: versus, wrk, floor-epoll,
# floor-uring-OPTS, versus-h2, h2load. When the kernel does the same work
# for both (the events match) but takes longer for one, the difference is
# in how that work meets the caches, or in the machine's drift; the symbol
# table says where.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SECS="${1:-4}"
A="${2:-versus}"
B="${3:-floor-uring-dm}"
ROUNDS="${ROUNDS:-2}"
TOP="${TOP:-20}"
command -v perf >/dev/null || die "perf missing (apt-get install linux-perf)"
[ "$A" != "$B" ] || die "TOOL_A and TOOL_B are both '$A'"
resolve_versus
WORK="$BENCH_DIR/.work/profdiff-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
trap nginx_stop EXIT
trap 'exit 130' INT TERM
nginx_start "$WORK/nginx"
# Fail on an unknown tool before any run.
profile_cmd "$A" "$SECS"; profile_cmd "$B" "$SECS"

# Self samples by symbol of each round, as `tool round samples dso symbol`
# lines (tab-separated), and the requests each round completed.
: > "$WORK/samples.tsv"
: > "$WORK/requests.tsv"
for r in $(seq 1 "$ROUNDS"); do
  for t in "$A" "$B"; do
    profile_cmd "$t" "$SECS"
    log "round $r/$ROUNDS: perf record: ${CMD[*]}"
    perf record -q -e cpu-clock -F 4999 -o "$WORK/$t-$r.data" -- taskset -c 1 "${CMD[@]}" \
      > "$WORK/$t-$r.out" 2> "$WORK/$t-$r.err" || { cat "$WORK/$t-$r.err" >&2; die "perf record failed"; }
    reqs="$(completed "$WORK/$t-$r.out")"
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || die "$t completed no requests (output: $WORK/$t-$r.out)"
    printf '%s\t%s\t%s\n' "$t" "$r" "$reqs" >> "$WORK/requests.tsv"
    perf report -i "$WORK/$t-$r.data" --stdio --no-children --sort dso,sym -F sample,dso,sym -t '|' 2>/dev/null \
      | awk -F'|' -v t="$t" -v r="$r" '!/^#/ && NF >= 3 {
          s = $1; d = $2; y = $3; gsub(/ +$|^ +/, "", s); gsub(/ +$|^ +/, "", d); gsub(/ +$|^ +/, "", y)
          if (s + 0 > 0) printf "%s\t%s\t%s\t%s\t%s\n", t, r, s, d, y }' >> "$WORK/samples.tsv"
  done
done

# µs per request of each (dso, symbol) and tool, averaged over the rounds.
awk -F'\t' -v rounds="$ROUNDS" -v a="$A" -v b="$B" '
  NR == FNR { reqs[$1, $2] = $3; next }
  { us = $3 / 4999 / reqs[$1, $2] * 1e6 / rounds; key = $4 "\t" $5; keys[key] = 1
    if ($1 == a) va[key] += us; else vb[key] += us }
  END { for (k in keys) printf "%.4f\t%.4f\t%s\n", va[k], vb[k], k }' \
  "$WORK/requests.tsv" "$WORK/samples.tsv" > "$WORK/symbols.tsv"

echo "# Where $A and $B differ: CPU µs per request, single-request mode"
echo
echo "$ROUNDS rounds of ${SECS} s each, alternated ($A $B …), nginx on core 0, each tool under \`taskset -c 1\`;"
echo "self time from \`perf record -e cpu-clock -F 4999\` (one sample per 200 µs of CPU), averaged over the rounds."
echo "Requests a round: $(awk -F'\t' -v a="$A" '$1 == a { printf "%s%s", s, $3; s = ", " }' "$WORK/requests.tsv") ($A); $(awk -F'\t' -v b="$B" '$1 == b { printf "%s%s", s, $3; s = ", " }' "$WORK/requests.tsv") ($B)."
echo
echo "By binary (kernel = [kernel.kallsyms]):"
echo
echo "| binary | $A | $B | $A − $B |"
echo "|---|---:|---:|---:|"
awk -F'\t' '{ a[$3] += $1; b[$3] += $2 }
  END { for (d in a) if (a[d] + b[d] >= 0.005) printf "| %s | %.3f | %.3f | %+.3f |\n", d, a[d], b[d], a[d] - b[d] }' \
  "$WORK/symbols.tsv" | sort -t'|' -k3 -rn
awk -F'\t' '{ ta += $1; tb += $2 } END { printf "| **all** | **%.3f** | **%.3f** | **%+.3f** |\n", ta, tb, ta - tb }' "$WORK/symbols.tsv"
echo
echo "Symbols where $A spends more ($A − $B, µs per request; [k] kernel, [.] user space):"
echo '```'
awk -F'\t' '{ printf "%+.4f  %.4f  %.4f  %s\n", $1 - $2, $1, $2, $4 }' "$WORK/symbols.tsv" | sort -rn | head -"$TOP"
echo '```'
echo
echo "Symbols where $B spends more:"
echo '```'
awk -F'\t' '{ printf "%+.4f  %.4f  %.4f  %s\n", $1 - $2, $1, $2, $4 }' "$WORK/symbols.tsv" | sort -n | head -"$TOP"
echo '```'
echo "(columns: difference, $A, $B, symbol)"

# The kernel's work per request, counted: one more run of each.
EVENTS=(context-switches raw_syscalls:sys_enter syscalls:sys_enter_sendto syscalls:sys_enter_io_uring_enter
  syscalls:sys_enter_epoll_wait net:net_dev_xmit net:netif_receive_skb skb:consume_skb kmem:kmem_cache_alloc
  irq:softirq_entry io_uring:io_uring_complete io_uring:io_uring_submit_req io_uring:io_uring_local_work_run
  timer:hrtimer_start)
have_events=()
for e in "${EVENTS[@]}"; do
  perf stat -e "$e" true >/dev/null 2>&1 && have_events+=("$e")
done
echo
echo "Kernel work per request (\`perf stat -e <event>\` of one more run each):"
echo
echo "| event | $A | $B |"
echo "|---|---:|---:|"
for t in "$A" "$B"; do
  profile_cmd "$t" "$SECS"
  log "perf stat: ${CMD[*]}"
  perf stat -x, -o "$WORK/$t-stat.csv" -e "$(IFS=,; echo "${have_events[*]}")" -- taskset -c 1 "${CMD[@]}" > "$WORK/$t-stat.out" 2>&1 \
    || die "perf stat failed ($WORK/$t-stat.out)"
  reqs="$(completed "$WORK/$t-stat.out")"
  awk -F, -v n="$reqs" -v t="$t" '$1 ~ /^[0-9.]+$/ {
      printf "%s\t%s\t%.4f\n", t, $3, $1 / n }' "$WORK/$t-stat.csv"
done > "$WORK/events.tsv"
awk -F'\t' -v a="$A" -v b="$B" '{ v[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
  END { for (i = 1; i <= k; i++) printf "| %s | %s | %s |\n", order[i], v[a, order[i]], v[b, order[i]] }' "$WORK/events.tsv"
echo
echo "raw: $WORK"
