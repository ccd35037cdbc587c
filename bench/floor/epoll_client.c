/* The minimal epoll HTTP/1.1 client of the floor measurement
 * (bench/floor/README.md): CONNS keep-alive connections, one request in
 * flight on each; non-blocking sockets, level-triggered EPOLLIN, one
 * epoll_wait per batch, per ready socket one read() and, when that
 * completes the response, one write() of the next request. After SECS it
 * stops sending and waits for every request in flight.
 *
 *   epoll_client CONNS SECS HOST PORT
 */
#include "floor.h"

#include <sys/epoll.h>

static struct conn *conns;
static int ep;
static unsigned long inflight;

static void fail(struct conn *c) {
  errors++;
  if (c->busy) inflight--;
  c->busy = 0;
  c->dead = 1;
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
}

static void send_request(struct conn *c) {
  if (write(c->fd, REQ, REQ_LEN) != (ssize_t)REQ_LEN) {
    fail(c);
    return;
  }
  c->busy = 1;
  inflight++;
}

static void on_readable(struct conn *c, int sending) {
  ssize_t r = read(c->fd, c->buf + c->len, BUF - c->len);
  if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (r <= 0 || !c->busy) { /* EOF, an error, or bytes nobody asked for */
    fail(c);
    return;
  }
  c->len += r;
  int whole = floor_check(c);
  if (whole < 0) {
    fail(c);
  } else if (whole > 0) {
    floor_done(c);
    inflight--;
    if (sending) send_request(c);
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s CONNS SECS HOST PORT\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  double secs = atof(argv[2]);
  if (n <= 0 || secs <= 0) {
    fprintf(stderr, "CONNS and SECS must be positive\n");
    return 2;
  }
  conns = calloc(n, sizeof *conns);
  ep = epoll_create1(0);
  if (!conns || ep < 0) die("setup");
  for (int i = 0; i < n; i++) {
    conns[i].fd = floor_connect(argv[3], atoi(argv[4]), 1);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0) die("epoll_ctl");
  }
  alarm((unsigned)secs + DRAIN_LIMIT); /* a server that stops answering ends the run (killed) */
  double t0 = now(), deadline = t0 + secs;
  int sending = 1;
  for (int i = 0; i < n; i++) send_request(&conns[i]);
  struct epoll_event evs[256];
  while (inflight > 0) {
    int k = epoll_wait(ep, evs, 256, -1);
    if (k < 0 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < k; i++) {
      struct conn *c = &conns[evs[i].data.u32];
      if (!c->dead) on_readable(c, sending);
    }
    if (sending && now() >= deadline) sending = 0;
  }
  return floor_report("floor-epoll", now() - t0);
}
