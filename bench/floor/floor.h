/* The part the two floor clients share (bench/floor/README.md): the
 * pre-built request, connecting, the whole-response check and the report.
 * Written only to measure the cheapest honest HTTP/1.1 keep-alive client on
 * this machine (bench/run.sh runs them beside versus and wrk). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char REQ[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
#define REQ_LEN (sizeof REQ - 1)
/* One response must fit: the head and a small body. */
#define BUF 4096
/* Seconds allowed after the run to drain the requests in flight. */
#define DRAIN_LIMIT 10

struct conn {
  int fd;
  int busy;    /* a request is in flight */
  int dead;    /* failed: no more requests on it */
  size_t len;  /* bytes of the current response received */
  size_t need; /* its whole length, once the head is parsed (0 before) */
  unsigned long long sent_ns; /* when its request was sent (floor-uring t/T) */
  char buf[BUF];
};

static unsigned long long responses, errors, resp_bytes;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

/* A connected TCP socket with TCP_NODELAY, non-blocking when asked. */
static int floor_connect(const char *host, int port, int nonblock) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "not an IPv4 address: %s\n", host);
    exit(2);
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0) die("socket");
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
  if (nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
  return fd;
}

/* The response in c->buf[0..len]: 1 when whole (status 200, the head's end
 * found, Content-Length parsed, exactly head + body bytes), 0 when more is
 * to come, -1 when malformed, not 200, too large or followed by extra bytes
 * (one request is in flight per connection, so nothing may follow). */
static int floor_check(struct conn *c) {
  static const char status[] = "HTTP/1.1 200 ";
  if (c->need == 0) {
    size_t n = c->len < sizeof status - 1 ? c->len : sizeof status - 1;
    if (memcmp(c->buf, status, n) != 0) return -1;
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end) return c->len >= BUF ? -1 : 0;
    size_t head = end + 4 - c->buf;
    long long length = -1;
    for (char *p = memchr(c->buf, '\n', head); p && p + 1 < end; p = memchr(p + 1, '\n', end + 2 - p - 1)) {
      if (strncasecmp(p + 1, "content-length:", 15) == 0) {
        char *q = p + 16, *stop;
        while (*q == ' ' || *q == '\t') q++;
        length = strtoll(q, &stop, 10);
        if (stop == q || length < 0) return -1;
      }
    }
    if (length < 0 || head + length > BUF) return -1;
    c->need = head + length;
  }
  if (c->len < c->need) return 0;
  return c->len == c->need ? 1 : -1;
}

/* Counts a whole response and readies the connection for the next one. */
static void floor_done(struct conn *c) {
  responses++;
  resp_bytes += c->len;
  c->len = 0;
  c->need = 0;
  c->busy = 0;
}

/* The one line bench/run.sh reads; exit status 1 when anything failed. */
static int floor_report(const char *name, double secs) {
  printf("%s: %llu responses, %llu errors, %.1f bytes/response, %.3f s, %.0f req/s\n", name, responses,
         errors, responses ? (double)resp_bytes / responses : 0.0, secs, secs > 0 ? responses / secs : 0.0);
  return errors || !responses ? 1 : 0;
}
