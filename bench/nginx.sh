#!/usr/bin/env bash
# Start or stop the benchmark nginx by hand:
#   bench/nginx.sh start [DIR]   # prints the HTTP/1.1 and h2c ports
#   bench/nginx.sh stop  [DIR]
# DIR defaults to bench/.work/nginx-manual.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cmd="${1:-}"; dir="${2:-$BENCH_DIR/.work/nginx-manual}"
case "$cmd" in
  start)
    [ -f "$dir/nginx.pid" ] && kill -0 "$(cat "$dir/nginx.pid")" 2>/dev/null && die "already running in $dir"
    nginx_start "$dir"
    echo "H1PORT=$H1PORT"; echo "H2PORT=$H2PORT"
    echo "curl http://127.0.0.1:$H1PORT/   curl http://127.0.0.1:$H1PORT/sleep"
    ;;
  stop) NGINX_DIR="$dir"; nginx_stop ;;
  *) echo "usage: $0 start|stop [DIR]" >&2; exit 2 ;;
esac
