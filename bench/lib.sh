# Shared helpers for the benchmark scripts (sourced, not run).
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$BENCH_DIR/.." && pwd)"
export PATH="$BENCH_DIR/.tools/bin:$PATH"

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

# The versus binary: $VERSUS, else target/release-lto/versus (built if missing).
resolve_versus() {
  if [ -n "${VERSUS:-}" ]; then
    [ -x "$VERSUS" ] || die "VERSUS=$VERSUS is not an executable"
  else
    VERSUS="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release-lto/versus"
    if [ ! -x "$VERSUS" ]; then
      log "building versus (cargo build --profile release-lto) in $REPO_DIR"
      (cd "$REPO_DIR" && cargo build --profile release-lto) >&2 || die "cargo build --profile release-lto failed"
    fi
  fi
  export VERSUS
}

# A free TCP port on 127.0.0.1 (not in the listening set, outside the
# ephemeral range so client sockets cannot take it).
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then echo "$p"; return 0; fi
  done
  die "no free port found"
}

# nginx_start DIR: start nginx from the template with its state in DIR; sets
# NGINX_DIR, H1PORT, H2PORT. nginx_stop stops it (call it from a trap).
nginx_start() {
  NGINX_DIR="$1"
  command -v nginx >/dev/null || die "nginx not installed (run bench/setup.sh)"
  local mod=/usr/lib/nginx/modules/ngx_http_echo_module.so
  [ -f "$mod" ] || die "nginx echo module missing ($mod; run bench/setup.sh)"
  mkdir -p "$NGINX_DIR/tmp"
  H1PORT="$(free_port)"; H2PORT="$(free_port)"
  while [ "$H2PORT" = "$H1PORT" ]; do H2PORT="$(free_port)"; done
  # nginx >= 1.25.1 wants `http2 on;`, older ones `listen ... http2`.
  local ver h2listen h2ka
  ver="$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')"
  if printf '1.25.1\n%s\n' "$ver" | sort -V -C; then   # ver >= 1.25.1
    h2listen="listen 127.0.0.1:$H2PORT backlog=4096; http2 on;"
  else
    h2listen="listen 127.0.0.1:$H2PORT http2 backlog=4096;"
  fi
  # Before 1.19.7 HTTP/2 had its own request cap; newer ones use keepalive_requests.
  if printf '1.19.7\n%s\n' "$ver" | sort -V -C; then h2ka=""; else h2ka="http2_max_requests 1000000000;"; fi
  local nofile
  nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] && nofile=1048576
  sed -e "s|@PREFIX@|$NGINX_DIR|g" -e "s|@H1PORT@|$H1PORT|g" \
      -e "s|@H2_LISTEN@|$h2listen|" \
      -e "s|@H2_KEEPALIVE@|$h2ka|" -e "s|@ECHO_MODULE@|$mod|" \
      -e "s|@NOFILE@|$nofile|" -e "s|@WORKER_CONNECTIONS@|$((nofile - 100))|" \
      "$BENCH_DIR/nginx.conf" > "$NGINX_DIR/nginx.conf"
  nginx -t -q -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" 2>&1 | grep -v 'could not open error log' >&2 || true
  nginx -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/error.log" \
    || die "nginx failed to start (see $NGINX_DIR/error.log)"
  local i
  for i in $(seq 1 50); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$H1PORT/" 2>/dev/null; then break; fi
    sleep 0.1
  done
  curl -fsS -o /dev/null "http://127.0.0.1:$H1PORT/" || die "nginx does not answer on $H1PORT"
  log "nginx $ver up: HTTP/1.1 on 127.0.0.1:$H1PORT, h2c on 127.0.0.1:$H2PORT, state in $NGINX_DIR"
}

nginx_stop() {
  if [ -n "${NGINX_DIR:-}" ] && [ -f "$NGINX_DIR/nginx.pid" ]; then
    local pid; pid="$(cat "$NGINX_DIR/nginx.pid")"
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$NGINX_DIR/nginx.pid"
    log "nginx stopped"
  fi
}

# profile_cmd TOOL SECS: the command that runs TOOL for SECS seconds in the
# `single` scenario (the `h2` scenario for versus-h2 and h2load), pinned as
# run.sh pins it, into the array CMD. Needs VERSUS, H1PORT and H2PORT; the
# tools of bench/profile.sh and bench/profdiff.sh.
PROFILE_TOOLS="versus wrk floor-epoll floor-uring-dm floor-uring-dmT floor-uring-dmxT versus-h2 h2load"
profile_cmd() {
  local tool="$1" secs="$2" streams="${H2_STREAMS:-50}"
  local h1="http://127.0.0.1:$H1PORT/" h2="http://127.0.0.1:$H2PORT/"
  case "$tool" in
    versus) CMD=("$VERSUS" --method GET -c 50 --stop-after="${secs}s" --threads 1 --compare none "$h1") ;;
    wrk) CMD=(wrk -t1 -c50 -d"${secs}s" "$h1") ;;
    floor-epoll) CMD=(floor-epoll 50 "$secs" 127.0.0.1 "$H1PORT") ;;
    floor-uring-*) CMD=(floor-uring 50 "$secs" 127.0.0.1 "$H1PORT" "${tool#floor-uring-}") ;;
    versus-h2) CMD=("$VERSUS" --http2 --method GET -c "$streams" --stop-after="${secs}s" --threads 1 --compare none "$h2") ;;
    h2load) CMD=(h2load -t1 -c1 -m "$streams" -D "$secs" "$h2") ;;
    *) die "unknown tool '$tool' ($PROFILE_TOOLS)" ;;
  esac
  command -v "${CMD[0]}" >/dev/null || die "${CMD[0]} missing (bench/setup.sh)"
}

# completed FILE: the requests a tool's output (in FILE) says it completed.
completed() {
  awk '/Completed:/ { print $5 } /requests in/ { print $1 } /^requests:/ { print $8 }
       / responses, / { for (i = 1; i < NF; i++) if ($(i+1) == "responses,") print $i }' "$1" | head -1
}
