#!/usr/bin/env bash
# Install the load tools the benchmark compares versus with. Installs only what
# is missing; a tool that cannot be installed is reported and skipped (run.sh
# leaves it out of the tables). Needs root for apt-get (or sudo).
#   Debian: nginx, libnginx-mod-http-echo, wrk, nghttp2-client (h2load), hey,
#           time (/usr/bin/time), valgrind, util-linux (taskset), linux-perf
#   crates.io: oha (cargo install --locked into bench/.tools)
#   Go modules: k6, ghz (go install into bench/.tools/bin)
#   The floor clients (bench/floor/*.c): gcc -O2 into bench/.tools/bin as
#           floor-epoll and floor-uring (Debian gcc, liburing-dev)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOLS="$HERE/.tools"
mkdir -p "$TOOLS"

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else SUDO="__none__"; fi
fi

declare -A STATUS=()
updated=0
apt_update() {
  [ "$updated" = 1 ] && return 0
  updated=1
  echo "setup: apt-get update"
  $SUDO apt-get update -qq >/dev/null 2>&1 || echo "setup: apt-get update failed (continuing)"
}
# apt_pkg PACKAGE CHECK-COMMAND...: install PACKAGE unless CHECK succeeds
apt_pkg() {
  local pkg="$1"; shift
  if "$@" >/dev/null 2>&1; then STATUS[$pkg]="present"; return 0; fi
  if [ "$SUDO" = "__none__" ]; then STATUS[$pkg]="UNAVAILABLE (not root, no sudo)"; return 0; fi
  apt_update
  local cand
  cand="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')"
  if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
    STATUS[$pkg]="UNAVAILABLE (no Debian package '$pkg')"; return 0
  fi
  echo "setup: apt-get install $pkg ($cand)"
  if DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 \
     && "$@" >/dev/null 2>&1; then
    STATUS[$pkg]="installed $cand"
  else
    STATUS[$pkg]="UNAVAILABLE (apt-get install $pkg failed)"
  fi
}

echo_module_present() {
  ls /usr/lib/nginx/modules/ngx_http_echo_module.so >/dev/null 2>&1
}

apt_pkg time test -x /usr/bin/time
apt_pkg util-linux command -v taskset
apt_pkg nginx command -v nginx
apt_pkg libnginx-mod-http-echo echo_module_present
apt_pkg wrk command -v wrk
apt_pkg nghttp2-client command -v h2load
apt_pkg hey command -v hey
apt_pkg valgrind command -v valgrind
apt_pkg strace command -v strace
# perf: Debian ships it as linux-perf; it may not work in a container.
apt_pkg linux-perf command -v perf

# The floor clients, rebuilt on every run (they are small) so that the
# binaries match the sources.
apt_pkg gcc command -v gcc
apt_pkg liburing-dev test -f /usr/include/liburing.h
mkdir -p "$TOOLS/bin"
# floor_build NAME SOURCE [LIBS...]
floor_build() {
  local name="$1" src="$2"; shift 2
  if ! command -v gcc >/dev/null 2>&1; then STATUS[$name]="UNAVAILABLE (no gcc)"; return 0; fi
  if gcc -O2 -Wall -o "$TOOLS/bin/$name" "$HERE/floor/$src" "$@" 2>"$TOOLS/$name-build.log"; then
    STATUS[$name]="built ($TOOLS/bin/$name)"
  else
    STATUS[$name]="UNAVAILABLE (gcc failed, see $TOOLS/$name-build.log)"
  fi
}
floor_build floor-epoll epoll_client.c
if [ -f /usr/include/liburing.h ]; then
  floor_build floor-uring uring_client.c -luring
else
  STATUS[floor-uring]="UNAVAILABLE (no liburing-dev)"
fi

# oha from crates.io, into bench/.tools/bin
if [ -x "$TOOLS/bin/oha" ]; then
  STATUS[oha]="present ($TOOLS/bin/oha)"
elif command -v oha >/dev/null 2>&1; then
  STATUS[oha]="present ($(command -v oha))"
elif command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo install oha --locked --root $TOOLS (takes a few minutes)"
  if cargo install oha --locked --root "$TOOLS" >"$TOOLS/oha-install.log" 2>&1; then
    STATUS[oha]="installed ($TOOLS/bin/oha)"
  else
    STATUS[oha]="UNAVAILABLE (cargo install failed, see $TOOLS/oha-install.log)"
  fi
else
  STATUS[oha]="UNAVAILABLE (no cargo)"
fi

# k6 from its Go module, into bench/.tools/bin (a few minutes to build)
if [ -x "$TOOLS/bin/k6" ]; then
  STATUS[k6]="present ($TOOLS/bin/k6)"
elif command -v k6 >/dev/null 2>&1; then
  STATUS[k6]="present ($(command -v k6))"
elif command -v go >/dev/null 2>&1; then
  echo "setup: go install go.k6.io/k6@v0.54.0 (takes a few minutes)"
  if GOBIN="$TOOLS/bin" go install go.k6.io/k6@v0.54.0 >"$TOOLS/k6-install.log" 2>&1; then
    STATUS[k6]="installed ($TOOLS/bin/k6)"
  else
    STATUS[k6]="UNAVAILABLE (go install failed, see $TOOLS/k6-install.log)"
  fi
else
  STATUS[k6]="UNAVAILABLE (no go)"
fi

# ghz (the gRPC load tester) from its Go module, into bench/.tools/bin
GHZ_VERSION=v0.120.0
if [ -x "$TOOLS/bin/ghz" ]; then
  STATUS[ghz]="present ($TOOLS/bin/ghz)"
elif command -v ghz >/dev/null 2>&1; then
  STATUS[ghz]="present ($(command -v ghz))"
elif command -v go >/dev/null 2>&1; then
  echo "setup: go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION (takes a few minutes)"
  if GOBIN="$TOOLS/bin" go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >"$TOOLS/ghz-install.log" 2>&1; then
    STATUS[ghz]="installed ($TOOLS/bin/ghz)"
  else
    STATUS[ghz]="UNAVAILABLE (go install failed, see $TOOLS/ghz-install.log)"
  fi
else
  STATUS[ghz]="UNAVAILABLE (no go)"
fi

echo
echo "setup: tool status"
for k in time util-linux nginx libnginx-mod-http-echo wrk nghttp2-client hey oha k6 ghz valgrind strace linux-perf gcc liburing-dev floor-epoll floor-uring; do
  printf '  %-24s %s\n' "$k" "${STATUS[$k]}"
done
perf_out="$(perf stat -e instructions true 2>&1 || true)"
if command -v perf >/dev/null 2>&1 && [[ "$perf_out" == *instructions* ]] && [[ "$perf_out" != *"not supported"* ]]; then
  echo "  perf counters            usable"
else
  echo "  perf counters            not usable here (hardware counters missing: use bench/callgrind.sh; perf record -e cpu-clock still samples)"
fi
