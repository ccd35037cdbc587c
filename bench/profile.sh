#!/usr/bin/env bash
# Where versus's CPU goes in the `single` scenario: a sampling profile of user
# AND kernel time with `perf record -e cpu-clock` (a software clock, so it
# works in VMs without hardware counters), pinned like run.sh.
#
#   bench/profile.sh [SECONDS [TOOL]]     # VERSUS=path; TOP=15
#
# TOOL: versus (the default), wrk, floor-epoll or floor-uring-OPTS (the
# floor clients of bench/floor, built by setup.sh, floor-uring with its
# option letters: dm the latency-faithful floor, dmxT the same sending each
# request at once and timing answers by the turn, as versus does), to
# profile the others the same way; versus-h2 and h2load profile the `h2` scenario instead (h2c, one
# connection of H2_STREAMS=50 streams, as run.sh h2).
# Prints the split by binary/kernel (dso) and the top symbols by self time.
# With hardware counters (perf stat -e instructions works) it also prints
# instructions per request; otherwise use bench/callgrind.sh for that.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SECS="${1:-10}"
TOOL="${2:-versus}"
TOP="${TOP:-15}"
command -v perf >/dev/null || die "perf missing (apt-get install linux-perf)"
resolve_versus
WORK="$BENCH_DIR/.work/profile-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
trap nginx_stop EXIT
trap 'exit 130' INT TERM
nginx_start "$WORK/nginx"
profile_cmd "$TOOL" "$SECS"

log "perf record: ${CMD[*]}"
perf record -q -e cpu-clock -F 4999 -o "$WORK/perf.data" -- taskset -c 1 "${CMD[@]}" > "$WORK/tool.out" 2> "$WORK/perf.err" \
  || { cat "$WORK/perf.err" >&2; die "perf record failed"; }
reqs="$(completed "$WORK/tool.out")"
samples="$(perf report -i "$WORK/perf.data" --stdio --sort dso 2>/dev/null | awk '/^# Samples:/ { print $3 }')"

echo "# perf profile: $TOOL, $(case "$TOOL" in versus-h2|h2load) echo "HTTP/2 (h2c, 1 connection x ${H2_STREAMS:-50} streams)" ;; *) echo "single-request mode" ;; esac)"
echo
echo "command: perf record -e cpu-clock -F 4999 -- taskset -c 1 $(echo "${CMD[*]}" | sed "s|$VERSUS|versus|")"
echo "requests completed: $reqs; samples: $samples (one per 200 µs of CPU)"
echo
echo "By binary (kernel = [kernel.kallsyms]; self time; µs per request = samples / 4999 Hz / requests):"
echo '```'
perf report -i "$WORK/perf.data" --stdio --no-children --sort dso -F overhead,sample,dso --percent-limit 0.5 2>/dev/null | grep -vE '^#|^$' \
  | awk -v n="$reqs" '{ printf "%s %8.3f µs/req  %s\n", $1, (n > 0 ? $2 * 1e6 / 4999 / n : 0), $3 }' | head -10
echo '```'
echo
echo "Top $TOP symbols by self time ([k] kernel, [.] user space):"
echo '```'
perf report -i "$WORK/perf.data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -vE '^#|^$' | head -"$TOP" | cut -c1-160
echo '```'
echo
echo "Top $TOP user-space symbols only ($TOOL + libc):"
echo '```'
perf report -i "$WORK/perf.data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -vE '^#|^$' | grep -F '[.]' | head -"$TOP" | cut -c1-160
echo '```'
perf_out="$(perf stat -e instructions true 2>&1 || true)"
if [[ "$perf_out" != *"not supported"* ]]; then
  log "perf stat: instructions"
  perf stat -x, -e instructions:u,instructions:k -o "$WORK/stat.csv" -- taskset -c 1 "${CMD[@]}" > "$WORK/tool-stat.out" 2>/dev/null || true
  r2="$(completed "$WORK/tool-stat.out")"
  echo
  awk -F, -v n="$r2" '$3 ~ /instructions/ { printf "%s per request: %.0f\n", $3, $1 / n }' "$WORK/stat.csv"
fi
echo
echo "raw: $WORK/perf.data (perf report -i ... --sort sym)"
