/* The io_uring HTTP/1.1 client of the floor measurement
 * (bench/floor/README.md): CONNS keep-alive connections, one request in
 * flight on each. Loop: io_uring_submit_and_wait(want) submits every SQE
 * queued while handling the previous batch and waits; then every ready CQE;
 * then one cq_advance. A response completes on a recv CQE; the next
 * request's send is queued then. After SECS it stops sending and waits for
 * every request in flight.
 *
 *   uring_client CONNS SECS HOST PORT [OPTS]
 *
 * OPTS, letters in any order:
 *   d   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
 *   m   one multishot recv per connection for the whole run, into a
 *       provided buffer ring (1024 x 2 KB), buffers returned once per batch
 *       (without m: one single-shot recv per request into the connection's
 *       buffer)
 *   s   send with IOSQE_CQE_SKIP_SUCCESS (and MSG_WAITALL: a short send
 *       still posts an error CQE)
 *   f   registered files        r   registered ring fd
 *   wN  wait for N completions per enter (at most the requests in flight):
 *       answers are then seen up to (N-1)/rate late, not latency-faithful
 *   t   time every request as a latency tool must: a clock read when its
 *       send is queued, one when its answer is handled, the latency
 *       recorded in a log-linear histogram (below); mean and p99 printed
 *   x   each request sent at once by a plain send() system call when the
 *       answer before it is handled, not queued for the next enter
 *   T   as t, but an answer's time is the clock read once per enter, right
 *       after it returned (under DEFER_TASKRUN the receives run inside it)
 */
#include "floor.h"

#include <liburing.h>
#include <sys/mman.h>

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* Latencies in ns, log-linear as an HDR histogram with 64 sub-buckets per
 * power of two (under 1.6 % error): what a latency tool records at least. */
#define LAT_BUCKETS (64 * 42)
static unsigned long long lat_counts[LAT_BUCKETS], lat_n, lat_sum;
static unsigned lat_index(unsigned long long v) {
  int msb = 63 - __builtin_clzll(v | 1);
  if (msb < 7) return (unsigned)v;
  int shift = msb - 6;
  unsigned i = (unsigned)(shift + 1) * 64 + (unsigned)((v >> shift) - 64);
  return i < LAT_BUCKETS ? i : LAT_BUCKETS - 1;
}
static unsigned long long lat_value(unsigned i) {
  if (i < 128) return i;
  unsigned shift = i / 64 - 1;
  return (unsigned long long)(i % 64 + 64) << shift;
}
static void lat_record(unsigned long long v) {
  lat_counts[lat_index(v)]++;
  lat_n++;
  lat_sum += v;
}
static void lat_report(void) {
  unsigned long long want = lat_n - lat_n / 100, seen = 0;
  unsigned i = 0;
  for (; i < LAT_BUCKETS && seen < want; i++) seen += lat_counts[i];
  printf("latency: mean %.3f ms, p99 %.3f ms\n", lat_n ? lat_sum / 1e6 / lat_n : 0.0,
         i ? lat_value(i - 1) / 1e6 : 0.0);
}

#define NBUFS 1024
#define BUFSZ 2048
enum { SEND = 0, RECV = 1 };

static struct io_uring ring;
static struct conn *conns;
static unsigned long inflight;
static int opt_m, opt_s, opt_f, opt_t, opt_T, opt_x;
static unsigned long long turn_ns; /* T: the clock after the last enter */
static struct io_uring_buf_ring *br;
static char *bufs;
static int returned; /* buffers given back in this batch */

static struct io_uring_sqe *sqe_for(int i, int kind) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
  if (!sqe) {
    io_uring_submit(&ring);
    sqe = io_uring_get_sqe(&ring);
    if (!sqe) die("io_uring_get_sqe");
  }
  io_uring_sqe_set_data64(sqe, (__u64)i << 1 | kind);
  return sqe;
}

static int fd_of(int i) { return opt_f ? i : conns[i].fd; }

static void fixed(struct io_uring_sqe *sqe) {
  if (opt_f) sqe->flags |= IOSQE_FIXED_FILE;
}

static void queue_recv(int i) {
  struct io_uring_sqe *sqe = sqe_for(i, RECV);
  if (opt_m) {
    io_uring_prep_recv_multishot(sqe, fd_of(i), NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
  } else {
    struct conn *c = &conns[i];
    io_uring_prep_recv(sqe, fd_of(i), c->buf + c->len, BUF - c->len, 0);
  }
  fixed(sqe);
}

static void fail(struct conn *c);
static void queue_send(int i) {
  conns[i].busy = 1;
  if (opt_t || opt_T) conns[i].sent_ns = now_ns();
  inflight++;
  if (opt_x) {
    if (send(conns[i].fd, REQ, REQ_LEN, MSG_DONTWAIT) != (ssize_t)REQ_LEN) fail(&conns[i]);
  } else {
    struct io_uring_sqe *sqe = sqe_for(i, SEND);
    io_uring_prep_send(sqe, fd_of(i), REQ, REQ_LEN, opt_s ? MSG_WAITALL : 0);
    fixed(sqe);
    if (opt_s) sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  }
  if (!opt_m) queue_recv(i);
}

static void fail(struct conn *c) {
  errors++;
  if (c->busy) inflight--;
  c->busy = 0;
  c->dead = 1;
  shutdown(c->fd, SHUT_RDWR); /* ends its recv; later CQEs are ignored */
}

static void on_cqe(struct io_uring_cqe *cqe, int sending) {
  int i = (int)(cqe->user_data >> 1);
  struct conn *c = &conns[i];
  char *data = NULL;
  if (cqe->flags & IORING_CQE_F_BUFFER) {
    int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
    data = bufs + (size_t)bid * BUFSZ;
    io_uring_buf_ring_add(br, data, BUFSZ, bid, io_uring_buf_ring_mask(NBUFS), returned++);
  }
  if (c->dead) return;
  if ((cqe->user_data & 1) == SEND) {
    if (cqe->res != (int)REQ_LEN) fail(c);
    return;
  }
  int more = opt_m && (cqe->flags & IORING_CQE_F_MORE);
  if (cqe->res == -ENOBUFS) { /* the buffer ring ran dry: ask again */
    if (!more) queue_recv(i);
    return;
  }
  if (cqe->res <= 0 || !c->busy || (data && c->len + cqe->res > BUF)) {
    fail(c);
    return;
  }
  if (data) memcpy(c->buf + c->len, data, cqe->res);
  c->len += cqe->res;
  int whole = floor_check(c);
  if (whole < 0) {
    fail(c);
    return;
  }
  if (opt_m && !more) queue_recv(i); /* the multishot recv ended: re-arm */
  if (whole == 0) {
    if (!opt_m) queue_recv(i);
    return;
  }
  if (opt_t || opt_T) lat_record((opt_T ? turn_ns : now_ns()) - c->sent_ns);
  floor_done(c);
  inflight--;
  if (sending) queue_send(i);
}

static void setup_buffers(void) {
  size_t ring_size = NBUFS * sizeof(struct io_uring_buf);
  br = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  bufs = malloc((size_t)NBUFS * BUFSZ);
  if (br == MAP_FAILED || !bufs) die("buffers");
  io_uring_buf_ring_init(br);
  struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = NBUFS, .bgid = 0};
  int e = io_uring_register_buf_ring(&ring, &reg, 0);
  if (e < 0) {
    errno = -e;
    die("io_uring_register_buf_ring");
  }
  for (int b = 0; b < NBUFS; b++)
    io_uring_buf_ring_add(br, bufs + (size_t)b * BUFSZ, BUFSZ, b, io_uring_buf_ring_mask(NBUFS), b);
  io_uring_buf_ring_advance(br, NBUFS);
}

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s CONNS SECS HOST PORT [OPTS: d m s f r t T x wN]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  double secs = atof(argv[2]);
  const char *opts = argc == 6 ? argv[5] : "";
  int opt_d = !!strchr(opts, 'd'), opt_r = !!strchr(opts, 'r');
  opt_m = !!strchr(opts, 'm');
  opt_s = !!strchr(opts, 's');
  opt_f = !!strchr(opts, 'f');
  opt_t = !!strchr(opts, 't');
  opt_x = !!strchr(opts, 'x');
  opt_T = !!strchr(opts, 'T');
  unsigned wait_n = strchr(opts, 'w') ? (unsigned)atoi(strchr(opts, 'w') + 1) : 1;
  if (n <= 0 || secs <= 0 || wait_n == 0 || strspn(opts, "dmsfrtTxw0123456789") != strlen(opts)) {
    fprintf(stderr, "CONNS and SECS must be positive; OPTS letters: d m s f r t T x wN (N > 0)\n");
    return 2;
  }
  conns = calloc(n, sizeof *conns);
  int *fds = calloc(n, sizeof *fds);
  if (!conns || !fds) die("calloc");
  for (int i = 0; i < n; i++) fds[i] = conns[i].fd = floor_connect(argv[3], atoi(argv[4]), 0);

  struct io_uring_params p = {0};
  if (opt_d) p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  unsigned entries = 64;
  while (entries < 4u * n) entries *= 2;
  int e = io_uring_queue_init_params(entries, &ring, &p);
  if (e < 0) {
    errno = -e;
    die("io_uring_queue_init_params");
  }
  if (opt_f && io_uring_register_files(&ring, fds, n) < 0) die("io_uring_register_files");
  if (opt_r && io_uring_register_ring_fd(&ring) < 0) die("io_uring_register_ring_fd");
  if (opt_m) setup_buffers();

  alarm((unsigned)secs + DRAIN_LIMIT); /* a server that stops answering ends the run (killed) */
  double t0 = now(), deadline = t0 + secs;
  int sending = 1;
  for (int i = 0; i < n; i++) {
    if (opt_m) queue_recv(i);
    queue_send(i);
  }
  while (inflight > 0) {
    unsigned want = wait_n < inflight ? wait_n : (unsigned)inflight;
    e = io_uring_submit_and_wait(&ring, want);
    if (e < 0 && e != -EINTR) {
      errno = -e;
      die("io_uring_submit_and_wait");
    }
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    returned = 0;
    if (opt_T) turn_ns = now_ns();
    io_uring_for_each_cqe(&ring, head, cqe) {
      on_cqe(cqe, sending);
      seen++;
    }
    io_uring_cq_advance(&ring, seen);
    if (returned) io_uring_buf_ring_advance(br, returned);
    if (sending && now() >= deadline) sending = 0;
  }
  char name[64];
  snprintf(name, sizeof name, "floor-uring%s%s", *opts ? " " : "", opts);
  int rc = floor_report(name, now() - t0);
  if (opt_t || opt_T) lat_report();
  return rc;
}
