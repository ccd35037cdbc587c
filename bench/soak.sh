#!/usr/bin/env bash
# Soak: versus at a steady rate against the benchmark nginx for a long run,
# its resident memory (RSS) and open file descriptors sampled every
# INTERVAL seconds from /proc. Memory and descriptors must stay flat: the
# script prints every sample, then the first full minute's figures against
# the maximum of the rest, and whether they stayed within 10%.
#
#   bench/soak.sh                      # 30 minutes at 2,000 requests/s
#   SOAK=5m RATE=5000 bench/soak.sh
#
# Environment: VERSUS (binary), SOAK (duration, humantime), RATE (per
# second), CONNS (connections: -c and --max-connections, 8; 0 for
# versus's defaults: one warmed, more opened for bursts and closed when
# idle), INTERVAL (seconds between samples, 10), OUT (copy the report).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SOAK="${SOAK:-30m}"
RATE="${RATE:-2000}"
INTERVAL="${INTERVAL:-10}"
CONNS="${CONNS:-8}"
CONN_ARGS=()
[ "$CONNS" -gt 0 ] && CONN_ARGS=(-c "$CONNS" --max-connections "$CONNS")
resolve_versus
WORK="$BENCH_DIR/.work/soak-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
trap nginx_stop EXIT
trap 'exit 130' INT TERM
nginx_start "$WORK/nginx"
URL="http://127.0.0.1:$H1PORT/"
REPORT="$WORK/report.md"

log "soak: versus --rate $RATE ${CONN_ARGS[*]} --stop-after $SOAK against $URL, sampling every ${INTERVAL}s"
taskset -c 1 "$VERSUS" --rate "$RATE" "${CONN_ARGS[@]}" --stop-after "$SOAK" --threads 1 --compare none \
  --method GET -q -o "$WORK/run.jsonl" "$URL" > "$WORK/report.txt" 2>&1 &
PID=$!
{
  echo "# versus soak $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- versus --rate $RATE ${CONN_ARGS[*]} --stop-after $SOAK --threads 1 --compare none --method GET -o run.jsonl URL"
  echo "- samples every ${INTERVAL}s of /proc/PID/status VmRSS and the entries of /proc/PID/fd"
  echo
  echo "| t s | RSS KB | open fds |"
  echo "|---:|---:|---:|"
} > "$REPORT"
t=0
while kill -0 "$PID" 2>/dev/null; do
  rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status" 2>/dev/null || true)"
  fds="$(ls "/proc/$PID/fd" 2>/dev/null | wc -l)"
  [ -n "$rss" ] && echo "| $t | $rss | $fds |" >> "$REPORT" && echo "$t $rss $fds" >> "$WORK/samples"
  sleep "$INTERVAL"; t=$((t + INTERVAL))
done
wait "$PID" || true
# The first minute is start-up (histograms grow to the latencies seen);
# after it, memory and descriptors must not grow.
awk -v iv="$INTERVAL" '
  $1 >= 60 && $1 < 120 { if (!base) { base = $2; fbase = $3 } }
  $1 >= 60 { if ($2 > rmax) rmax = $2; if ($3 > fmax) fmax = $3; n++ }
  END {
    if (!base) { print "too short: no sample after the first minute"; exit }
    printf "\nRSS after the first minute: %d KB; max after it: %d KB = %.3fx (flat within 10%%: %s)\n", base, rmax, rmax / base, (rmax <= base * 1.1 ? "yes" : "NO")
    printf "open fds after the first minute: %d; max after it: %d (%s)\n", fbase, fmax, (fmax <= fbase * 1.1 ? "flat" : "GREW")
    printf "%d samples after the first minute\n", n
  }' "$WORK/samples" | tee -a "$REPORT"
# Without a connection cap (CONNS=0) the open model opens an HTTP/1.1
# connection per request in flight, so a latency blip shows as a burst of
# descriptors, closed again 5 s later: the medians of the first and last five minutes after the first one tell
# growth (a leak) from bursts (demand).
sort -n "$WORK/samples" | awk '
  $1 >= 60 && $1 < 360 { a[na++] = $3; r[nr++] = $2 }
  { last[NR] = $3; lastr[NR] = $2; n = NR }
  function median(v, k,   i, j, t) { for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t } return v[int(k / 2)] }
  END {
    if (na == 0 || n < 60) { print "too short for the medians"; exit }
    for (i = n - 29; i <= n; i++) { b[nb++] = last[i]; br[nbr++] = lastr[i] }
    fa = median(a, na); fb = median(b, nb); ra = median(r, nr); rb = median(br, nbr)
    printf "open fds, median of minutes 1-6: %d; of the last 5 minutes: %d = %.3fx (flat within 10%%: %s)\n", fa, fb, fb / fa, (fb <= fa * 1.1 ? "yes" : "NO")
    printf "RSS KB, median of minutes 1-6: %d; of the last 5 minutes: %d = %.3fx (flat within 10%%: %s)\n", ra, rb, rb / ra, (rb <= ra * 1.1 ? "yes" : "NO")
  }' | tee -a "$REPORT"
grep -E "Requests:|Errors:|Rate:" "$WORK/report.txt" | head -4 | sed 's/^/    /' | tee -a "$REPORT"
if [ -n "${OUT:-}" ]; then cp "$REPORT" "$OUT"; fi
log "report: $REPORT"
