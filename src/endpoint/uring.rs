//! The io_uring driver for plain-TCP HTTP/1.1 connections (`--io`).
//!
//! One ring per engine core (per thread), made on the core the first time a
//! connection needs it, with `SINGLE_ISSUER | DEFER_TASKRUN` (without
//! `DEFER_TASKRUN` io_uring measured slower than epoll on this kind of
//! work) plus `COOP_TASKRUN` and `TASKRUN_FLAG`. A driver task on the core's
//! tokio runtime submits the requests the core's tasks queued since it last
//! ran, in one `io_uring_enter`, and reaps the completions, waking the tasks
//! that wait on them: one enter per runtime turn, not per request. Under
//! `DEFER_TASKRUN` a completion waits in the kernel as task work until an
//! enter with `GETEVENTS` runs it; when such work arrives the kernel raises
//! `IORING_SQ_TASKRUN` and signals an eventfd registered with the ring,
//! which tokio's reactor watches (verified on this 6.18 kernel by the test
//! `deferred_work_signals_the_eventfd`; the ring's own fd also polls
//! readable then, but the eventfd's signal is the documented wake-up).
//! The driver enters only when it queued requests or the flag is up. A
//! pass of the driver turns again at once while answers keep coming (at
//! most a few turns), with the eventfd off meanwhile: its own enters'
//! completions would signal it, each signal an epoll wake-up for nothing
//! (see `Ring::pass`).
//!
//! A connection can hand its answers to a [`Relay`] instead of a reader:
//! the relay takes each answer in the turn that filed it and gives the next
//! request, sent at once (a slot's lane, `http::lane`: no task is woken
//! between one request and the next). While lanes carry all of a core's
//! work, its runtime, about to sleep, waits in the ring's own enter
//! instead ([`wait_in_ring`]), as a client written for io_uring alone
//! would: the kernel wakes the thread there directly, and the turn after
//! it takes the answers, without the runtime's `epoll_wait`, the eventfd's
//! signal or the driver task between them.
//!
//! [`Stream`] is a byte stream over one TCP socket on that ring, what
//! `h1::Conn` reads and writes. A write is first sent at once by a plain
//! non-blocking `send` from the caller's buffer: one system call, but the
//! request leaves when it is written rather than at the end of the turn,
//! and the write is done without a second wake-up of its task. Sending
//! every turn's requests together in one enter measured worse where the
//! client is the bottleneck (a compared stream: 4.15 against 3.95-4.00 µs
//! per request), because the server sleeps between the bursts and each
//! burst must wake it; single-request mode measured the same either way.
//! What the socket does not take is copied into the connection's send
//! buffer and sent through the ring (a short send is continued from where
//! it stopped; the write is done when every byte is sent), with the receive
//! of the answer armed in the same enter. A connection's receive is
//! multishot: armed once, it lands each burst of bytes in a buffer the
//! kernel takes from the ring's pool when they arrive (`uring_bufs.rs`),
//! and stays armed from one answer to the next (a receive armed and taken
//! down again for every answer cost the kernel about 0.17 µs a request:
//! its poll hooked onto the socket's wait queue and off again). Reads take
//! the landed buffers in the order they came; a buffer goes back to the
//! pool when they have read it all. A receive that finds the pool empty
//! doubles it, or, at its largest, waits for a buffer to come back. A
//! receive that fills its buffer marks a connection of large answers: its
//! multishot receive is cancelled, and once its last completion is in,
//! the answer's rest is read by plain `recv`s, and the connection's later
//! receives are single-shot, armed when a read waits. The buffers belong
//! to the ring, not to any future, so a future dropped with an operation in
//! flight (a timeout, a flow cut short, Ctrl-C) leaves them alive: dropping
//! the stream cancels what is in flight and frees the connection (closing
//! its socket, giving back its buffer) when the last completion arrives.
//!
//! TLS, HTTP/2, WebSocket, gRPC and the fault proxies stay on tokio (epoll).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::io::{Relay, Relayed};
use super::uring_bufs::{self, Bufs};

/// Submission queue entries per ring (the completion queue has twice as
/// many): a full queue is submitted early, so this bounds nothing else.
const ENTRIES: u32 = 256;
/// The most of one write taken into the send buffer at once.
const SEND_MAX: usize = 64 * 1024;
/// The user data of cancel requests, whose completions are not looked at.
const CANCEL: u64 = u64::MAX;
/// The user data of the ring's alarm (see [`Ring::wait`]).
const ALARM: u64 = u64::MAX - 1;
/// How long after it is armed the ring's alarm rings: the longest a wait
/// in the ring lasts, so the longest the runtime's timers and other
/// threads' wake-ups wait while lanes carry a core's work. Each wait that
/// ends costs the runtime a look at its timers and wake-ups (an
/// `epoll_wait` that does not sleep, the driver task's poll): at one
/// millisecond that was 4-8 % more CPU a request where answers come 100 ms
/// late on 1,000 connections, and the alarm itself, a timer armed and
/// fired, 3 % more under full load (a timer in every enter that sleeps
/// instead cost 9 %). The kernel reads it when the alarm is submitted.
static ALARM_AFTER: types::Timespec = types::Timespec::new().nsec(10_000_000);

/// Which I/O driver a run's plain-TCP HTTP/1.1 connections use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDriver {
    /// tokio's reactor: readiness by epoll, one `recvfrom` and one
    /// `sendto` per request.
    Epoll,
    /// A per-core io_uring ring (this module).
    Uring,
}

impl IoDriver {
    /// The name shown in reports: `epoll` or `io_uring`.
    pub fn name(self) -> &'static str {
        match self {
            IoDriver::Epoll => "epoll",
            IoDriver::Uring => "io_uring",
        }
    }
}

/// Whether this process can make a ring the driver needs (io_uring with
/// `DEFER_TASKRUN`, kernel 6.1 or newer, not refused by seccomp or
/// `kernel.io_uring_disabled`), with an eventfd registered.
///
/// # Errors
/// The error of the first step that failed (`ENOSYS`, `EPERM`, `EINVAL`...).
pub fn probe() -> io::Result<()> {
    Ring::new().map(drop)
}

/// Each ring's number, so that a stream never touches another thread's.
static RING_IDS: AtomicU64 = AtomicU64::new(1);
/// A core failed to make its ring (said once, on stderr).
static RING_REFUSED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's ring, made by the first stream that needs it.
    static RING: RefCell<Option<Ring>> = const { RefCell::new(None) };
}

/// How a connection's receive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recv {
    Idle,
    /// A receive is armed. A multishot one lands each burst of bytes in a
    /// buffer of the pool as a completion of its own, until one says it is
    /// the last (the end of the stream, an error, the pool found empty, or
    /// cancelled).
    InFlight,
    /// The receive found the pool empty: it is armed again on a turn of
    /// the driver with a buffer to spare (see `Ring::feed`).
    Starved,
    /// The peer closed its side.
    Eof,
    /// The receive failed with this errno.
    Failed(i32),
}

/// How a write stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Send {
    Idle,
    InFlight,
    /// Every byte of the send buffer is sent.
    Sent(usize),
    Failed(i32),
}

/// One connection on the ring: its socket, the pool's buffer holding what
/// it received, and the buffer the kernel sends from.
struct Conn {
    fd: OwnedFd,
    /// The pool's buffer holding received bytes not yet read, which are
    /// `[rpos..rlen]` of it.
    held: Option<u16>,
    rpos: usize,
    rlen: usize,
    /// Buffers that landed behind `held` (their ids and lengths), in the
    /// order the bytes came: a multishot receive lands each burst as it
    /// comes, whether or not the one before was read.
    queued: VecDeque<(u16, usize)>,
    recv: Recv,
    /// A receive filled the buffer it had: more is likely waiting, so the
    /// multishot receive is cancelled and, once its last completion is in
    /// (so that no landed bytes can be behind the socket's), reads are
    /// plain non-blocking `recv`s into the caller's buffer until one would
    /// block (a large body is read as epoll reads it, not 4 KiB a buffer
    /// copied twice).
    more: bool,
    /// The armed receive is being cancelled (see `more`).
    cancelling: bool,
    /// A receive once filled its buffer: the connection carries large
    /// answers, and its receives are single-shot from then on, armed when
    /// a read waits, so that each large answer is read by plain `recv`s
    /// after its first buffer with no multishot receive to cancel first
    /// (which cost a 1 MiB answer 20 % more CPU, a 64 KiB one 15 %).
    large: bool,
    wbuf: Vec<u8>,
    /// Bytes of `wbuf` the kernel took.
    wdone: usize,
    send: Send,
    reader: Option<Waker>,
    writer: Option<Waker>,
    /// The stream is gone: free the connection when nothing is in flight.
    dropped: bool,
    /// Takes the answers that land, while set (see [`Relay`]).
    relay: Option<Rc<dyn Relay>>,
    /// When the last receive ran: the clock read once in the turn that
    /// filed it, right after the enter (see [`Ring::turn`]); `None` after a
    /// read by a plain `recv`, which is its own arrival. One time for all
    /// landed bytes: bytes of an earlier turn read only after a later one
    /// landed more are timed by the later (late, never early; rare, as a
    /// woken reader runs before the driver's next turn).
    landed: Option<Instant>,
}

impl Conn {
    fn idle(&self) -> bool {
        self.recv != Recv::InFlight && self.send != Send::InFlight
    }

    /// The held buffer read to its end: the next landed one, if any, is
    /// held in its place.
    fn take_next(&mut self) {
        self.held = None;
        if let Some((next, len)) = self.queued.pop_front() {
            (self.held, self.rpos, self.rlen) = (Some(next), 0, len);
        }
    }
}

/// A ring and its table of connections.
struct Ring {
    id: u64,
    ring: IoUring,
    eventfd: OwnedFd,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// The driver task, woken when the first request of a turn is queued.
    driver: Option<Waker>,
    /// The driver was woken since it last entered.
    kicked: bool,
    /// A driver task runs on this thread's runtime.
    driving: bool,
    /// Wakers of completed operations, woken once the ring is released.
    ready: Vec<Waker>,
    /// Completions taken off the queue, to be filed (kept for its memory).
    cqes: Vec<(u64, i32, u32)>,
    /// The receive buffers.
    bufs: Bufs,
    /// Connections whose receive waits for a buffer.
    starved: Vec<usize>,
    /// Buffers the kernel filled and reads have not given back.
    lent: usize,
    /// The alarm (a timeout operation) is in flight.
    alarm: bool,
    /// The alarm rang since the last wait began.
    rang: bool,
}

/// `IORING_RECVSEND_POLL_FIRST` (Linux 5.19; the ring needs 6.1 for
/// `DEFER_TASKRUN` anyway): a receive waits for readiness before its
/// first try.
const RECVSEND_POLL_FIRST: u16 = 1;

impl Ring {
    fn new() -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(ENTRIES)?;
        // SAFETY: eventfd takes no pointers; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let eventfd = unsafe { OwnedFd::from_raw_fd(fd) };
        ring.submitter().register_eventfd(eventfd.as_raw_fd())?;
        let bufs = Bufs::new(&ring.submitter())?;
        Ok(Ring {
            id: RING_IDS.fetch_add(1, Ordering::Relaxed),
            ring,
            eventfd,
            conns: Vec::new(),
            free: Vec::new(),
            driver: None,
            kicked: false,
            driving: false,
            ready: Vec::new(),
            cqes: Vec::new(),
            bufs,
            starved: Vec::new(),
            lent: 0,
            alarm: false,
            rang: false,
        })
    }

    /// Queue one request; the driver submits it on its next turn.
    fn push(&mut self, entry: &io_uring::squeue::Entry) {
        loop {
            // SAFETY: for every caller, the buffers an entry points into
            // belong to a connection in `conns`, which is freed only after
            // the entry's completion, and are not resized while it is in
            // flight.
            let queued = unsafe { self.ring.submission().push(entry) };
            if queued.is_ok() {
                break;
            }
            // Full: hand the queue to the kernel now.
            if self.ring.submit().is_err() {
                std::thread::yield_now();
            }
        }
        self.kick();
    }

    /// Have the driver turn soon (once, however often asked before it does).
    fn kick(&mut self) {
        if !self.kicked {
            self.kicked = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    /// Arm a receive on connection `idx`, unless one is armed: multishot,
    /// or single-shot on a connection of large answers (see
    /// `Conn::large`). `wait_first`, for a single-shot one: nothing is
    /// known to be waiting (a read found nothing landed and the socket
    /// was drained), so the kernel is told to wait for the socket to be
    /// readable first (`IORING_RECVSEND_POLL_FIRST`) rather than try a
    /// receive that fails before it arms that wait. A starved receive,
    /// armed again when buffers come back, has bytes waiting: it tries at
    /// once.
    fn arm_recv(&mut self, idx: usize, wait_first: bool) {
        let Some(c) = self.conns[idx].as_mut() else {
            return;
        };
        if c.recv == Recv::InFlight {
            return;
        }
        c.recv = Recv::InFlight;
        let fd = types::Fd(c.fd.as_raw_fd());
        let e = if c.large {
            opcode::Recv::new(fd, std::ptr::null_mut(), uring_bufs::SIZE as u32)
                .buf_group(uring_bufs::GROUP)
                .ioprio(if wait_first { RECVSEND_POLL_FIRST } else { 0 })
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
        } else {
            // Armed once a connection, waiting first or not matters little.
            opcode::RecvMulti::new(fd, uring_bufs::GROUP).build()
        };
        self.push(&e.user_data(user_data(idx, Op::Recv)));
    }

    /// Cancel connection `idx`'s operation `op` in flight; its last
    /// completion says when it is over.
    fn cancel(&mut self, idx: usize, op: Op) {
        let e = opcode::AsyncCancel::new(user_data(idx, op))
            .build()
            .user_data(CANCEL);
        self.push(&e);
    }

    fn arm_send(&mut self, idx: usize) {
        let Some(c) = self.conns[idx].as_mut() else {
            return;
        };
        c.send = Send::InFlight;
        let rest = &c.wbuf[c.wdone..];
        let e = opcode::Send::new(
            types::Fd(c.fd.as_raw_fd()),
            rest.as_ptr(),
            rest.len() as u32,
        )
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(user_data(idx, Op::Send));
        self.push(&e);
    }

    /// [`Stream`]'s `poll_read_ready` for connection `idx`.
    fn poll_read_ready(&mut self, idx: usize, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(c) = self.conns[idx].as_mut() else {
            return Poll::Ready(Err(gone()));
        };
        match c.recv {
            _ if c.held.is_some() => Poll::Ready(Ok(())),
            // The read tells which.
            Recv::Eof | Recv::Failed(_) => Poll::Ready(Ok(())),
            // The last receive filled its buffer: more is likely waiting,
            // and the read tries a plain `recv` first.
            Recv::Idle if c.more => Poll::Ready(Ok(())),
            Recv::Idle => {
                set_waker(&mut c.reader, cx);
                self.arm_recv(idx, true);
                Poll::Pending
            }
            Recv::InFlight | Recv::Starved => {
                set_waker(&mut c.reader, cx);
                Poll::Pending
            }
        }
    }

    /// Lend connection `idx`'s landed, unread bytes, with when they
    /// landed, to `read`, which returns how many of them it used (marked
    /// read; the buffer goes back to the pool once all of it is). False
    /// when the connection holds none.
    fn read_held(
        &mut self,
        idx: usize,
        read: impl FnOnce(&[u8], Option<Instant>) -> usize,
    ) -> bool {
        let Some(c) = self.conns[idx].as_mut() else {
            return false;
        };
        let Some(id) = c.held else { return false };
        c.rpos += read(&self.bufs.get(id)[c.rpos..c.rlen], c.landed);
        if c.rpos == c.rlen {
            c.take_next();
            self.give_back(id);
        }
        true
    }

    /// Buffer `id`, read to its end, back to the pool; receives waiting
    /// for one are armed on the driver's next turn.
    fn give_back(&mut self, id: u16) {
        self.bufs.give(id);
        self.lent -= 1;
        if !self.starved.is_empty() {
            self.kick();
        }
    }

    /// Submit what is queued (running deferred completions when the kernel
    /// says some wait) and file every completion; the wakers of the tasks
    /// to wake are left in `ready`.
    fn turn(&mut self) -> usize {
        self.turn_after(false)
    }

    /// [`Ring::turn`], its enter waiting for a completion first if `wait`.
    fn turn_after(&mut self, wait: bool) -> usize {
        self.kicked = false;
        if wait {
            // Interrupted by a signal: taken like an enter that found
            // nothing (the caller's wait ends).
            let _ = self.ring.submit_and_wait(1);
        } else if !self.ring.submission().is_empty() || self.ring.submission().taskrun() {
            if let Err(e) = self.ring.submit() {
                // EBUSY, EAGAIN, EINTR: the kernel takes it on the next turn.
                if let Some(w) = self.driver.as_ref().filter(|_| interrupted(&e)) {
                    w.wake_by_ref();
                }
            }
        }
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        // The receives filed now ran in the kernel during the enter above
        // (under DEFER_TASKRUN, as its task work): one clock read after it
        // is when they all arrived, whatever order their tasks then run in.
        let mut landed = None;
        let filed = cqes.len();
        for (data, res, flags) in cqes.drain(..) {
            self.complete(data, res, flags, &mut landed);
        }
        self.cqes = cqes;
        self.feed();
        filed
    }

    /// The driver's pass: turns while answers keep coming, at most
    /// [`TURNS`], with the eventfd off. With lanes (see [`Relay`]) a turn
    /// does a request's whole work, and answers land meanwhile: taken in
    /// another turn at once, they cost an enter, where left to the
    /// runtime they cost an `epoll_wait` and an enter. And the
    /// completions the pass's own enters post would signal the eventfd
    /// (which is there to wake a sleeping core), each signal an epoll
    /// wake-up for nothing. Work that came after the last turn, while the
    /// eventfd was off, raised the taskrun flag: with the eventfd on
    /// again, one more turn takes it (the kernel may leave the flag up
    /// after running work that came while it ran, so the flag alone is
    /// no reason to keep turning).
    fn pass(&mut self) {
        self.ring.completion().disable_eventfd();
        for _ in 0..TURNS {
            let filed = self.turn();
            if filed == 0 || !self.ready.is_empty() || !self.ring.submission().taskrun() {
                break;
            }
        }
        self.eventfd_on();
    }

    /// Turn the eventfd on again after a pass or a wait that had it off,
    /// and take the work that came meanwhile: it raised the taskrun flag.
    fn eventfd_on(&mut self) {
        self.ring.completion().enable_eventfd();
        // The kernel raises the flag before it looks whether the eventfd
        // is off; this looks at the flag after turning it on: one of the
        // two sees the other.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.ring.submission().taskrun() {
            self.turn();
        }
    }

    /// Wait in the ring's own enter for its completions and take each as
    /// it comes (see [`wait_in_ring`]), turn after turn, until one wakes a
    /// task, the alarm rings, or an enter files nothing (a signal; the
    /// runtime then sleeps in its own wait). The alarm, armed here unless
    /// it already is, rings [`ALARM_AFTER`] after it was armed; no timer
    /// is armed for each enter. The eventfd is off meanwhile, as in a
    /// pass.
    fn wait(&mut self) {
        if !self.alarm {
            let e = opcode::Timeout::new(&ALARM_AFTER).build().user_data(ALARM);
            // Not by `push`, which would wake the driver task: the wait's
            // first enter submits it. With the queue full, no wait.
            // SAFETY: the timespec is static.
            if unsafe { self.ring.submission().push(&e) }.is_err() {
                return;
            }
            self.alarm = true;
        }
        self.rang = false;
        self.ring.completion().disable_eventfd();
        while self.ready.is_empty() && !self.rang {
            if self.turn_after(true) == 0 {
                break;
            }
        }
        self.eventfd_on();
        if self.rang {
            // The runtime looks at its timers and wake-ups without
            // sleeping (the driver task is work to do), then comes back
            // here; left to sleep in its `epoll_wait`, it would be woken
            // by the eventfd for the next answer, a wake-up more.
            self.kick();
        }
    }

    /// Arm the receives that found the pool empty this turn, as many as it
    /// has buffers not lent out, after doubling it if that is too few (once
    /// a turn: the receives of one burst all fail together). Those left
    /// wait for buffers to come back.
    fn feed(&mut self) {
        if self.starved.is_empty() {
            return;
        }
        if self.bufs.len() - self.lent < self.starved.len() {
            self.bufs.grow();
        }
        let mut free = self.bufs.len() - self.lent;
        while free > 0 {
            let Some(idx) = self.starved.pop() else {
                return;
            };
            if self.conns[idx]
                .as_ref()
                .is_some_and(|c| c.recv == Recv::Starved)
            {
                self.arm_recv(idx, false);
                free -= 1;
            }
        }
    }

    /// File one completion; `landed` is the turn's clock, read by the
    /// first receive that needs it.
    fn complete(&mut self, data: u64, res: i32, flags: u32, landed: &mut Option<Instant>) {
        if data == CANCEL {
            return;
        }
        if data == ALARM {
            (self.alarm, self.rang) = (false, true);
            return;
        }

        let idx = (data >> 1) as usize;
        let buf = match op_of(data) {
            Op::Recv => cqueue::buffer_select(flags),
            Op::Send => None,
        };
        if let Some(id) = buf {
            self.lent += 1;
            if res <= 0 {
                // A buffer taken for no bytes goes straight back.
                self.give_back(id);
            }
        }
        if let (Some(id), true) = (buf, res > 0) {
            if self.relay(idx, id, res as usize, flags, landed) {
                return;
            }
        }
        let Some(c) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        // Only a dropped stream's connection can be freed (looked at here,
        // not in a call for every completion).
        let dropped = c.dropped;
        match op_of(data) {
            Op::Recv => {
                // Not the last completion of the armed receive: it stays
                // armed.
                let armed = cqueue::more(flags);
                let mut cancel = false;
                c.recv = match (res, buf) {
                    (0, _) => Recv::Eof,
                    (n, Some(id)) if n > 0 => {
                        let n = n as usize;
                        if c.held.is_none() {
                            (c.held, c.rpos, c.rlen) = (Some(id), 0, n);
                        } else {
                            c.queued.push_back((id, n));
                        }
                        if n == uring_bufs::SIZE {
                            c.more = true;
                            c.large = true;
                            cancel = armed && !c.cancelling && !c.dropped;
                            c.cancelling |= cancel;
                        }
                        if armed {
                            Recv::InFlight
                        } else {
                            Recv::Idle
                        }
                    }
                    // Bytes without a buffer: not what was asked.
                    (n, None) if n > 0 => Recv::Failed(libc::EIO),
                    // The cancel asked for when a receive filled its buffer:
                    // reads go on by plain `recv`s (see `more`).
                    (e, _) if c.cancelling && (-e == libc::ECANCELED || -e == libc::ENOBUFS) => {
                        Recv::Idle
                    }
                    (e, _) if -e == libc::ENOBUFS && !c.dropped => {
                        // Armed again at the end of the turn (see `feed`).
                        c.recv = Recv::Starved;
                        self.starved.push(idx);
                        return;
                    }
                    (e, _) => Recv::Failed(-e),
                };
                if c.recv != Recv::InFlight {
                    c.cancelling = false;
                }
                c.landed = Some(*landed.get_or_insert_with(Instant::now));
                if let Some(relay) = c.relay.take() {
                    relay.left();
                }
                self.ready.extend(c.reader.take());
                if cancel {
                    self.cancel(idx, Op::Recv);
                }
            }
            Op::Send => {
                if res < 0 {
                    c.send = Send::Failed(-res);
                } else {
                    c.wdone += res as usize;
                    if c.wdone < c.wbuf.len() && res > 0 && !c.dropped {
                        // A short send: the rest goes next.
                        self.arm_send(idx);
                        return;
                    }
                    c.send = if c.wdone < c.wbuf.len() {
                        Send::Failed(libc::EPIPE)
                    } else {
                        Send::Sent(c.wbuf.len())
                    };
                }
                self.ready.extend(c.writer.take());
            }
        }
        if dropped {
            self.free_if_done(idx);
        }
    }

    /// Hand the `n` bytes that landed in buffer `id` for connection `idx`
    /// to its relay, if it has one and they landed alone (see [`Relay`]),
    /// and send what it gives at once: true when it took them (the buffer
    /// is back in the pool). The relay ends when it says so, or when its
    /// request is not all sent at once; the reader is woken then.
    fn relay(
        &mut self,
        idx: usize,
        id: u16,
        n: usize,
        flags: u32,
        landed: &mut Option<Instant>,
    ) -> bool {
        let Some(c) = self.conns[idx].as_mut() else {
            return false;
        };
        let alone =
            n < uring_bufs::SIZE && cqueue::more(flags) && c.held.is_none() && c.send == Send::Idle;
        let Some(relay) = c.relay.clone().filter(|_| alone) else {
            return false;
        };
        let at = *landed.get_or_insert_with(Instant::now);
        let fd = c.fd.as_raw_fd();
        // Nothing went: the slot's own write meets the full socket, or the
        // error, again.
        let mut send = |bytes: &[u8]| send_now(fd, bytes).ok().flatten().unwrap_or(0);
        let sent = match relay.landed(&self.bufs.get(id)[..n], at, &mut send) {
            Relayed::Declined => {
                c.relay = None;
                return false;
            }
            Relayed::Ended => false,
            Relayed::Sent => true,
        };
        c.landed = Some(at);
        if !sent {
            c.relay = None;
            self.ready.extend(c.reader.take());
        }
        self.give_back(id);
        true
    }

    /// Set connection `idx`'s relay (see [`Relay`]), its reader woken
    /// when it ends; false, with none set, when the connection is not in
    /// the state a relay starts from (its multishot receive armed or to
    /// be armed, nothing unread, no send in flight). `None` takes it off.
    fn set_relay(&mut self, idx: usize, relay: Option<Rc<dyn Relay>>, cx: &Context<'_>) -> bool {
        let Some(c) = self.conns[idx].as_mut() else {
            return false;
        };
        let Some(relay) = relay else {
            c.relay = None;
            return true;
        };
        let fit = !c.large
            && !c.more
            && !c.cancelling
            && c.held.is_none()
            && c.send == Send::Idle
            && matches!(c.recv, Recv::Idle | Recv::InFlight);
        if !fit {
            return false;
        }
        c.relay = Some(relay);
        set_waker(&mut c.reader, cx);
        if c.recv == Recv::Idle {
            self.arm_recv(idx, false);
        }
        true
    }

    /// Free a dropped connection once nothing of it is in flight (its
    /// socket closes then).
    fn free_if_done(&mut self, idx: usize) {
        if self.conns[idx]
            .as_ref()
            .is_some_and(|c| c.dropped && c.idle())
        {
            let c = self.conns[idx].take();
            if c.as_ref().is_some_and(|c| c.recv == Recv::Starved) {
                self.starved.retain(|&i| i != idx);
            }
            if let Some(c) = c {
                for id in c.held.into_iter().chain(c.queued.into_iter().map(|q| q.0)) {
                    self.give_back(id);
                }
            }
            self.free.push(idx);
        }
    }

    /// Operations in flight, over all connections.
    fn in_flight(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .map(|c| usize::from(c.recv == Recv::InFlight) + usize::from(c.send == Send::InFlight))
            .sum()
    }
}

impl Drop for Ring {
    /// Cancel everything in flight and wait for the kernel to be done with
    /// the buffers before they are freed; buffers the kernel still holds
    /// after a second are leaked, never freed under it.
    fn drop(&mut self) {
        // Nothing is armed any more, starved receives included.
        self.starved.clear();
        if self.in_flight() == 0 {
            let _ = self.ring.submitter().unregister_buf_ring(uring_bufs::GROUP);
            return;
        }
        let e = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(CANCEL);
        // SAFETY: a cancel entry points into no buffer.
        let _ = unsafe { self.ring.submission().push(&e) };
        for _ in 0..10 {
            let ts = types::Timespec::new().nsec(100_000_000);
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            self.turn();
            if self.in_flight() == 0 {
                let _ = self.ring.submitter().unregister_buf_ring(uring_bufs::GROUP);
                return;
            }
        }
        std::mem::forget(std::mem::take(&mut self.conns));
        self.bufs.leak();
    }
}

#[derive(Clone, Copy)]
enum Op {
    Recv,
    Send,
}

fn user_data(idx: usize, op: Op) -> u64 {
    (idx as u64) << 1 | matches!(op, Op::Send) as u64
}

fn op_of(data: u64) -> Op {
    if data & 1 == 1 {
        Op::Send
    } else {
        Op::Recv
    }
}

fn interrupted(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EBUSY | libc::EAGAIN | libc::EINTR)
    )
}

/// Run `f` on this thread's ring, if it is the ring `id`.
fn with_ring<T>(id: u64, f: impl FnOnce(&mut Ring) -> T) -> Option<T> {
    RING.try_with(|r| r.borrow_mut().as_mut().filter(|r| r.id == id).map(f))
        .ok()
        .flatten()
}

/// Cache lines of a woken task to ask for ahead of its poll: the few
/// words of its entry in the core's set of slot futures and the slot's
/// future (about 1,200 bytes).
const TASK_LINES: usize = 20;

/// Ask the CPU to bring a task's memory into cache before the task runs:
/// with many connections a task's state is cold by the time its answer
/// comes (the kernel's network work in between evicts it), and its poll
/// would otherwise stall on one line after another. A slot's waker's data
/// is its node in the core's set of slots (`engine::slots`), which holds
/// the future after a two-word header (as a tokio waker's is its task);
/// for any other waker this only wastes the hint.
fn prefetch_task(w: &Waker) {
    #[cfg(target_arch = "x86_64")]
    {
        let task = w.data().cast::<i8>();
        if task.is_null() {
            return;
        }
        for line in 0..TASK_LINES {
            // SAFETY: SSE is part of x86_64's baseline; and a prefetch is a
            // hint, which never faults and changes nothing the program
            // sees, whatever the address.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    task.wrapping_add(line * 64),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = w;
}

/// Before this thread's runtime sleeps, while lanes carry all of its
/// core's work (the engine says when, see `engine::worker`): wait in this
/// thread's ring for its completions, not in the runtime's `epoll_wait`,
/// and take them there ([`Ring::wait`]), then wake the tasks they are for.
/// The runtime's timers and other threads' wake-ups wait meanwhile, at
/// most [`ALARM_AFTER`]; work that needs the
/// runtime's reactor (a connect, a stream on epoll) must not be waiting
/// then, which is why the engine asks only while lanes carry everything.
/// For the runtime's `on_thread_park` hook: a task woken here runs before
/// the runtime would sleep.
pub(crate) fn wait_in_ring() {
    let waited = RING.try_with(|r| {
        let mut r = r.borrow_mut();
        let ring = r.as_mut()?;
        ring.wait();
        Some((ring.id, std::mem::take(&mut ring.ready)))
    });
    if let Ok(Some((id, ready))) = waited {
        wake_ready(id, ready);
    }
}

/// Wake the tasks whose operations ring `id` completed (`ready`, taken
/// from it while it was borrowed), with the ring released, their memory
/// asked for first; the vector goes back to the ring for its memory.
fn wake_ready(id: u64, mut ready: Vec<Waker>) {
    for w in &ready {
        prefetch_task(w);
    }
    for w in ready.drain(..) {
        w.wake();
    }
    let _ = with_ring(id, |ring| ring.ready = ready);
}

/// The most turns in one pass of the driver (see `Ring::pass`): a few,
/// so that the runtime's other tasks and timers are not held up.
const TURNS: usize = 4;

/// The driver task: one per thread's ring and runtime.
struct Driver {
    id: u64,
    eventfd: AsyncFd<OwnedFd>,
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Take the eventfd's signal before entering (a signal after it is a
        // new edge that wakes this task again), and be woken by the next.
        while let Poll::Ready(Ok(mut g)) = self.eventfd.poll_read_ready(cx) {
            g.clear_ready();
        }
        let ready = with_ring(self.id, |ring| {
            set_waker(&mut ring.driver, cx);
            ring.pass();
            std::mem::take(&mut ring.ready)
        });
        let Some(ready) = ready else {
            return Poll::Ready(());
        };
        wake_ready(self.id, ready);
        Poll::Pending
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = with_ring(self.id, |ring| {
            ring.driving = false;
            ring.driver = None;
        });
    }
}

/// This thread's ring, made if need be, with a driver task on the current
/// runtime. `None` where the driver cannot run: no current-thread tokio
/// runtime (each core runs one), or no ring to be had.
fn ring_here() -> Option<u64> {
    let rt = tokio::runtime::Handle::try_current().ok()?;
    if rt.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread {
        return None;
    }
    RING.try_with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            match Ring::new() {
                Ok(ring) => *r = Some(ring),
                Err(e) => {
                    // The start-up probe made one; say so if a core cannot.
                    if !RING_REFUSED.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "versus: a core could not make its io_uring ring ({e}); its \
                             connections use epoll"
                        );
                    }
                    return None;
                }
            }
        }
        let ring = r.as_mut()?;
        if !ring.driving {
            let own = ring.eventfd.try_clone().ok()?;
            // SAFETY: `own` is a descriptor of the AsyncFd's own, open as
            // long as it is.
            let eventfd = unsafe {
                AsyncFd::register_with_interest(own, tokio::io::Interest::READABLE).ok()?
            };
            ring.driving = true;
            ring.kicked = false;
            rt.spawn(Driver {
                id: ring.id,
                eventfd,
            });
        }
        Some(ring.id)
    })
    .ok()
    .flatten()
}

/// A TCP connection driven by this core's ring.
pub(crate) struct Stream {
    ring: u64,
    idx: usize,
}

impl Stream {
    /// `tcp` moved onto this thread's ring, or kept on tokio where the ring
    /// cannot be used here (see [`ring_here`]).
    ///
    /// # Errors
    /// When the socket cannot be taken from tokio's reactor.
    pub(crate) fn wrap(tcp: tokio::net::TcpStream) -> io::Result<Box<dyn super::io::Io>> {
        let Some(id) = ring_here() else {
            return Ok(Box::new(tcp));
        };
        let conn = Conn {
            fd: OwnedFd::from(tcp.into_std()?),
            held: None,
            rpos: 0,
            rlen: 0,
            queued: VecDeque::new(),
            recv: Recv::Idle,
            more: false,
            cancelling: false,
            large: false,
            wbuf: Vec::new(),
            wdone: 0,
            send: Send::Idle,
            reader: None,
            writer: None,
            dropped: false,
            relay: None,
            landed: None,
        };
        let idx = with_ring(id, |ring| match ring.free.pop() {
            Some(i) => {
                ring.conns[i] = Some(conn);
                i
            }
            None => {
                ring.conns.push(Some(conn));
                ring.conns.len() - 1
            }
        })
        .ok_or_else(gone)?;
        Ok(Box::new(Stream { ring: id, idx }))
    }

    /// Run `f` on this stream's ring.
    fn with<T>(&self, f: impl FnOnce(&mut Ring, usize) -> T) -> io::Result<T> {
        with_ring(self.ring, |ring| f(ring, self.idx)).ok_or_else(gone)
    }
}

/// The ring or its thread is gone (the stream outlived its core).
fn gone() -> io::Error {
    io::Error::other("io_uring ring gone")
}

impl super::io::Io for Stream {
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|ring, idx| ring.poll_read_ready(idx, cx))?
    }

    /// A receive armed with no one to wake: the ring sees nothing the
    /// kernel is not asked for, and without it the server's close of an
    /// idle connection came to light only when a request written on it
    /// failed.
    fn watch_idle(&mut self) {
        if self.quiet() {
            let _ = self.with(|ring, idx| ring.arm_recv(idx, true));
        }
    }

    /// Nothing landed since the last read (no receive armed, or one armed
    /// that brought nothing): since then the ring has been told nothing, a
    /// close included.
    fn quiet(&mut self) -> bool {
        self.with(|ring, idx| {
            ring.conns[idx].as_ref().is_some_and(|c| {
                matches!(c.recv, Recv::Idle | Recv::InFlight) && c.held.is_none() && !c.more
            })
        })
        .unwrap_or(false)
    }

    fn read_at(&self) -> Option<Instant> {
        self.with(|ring, idx| ring.conns[idx].as_ref().and_then(|c| c.landed))
            .ok()
            .flatten()
    }

    /// The landed receive's unread bytes, in the pool's buffer, given
    /// back once they are all read; readiness and the read in one look at
    /// the ring.
    fn poll_read_landed(
        &mut self,
        cx: &mut Context<'_>,
        read: &mut dyn FnMut(&[u8], Option<Instant>) -> usize,
    ) -> Poll<io::Result<bool>> {
        self.with(|ring, idx| {
            if ring.read_held(idx, read) {
                return Poll::Ready(Ok(true));
            }
            ring.poll_read_ready(idx, cx).map_ok(|()| false)
        })?
    }

    fn lends(&self) -> bool {
        true
    }

    fn relay(&mut self, relay: Option<Rc<dyn Relay>>, cx: &Context<'_>) -> bool {
        self.with(|ring, idx| ring.set_relay(idx, relay, cx))
            .unwrap_or(false)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Nothing to read into: not a zero-byte `recv`, which would read as
        // the end of the stream.
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        self.with(|ring, idx| {
            // What landed, in the order it came, as much as `buf` takes.
            let mut copied = false;
            while buf.remaining() > 0
                && ring.read_held(idx, |held, _| {
                    let n = buf.remaining().min(held.len());
                    buf.put_slice(&held[..n]);
                    n
                })
            {
                copied = true;
            }
            if copied {
                return Poll::Ready(Ok(()));
            }
            let Some(c) = ring.conns[idx].as_mut() else {
                return Poll::Ready(Err(gone()));
            };
            match c.recv {
                Recv::Eof => Poll::Ready(Ok(())),
                Recv::Failed(e) => {
                    c.recv = Recv::Idle;
                    Poll::Ready(Err(io::Error::from_raw_os_error(e)))
                }
                Recv::InFlight | Recv::Starved => {
                    set_waker(&mut c.reader, cx);
                    Poll::Pending
                }
                Recv::Idle => {
                    if c.more {
                        match recv_now(c.fd.as_raw_fd(), buf) {
                            Ok(Some((n, filled))) => {
                                c.more = filled;
                                c.landed = None;
                                if n == 0 {
                                    c.recv = Recv::Eof;
                                }
                                return Poll::Ready(Ok(()));
                            }
                            Ok(None) => c.more = false,
                            Err(e) => return Poll::Ready(Err(e)),
                        }
                    }
                    set_waker(&mut c.reader, cx);
                    ring.arm_recv(idx, true);
                    Poll::Pending
                }
            }
        })?
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.with(|ring, idx| {
            let Some(c) = ring.conns[idx].as_mut() else {
                return Poll::Ready(Err(gone()));
            };
            match c.send {
                Send::Sent(n) => {
                    c.send = Send::Idle;
                    Poll::Ready(Ok(n))
                }
                Send::Failed(e) => {
                    c.send = Send::Idle;
                    Poll::Ready(Err(io::Error::from_raw_os_error(e)))
                }
                Send::InFlight => {
                    set_waker(&mut c.writer, cx);
                    Poll::Pending
                }
                Send::Idle if buf.is_empty() => Poll::Ready(Ok(0)),
                Send::Idle => match send_now(c.fd.as_raw_fd(), buf) {
                    Ok(Some(n)) => Poll::Ready(Ok(n)),
                    // The socket is full: the ring sends when it has room.
                    Ok(None) => {
                        queue_send(ring, idx, buf, cx);
                        Poll::Pending
                    }
                    Err(e) => Poll::Ready(Err(e)),
                },
            }
        })?
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A write is done only when the kernel took every byte.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let fd = self
            .with(|ring, idx| ring.conns[idx].as_ref().map(|c| c.fd.as_raw_fd()))?
            .ok_or_else(gone)?;
        // SAFETY: `fd` is this stream's open socket.
        if unsafe { libc::shutdown(fd, libc::SHUT_WR) } < 0 {
            return Poll::Ready(Err(io::Error::last_os_error()));
        }
        Poll::Ready(Ok(()))
    }
}

/// Copy (up to 64 KiB of) `buf` into connection `idx`'s send buffer and
/// queue its send, with the receive of the answer in the same enter.
fn queue_send(ring: &mut Ring, idx: usize, buf: &[u8], cx: &Context<'_>) {
    let Some(c) = ring.conns[idx].as_mut() else {
        return;
    };
    c.wbuf.clear();
    c.wbuf.extend_from_slice(&buf[..buf.len().min(SEND_MAX)]);
    c.wdone = 0;
    set_waker(&mut c.writer, cx);
    let arm = c.recv == Recv::Idle && c.held.is_none();
    ring.arm_send(idx);
    if arm {
        ring.arm_recv(idx, true);
    }
}

/// A non-blocking `recv` on `fd` into `buf`: the bytes read and whether
/// they filled it, or `None` when nothing is waiting.
fn recv_now(fd: RawFd, buf: &mut ReadBuf<'_>) -> io::Result<Option<(usize, bool)>> {
    let room = buf.remaining();
    // SAFETY: the kernel writes at most `room` bytes into the unfilled part
    // of `buf`, which are then initialised.
    let n = unsafe {
        let dst = buf.unfilled_mut();
        libc::recv(fd, dst.as_mut_ptr().cast(), room, libc::MSG_DONTWAIT)
    };
    let Some(n) = done_now(n)? else {
        return Ok(None);
    };
    // SAFETY: the kernel initialised `n` bytes (see above).
    unsafe { buf.assume_init(n) };
    buf.advance(n);
    Ok(Some((n, n == room)))
}

/// A non-blocking `send` of `buf` on `fd`: the bytes sent, or `None` when
/// the socket has no room. The system call itself, not libc's `send`: that
/// is a thread cancellation point, whose bookkeeping (two atomic updates
/// of the thread's state a call) cost a request more than the rest of the
/// call's user-space work, and versus cancels no thread.
fn send_now(fd: RawFd, buf: &[u8]) -> io::Result<Option<usize>> {
    // Every argument a full register wide, as `syscall` reads them.
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: the kernel reads at most `buf.len()` bytes of `buf`; no
    // address is given (`sendto` with none is `send`).
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            libc::c_long::from(fd),
            buf.as_ptr(),
            buf.len(),
            libc::c_long::from(flags),
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    };
    done_now(n as isize)
}

/// What a non-blocking `recv` or `send` returned: the bytes it moved,
/// `None` when it would have blocked, or its error.
fn done_now(n: isize) -> io::Result<Option<usize>> {
    if let Ok(n) = usize::try_from(n) {
        return Ok(Some(n));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

fn set_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        *slot = Some(cx.waker().clone());
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = with_ring(self.ring, |ring| {
            let Some(c) = ring.conns[self.idx].as_mut() else {
                return;
            };
            c.dropped = true;
            c.relay = None;
            c.reader = None;
            c.writer = None;
            let recv = c.recv == Recv::InFlight;
            let send = c.send == Send::InFlight;
            for (op, busy) in [(Op::Recv, recv), (Op::Send, send)] {
                if busy {
                    ring.cancel(self.idx, op);
                }
            }
            ring.free_if_done(self.idx);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Connections on this thread's ring, live or waiting for their last
    /// completion.
    fn on_ring() -> usize {
        RING.with(|r| {
            r.borrow()
                .as_ref()
                .map_or(0, |r| r.conns.iter().flatten().count())
        })
    }

    /// `f` of the first connection on this thread's ring.
    fn first_conn<T>(f: impl FnOnce(&Conn) -> T) -> T {
        RING.with(|r| {
            f(r.borrow()
                .as_ref()
                .unwrap()
                .conns
                .iter()
                .flatten()
                .next()
                .unwrap())
        })
    }

    /// A connected pair: the client on the ring, the server's side as it is.
    async fn pair() -> Option<(Box<dyn super::super::io::Io>, TcpStream)> {
        if let Err(e) = probe() {
            eprintln!("skipped: io_uring is unavailable here ({e})");
            return None;
        }
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        Some((Stream::wrap(client).unwrap(), server))
    }

    /// Runs until `f` holds, letting the driver turn (no sleeping: each
    /// step yields to the runtime), or fails after 5 s.
    async fn until(mut f: impl FnMut() -> bool) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !f() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("condition never held");
    }

    /// A stream's bytes arrived when the turn that filed their receive
    /// read the clock, right after its enter: reading them later (its task
    /// ran after others of the same turn) does not move that time, and a
    /// read by a plain `recv` (after a receive that filled its buffer) is
    /// its own arrival, which the reader times.
    #[tokio::test]
    async fn a_receive_is_timed_by_the_turn_that_filed_it() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        assert_eq!(c.read_at(), None);
        let sent = Instant::now();
        s.write_all(b"ping").await.unwrap();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let _ = c.poll_read_ready(&mut cx);
        until(|| c.read_at().is_some()).await;
        let landed = c.read_at().unwrap();
        let seen = Instant::now();
        assert!(sent <= landed && landed <= seen);
        tokio::task::yield_now().await;
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!((&buf, c.read_at()), (b"ping", Some(landed)));

        // A buffer's worth and more: the receive fills its buffer, and the
        // rest is read by a plain `recv`.
        let big = vec![7u8; uring_bufs::SIZE * 3];
        s.write_all(&big).await.unwrap();
        let mut got = vec![0u8; big.len()];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(got, big);
        assert_eq!(c.read_at(), None, "the last read was a plain recv");

        // Nothing waiting: the read arms a receive (single-shot now, the
        // connection's answers being large), and the bytes land as before.
        let mut buf = [0u8; 4];
        let mut rb = ReadBuf::new(&mut buf);
        assert!(Pin::new(&mut c).poll_read(&mut cx, &mut rb).is_pending());
        assert_eq!(first_conn(|c| (c.large, c.recv)), (true, Recv::InFlight));
        s.write_all(b"pong").await.unwrap();
        until(|| c.read_at().is_some()).await;
        // Single-shot: the receive ended with its one completion (a
        // multishot one would stay armed).
        assert_eq!(
            first_conn(|c| c.recv),
            Recv::Idle,
            "the receive stayed armed"
        );
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
        assert!(c.read_at().is_some_and(|at| at >= seen));
    }

    /// A relay for the tests: takes `takes` bursts (keeping them, with
    /// their times), asking for `next` to be sent after each but the last,
    /// and declines the one after.
    struct Echo {
        takes: usize,
        next: &'static [u8],
        seen: RefCell<Vec<(Vec<u8>, Instant)>>,
        unsent: std::cell::Cell<Option<usize>>,
        left: std::cell::Cell<bool>,
    }

    impl Echo {
        fn new(takes: usize, next: &'static [u8]) -> Rc<Echo> {
            Rc::new(Echo {
                takes,
                next,
                seen: RefCell::new(Vec::new()),
                unsent: std::cell::Cell::new(None),
                left: std::cell::Cell::new(false),
            })
        }
    }

    impl Relay for Echo {
        fn landed(
            &self,
            bytes: &[u8],
            at: Instant,
            send: &mut dyn FnMut(&[u8]) -> usize,
        ) -> Relayed {
            let mut seen = self.seen.borrow_mut();
            if seen.len() == self.takes {
                return Relayed::Declined;
            }
            seen.push((bytes.to_vec(), at));
            if seen.len() == self.takes {
                return Relayed::Ended;
            }
            let went = send(self.next);
            if went < self.next.len() {
                self.unsent.set(Some(went));
                return Relayed::Ended;
            }
            Relayed::Sent
        }

        fn left(&self) {
            self.left.set(true);
        }
    }

    /// A relay takes each answer in the driver's turn, where it landed,
    /// and the request it gives is sent at once, with no task woken
    /// between: the reader is woken only when the relay ends. An answer it
    /// declines is read as any other.
    #[tokio::test]
    async fn a_relay_takes_answers_in_the_turn_and_sends_the_next_at_once() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let echo = Echo::new(3, b"next");
        let woken = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(woken.clone());
        let cx = Context::from_waker(&waker);
        assert!(c.relay(Some(echo.clone()), &cx));
        let mut buf = [0u8; 4];
        for answer in [&b"one"[..], b"two"] {
            s.write_all(answer).await.unwrap();
            // The next request comes back with no read by any task.
            s.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"next");
            assert!(!woken.0.load(Ordering::Relaxed), "the reader was woken");
        }
        s.write_all(b"three").await.unwrap();
        until(|| woken.0.load(Ordering::Relaxed)).await;
        let seen = echo.seen.borrow().clone();
        let bursts: Vec<&[u8]> = seen.iter().map(|(b, _)| &b[..]).collect();
        assert_eq!(bursts, [&b"one"[..], b"two", b"three"]);
        assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1));
        assert_eq!(echo.unsent.get(), None);
        // Over: nothing more is relayed, and every buffer is back.
        assert!(first_conn(|c| c.relay.is_none()));
        assert_eq!(RING.with(|r| r.borrow().as_ref().map_or(9, |r| r.lent)), 0);
        s.write_all(b"four").await.unwrap();
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"four");

        // Set again, a relay that declines its first answer leaves it to
        // the reader, whole.
        let declines = Echo::new(0, b"");
        woken.0.store(false, Ordering::Relaxed);
        assert!(c.relay(Some(declines.clone()), &cx));
        s.write_all(b"five").await.unwrap();
        until(|| woken.0.load(Ordering::Relaxed)).await;
        assert!(first_conn(|c| c.relay.is_none() && c.held.is_some()));
        assert!(!declines.left.get(), "it said it declined");
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"five");

        // Bytes that do not land alone (a full buffer: more is coming) are
        // never shown to the relay: it is over, and told so, and the
        // reader reads them; so is the end of the stream.
        for big in [true, false] {
            let Some((mut c, mut s)) = pair().await else {
                return;
            };
            let told = Echo::new(9, b"next");
            woken.0.store(false, Ordering::Relaxed);
            assert!(c.relay(Some(told.clone()), &cx));
            if big {
                s.write_all(&[b'z'; uring_bufs::SIZE * 2]).await.unwrap();
            } else {
                s.shutdown().await.unwrap();
            }
            until(|| woken.0.load(Ordering::Relaxed)).await;
            assert!(told.left.get() && told.seen.borrow().is_empty());
            let mut got = vec![0u8; uring_bufs::SIZE * 2];
            if big {
                c.read_exact(&mut got).await.unwrap();
                assert!(got.iter().all(|&b| b == b'z'));
            } else {
                assert_eq!(c.read(&mut got).await.unwrap(), 0);
            }
        }
    }

    /// A waker that raises a flag.
    struct Flag(AtomicBool);

    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    /// Landed bytes are lent to a reader where they lie, with when they
    /// landed: what it uses is read, the rest is left for the next read,
    /// and the buffer goes back to the pool once all of it is read.
    #[tokio::test]
    async fn landed_bytes_are_read_in_place_as_far_as_the_reader_takes_them() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut nothing = |_: &[u8], _| -> usize { unreachable!("nothing landed") };
        assert!(c.poll_read_landed(&mut cx, &mut nothing).is_pending());
        s.write_all(b"head+rest").await.unwrap();
        let mut seen = Vec::new();
        let mut take_head = |b: &[u8], at: Option<Instant>| {
            assert!(at.is_some());
            seen = b.to_vec();
            5
        };
        let mut landed = c.poll_read_landed(&mut cx, &mut take_head);
        until(|| {
            landed = c.poll_read_landed(&mut cx, &mut take_head);
            landed.is_ready()
        })
        .await;
        assert!(matches!(landed, Poll::Ready(Ok(true))));
        assert_eq!(seen, b"head+rest");
        let lent = || RING.with(|r| r.borrow().as_ref().map_or(0, |r| r.lent));
        assert_eq!(lent(), 1, "the buffer is still lent with bytes unread");
        let mut rest = [0u8; 4];
        c.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"rest");
        assert_eq!(lent(), 0);

        s.write_all(b"whole").await.unwrap();
        until(|| {
            c.poll_read_landed(&mut cx, &mut |b: &[u8], _| b.len())
                .is_ready()
        })
        .await;
        assert_eq!(lent(), 0, "read whole where it landed, given back");
        assert!(c.poll_read_landed(&mut cx, &mut nothing).is_pending());
    }

    #[tokio::test]
    async fn bytes_go_both_ways_and_the_end_of_the_stream_reads_as_zero() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut got = [0; 18];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"GET / HTTP/1.1\r\n\r\n");
        s.write_all(b"hello").await.unwrap();
        drop(s);
        let mut all = Vec::new();
        c.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"hello");
        // And again: the end stays the end.
        assert_eq!(c.read(&mut [0; 8]).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_peer_reset_is_a_connection_reset() {
        let Some((mut c, s)) = pair().await else {
            return;
        };
        // Linger 0: close sends RST.
        let off = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket and option of the right size.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&raw const off).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        drop(s);
        let e = c.read(&mut [0; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        assert_eq!(
            super::super::io::classify_io(&e, crate::model::Failure::Io),
            crate::model::Failure::Reset
        );
    }

    /// A write larger than the socket buffers, read by the server as it
    /// comes, arrives whole and in order (a send the kernel takes in part
    /// is continued where it stopped).
    #[tokio::test]
    async fn a_large_write_arrives_whole_and_in_order() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        c.write_all(&data).await.unwrap();
        c.shutdown().await.unwrap();
        assert!(reader.await.unwrap() == data, "bytes lost or reordered");
    }

    /// A body far larger than the ring's receive buffer (read partly
    /// through the ring, partly by plain receives into the reader's buffer
    /// once a receive came back full) arrives whole and in order, in any
    /// size of reads.
    #[tokio::test]
    async fn a_large_answer_arrives_whole_and_in_order() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 253) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            s.write_all(&sent).await.unwrap();
            s.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        let mut chunk = vec![0; 3000];
        for size in [3000, 64 * 1024, 100].into_iter().cycle() {
            chunk.resize(size, 0);
            let n = c.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        writer.await.unwrap();
        assert!(got == data, "bytes lost or reordered");
    }

    /// A read into a full buffer, just after a receive came back full (the
    /// next read is a plain `recv`), reads nothing and is not the end of
    /// the stream.
    #[tokio::test]
    async fn a_read_with_no_room_is_not_the_end_of_the_stream() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let data: Vec<u8> = (0..3 * uring_bufs::SIZE).map(|i| (i % 251) as u8).collect();
        s.write_all(&data).await.unwrap();
        let mut got = vec![0; uring_bufs::SIZE];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(c.read(&mut []).await.unwrap(), 0);
        let mut rest = vec![0; 2 * uring_bufs::SIZE];
        c.read_exact(&mut rest).await.unwrap();
        got.extend_from_slice(&rest);
        assert!(got == data, "bytes lost or reordered");
    }

    /// Answers on more connections than the pool has buffers, all landing
    /// before any is read: the pool grows to its largest, the receives
    /// past it wait for buffers to come back, and every connection reads
    /// its own bytes, whole and in order.
    #[tokio::test]
    async fn answers_on_more_connections_than_buffers_all_arrive_whole() {
        const CONNS: usize = 12;
        const LEN: usize = 3 * uring_bufs::SIZE / 2;
        let mut readers = Vec::new();
        let mut servers = Vec::new();
        for i in 0..CONNS {
            let Some((mut c, s)) = pair().await else {
                return;
            };
            servers.push(s);
            readers.push(tokio::spawn(async move {
                let mut got = vec![0; LEN];
                c.read_exact(&mut got).await.unwrap();
                (i, got)
            }));
        }
        // Every receive armed before any answer is sent.
        until(|| {
            RING.with(|r| {
                r.borrow().as_ref().is_some_and(|r| {
                    r.conns
                        .iter()
                        .flatten()
                        .filter(|c| c.recv == Recv::InFlight)
                        .count()
                        == CONNS
                })
            })
        })
        .await;
        for (i, s) in servers.iter_mut().enumerate() {
            let data: Vec<u8> = (0..LEN).map(|k| (k * 7 + i) as u8).collect();
            s.write_all(&data).await.unwrap();
        }
        for r in readers {
            let (i, got) = tokio::time::timeout(Duration::from_secs(5), r)
                .await
                .expect("a starved receive was never armed again")
                .unwrap();
            let want: Vec<u8> = (0..LEN).map(|k| (k * 7 + i) as u8).collect();
            assert!(got == want, "connection {i} read bytes not its own");
        }
        let lent = RING.with(|r| r.borrow().as_ref().map_or(0, |r| r.lent));
        assert_eq!(lent, 0, "buffers read to their end were not given back");
        let pool = RING.with(|r| r.borrow().as_ref().map_or(0, |r| r.bufs.len()));
        assert_eq!(
            pool,
            usize::from(uring_bufs::MAX),
            "the pool did not grow to its largest"
        );
    }

    /// Connections in one burst.
    const BURST: usize = 12;

    /// `BURST` connections whose answers all land in one turn of the ring
    /// (turned by the test, no await between), which finds the tests' pool
    /// of 2 dry. `None` where io_uring is unavailable.
    async fn dry_burst() -> Option<(Vec<Box<dyn super::super::io::Io>>, Vec<TcpStream>)> {
        let mut clients = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..BURST {
            let (c, s) = pair().await?;
            clients.push(c);
            servers.push(s);
        }
        // No await from here on: the driver task cannot turn the ring in
        // between, this function does.
        let turn = || RING.with(|r| r.borrow_mut().as_mut().map(Ring::turn));
        let mut cx = Context::from_waker(Waker::noop());
        for c in &mut clients {
            assert!(c.poll_read_ready(&mut cx).is_pending());
        }
        turn();
        for s in &servers {
            assert_eq!(s.try_write(b"answer").unwrap(), 6);
        }
        turn();
        Some((clients, servers))
    }

    /// This thread's ring's pool size and receives waiting for a buffer.
    fn pool_and_starved() -> (usize, usize) {
        RING.with(|r| {
            let r = r.borrow();
            let r = r.as_ref().unwrap();
            (r.bufs.len(), r.starved.len())
        })
    }

    /// Streams dropped while their receive waits for a buffer leave no
    /// waiting receive behind (which would count toward the pool's growth
    /// and turn the driver for nothing).
    #[tokio::test]
    async fn a_stream_dropped_while_starved_waits_no_more() {
        let Some((clients, _servers)) = dry_burst().await else {
            return;
        };
        assert!(pool_and_starved().1 > 0);
        drop(clients);
        assert_eq!(pool_and_starved().1, 0, "a dropped stream still waits");
    }

    /// A burst of answers that finds the pool dry doubles it once in that
    /// turn, not once for every receive that failed: the receives past the
    /// buffers it has then wait for the next turns.
    #[tokio::test]
    async fn a_dry_burst_doubles_the_pool_once_a_turn() {
        let Some((clients, _servers)) = dry_burst().await else {
            return;
        };
        let (pool, starved) = pool_and_starved();
        assert_eq!(pool, 4, "the pool of 2 doubled more than once in a turn");
        assert_eq!(starved, BURST - 4, "receives armed past the free buffers");
        // All read at once: buffers come back as their answers are read.
        let readers: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    let mut got = [0; 6];
                    c.read_exact(&mut got).await.map(|_| got)
                })
            })
            .collect();
        for (i, r) in readers.into_iter().enumerate() {
            let got = tokio::time::timeout(Duration::from_secs(5), r)
                .await
                .unwrap_or_else(|_| panic!("connection {i} never read its answer"))
                .unwrap()
                .unwrap();
            assert_eq!(&got, b"answer");
        }
    }

    /// Connections that end one after another, each read to its end, do
    /// not use the pool up: every buffer comes back, and none stays with a
    /// stream's end.
    #[tokio::test]
    async fn connections_read_to_their_end_give_their_buffers_back() {
        for _ in 0..3 * usize::from(uring_bufs::MAX) {
            let Some((mut c, mut s)) = pair().await else {
                return;
            };
            s.write_all(b"bye").await.unwrap();
            drop(s);
            let mut all = Vec::new();
            tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut all))
                .await
                .expect("the pool ran dry")
                .unwrap();
            assert_eq!(all, b"bye");
        }
        let lent = RING.with(|r| r.borrow().as_ref().map_or(0, |r| r.lent));
        assert_eq!(lent, 0, "a buffer stayed lent");
    }

    /// The receive stays armed: bursts that land before the reader reads
    /// wait behind one another and are read in the order they came, as
    /// much at once as the reader's buffer takes; a dropped stream gives
    /// back the buffers it never read.
    #[tokio::test]
    async fn bursts_landed_before_a_read_are_read_in_order() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let landed = |n: usize| first_conn(|c| c.held.iter().count() + c.queued.len() == n);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(c.poll_read_ready(&mut cx).is_pending());
        for (k, part) in [&b"one,"[..], b"two,", b"three"].into_iter().enumerate() {
            s.write_all(part).await.unwrap();
            until(|| landed(k + 1)).await;
        }
        let mut got = [0u8; 13];
        assert_eq!(c.read(&mut got).await.unwrap(), 13);
        assert_eq!(&got, b"one,two,three");
        let lent = || RING.with(|r| r.borrow().as_ref().map_or(0, |r| r.lent));
        assert_eq!(lent(), 0);

        s.write_all(b"unread").await.unwrap();
        s.write_all(b" too").await.unwrap();
        until(|| lent() > 0).await;
        drop(c);
        until(|| on_ring() == 0).await;
        assert_eq!(lent(), 0, "a buffer stayed lent");
    }

    /// A receive in flight when its stream is dropped (a timeout) is
    /// cancelled; its buffer is freed only with its completion, and the
    /// socket closes then (the server sees the end of the stream).
    #[tokio::test]
    async fn dropping_a_stream_with_a_receive_in_flight_cancels_it_and_closes_the_socket() {
        let Some((mut c, mut s)) = pair().await else {
            return;
        };
        let before = on_ring();
        let read = tokio::time::timeout(Duration::from_millis(10), c.read(&mut [0; 8])).await;
        assert!(read.is_err(), "nothing was sent: the read must time out");
        drop(c);
        assert_eq!(on_ring(), before, "freed before its receive completed");
        until(|| on_ring() == before - 1).await;
        assert_eq!(s.read(&mut [0; 8]).await.unwrap(), 0);
    }

    /// The same for a send the server never reads: cancelled, freed, closed.
    #[tokio::test]
    async fn dropping_a_stream_with_a_send_in_flight_cancels_it() {
        let Some((mut c, _s)) = pair().await else {
            return;
        };
        let before = on_ring();
        let big = vec![7u8; 16 << 20];
        let w = tokio::time::timeout(Duration::from_millis(50), c.write_all(&big)).await;
        assert!(w.is_err(), "the server reads nothing: the write must block");
        drop(c);
        until(|| on_ring() == before - 1).await;
    }

    /// A core's thread that ends with a receive in flight waits for its
    /// cancellation before the buffers go: the thread ends, and the socket
    /// is closed.
    #[test]
    fn a_thread_ending_with_a_receive_in_flight_cancels_it() {
        if probe().is_err() {
            eprintln!("skipped: io_uring is unavailable here");
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let tcp = TcpStream::connect(addr).await.unwrap();
                let mut c = Stream::wrap(tcp).unwrap();
                let r = tokio::time::timeout(Duration::from_millis(10), c.read(&mut [0; 8])).await;
                assert!(r.is_err());
                // Leaked into the runtime's end: the stream's drop
                // queues a cancel that no driver submits.
                std::mem::forget(tokio::spawn(async move {
                    let _keep = c;
                    std::future::pending::<()>().await
                }));
            });
        });
        let (mut s, _) = l.accept().unwrap();
        t.join().unwrap();
        use std::io::Read;
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(s.read(&mut [0; 8]).unwrap(), 0, "the socket stayed open");
    }

    /// Why the driver watches an eventfd: with DEFER_TASKRUN a completion
    /// waiting as task work signals the registered eventfd (and raises
    /// IORING_SQ_TASKRUN); whether it makes the ring's own fd readable is
    /// printed, not relied on.
    #[test]
    fn deferred_work_signals_the_eventfd() {
        let Ok(mut ring) = Ring::new() else {
            eprintln!("skipped: io_uring is unavailable here");
            return;
        };
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        let e = opcode::Recv::new(types::Fd(a.as_raw_fd()), buf.as_mut_ptr(), 8)
            .build()
            .user_data(1);
        // SAFETY: `buf` outlives the receive: the test waits for it below.
        unsafe { ring.ring.submission().push(&e) }.unwrap();
        ring.ring.submit().unwrap();
        let readable = |fd: RawFd| {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, 0) };
            p.revents & libc::POLLIN != 0
        };
        assert!(!readable(ring.eventfd.as_raw_fd()), "nothing completed yet");
        std::io::Write::write_all(&mut b, b"x").unwrap();
        assert!(
            readable(ring.eventfd.as_raw_fd()),
            "the eventfd was not signalled"
        );
        assert!(
            ring.ring.submission().taskrun(),
            "IORING_SQ_TASKRUN not raised"
        );
        eprintln!(
            "the ring fd is {}readable with deferred work waiting",
            if readable(ring.ring.as_raw_fd()) {
                ""
            } else {
                "not "
            }
        );
        ring.ring.submit().unwrap();
        assert_eq!(ring.ring.completion().next().map(|c| c.result()), Some(1));
    }

    /// The completions a pass's own enters post leave the eventfd alone
    /// (it is for waking a core that sleeps: each signal woke epoll for
    /// nothing), and work that came while the eventfd was off is taken by
    /// the pass, not left waiting unsignalled.
    #[test]
    fn a_pass_takes_its_work_without_signalling_the_eventfd() {
        let Ok(mut ring) = Ring::new() else {
            eprintln!("skipped: io_uring is unavailable here");
            return;
        };
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        recv_into(&mut ring, a.as_raw_fd(), &mut buf[0..1]);
        std::io::Write::write_all(&mut b, b"x").unwrap();
        // The deferred work's arrival signals it (and the read takes it).
        assert!(signalled(ring.eventfd.as_raw_fd()));
        ring.pass();
        assert!(
            !signalled(ring.eventfd.as_raw_fd()),
            "the pass's own completion signalled the eventfd"
        );
        assert!(!ring.ring.submission().taskrun(), "work left waiting");

        // Work that comes while the eventfd is off signals nothing; the
        // pass takes it all the same.
        recv_into(&mut ring, a.as_raw_fd(), &mut buf[1..2]);
        ring.ring.completion().disable_eventfd();
        std::io::Write::write_all(&mut b, b"y").unwrap();
        assert!(!signalled(ring.eventfd.as_raw_fd()));
        ring.ring.completion().enable_eventfd();
        ring.pass();
        assert!(!ring.ring.submission().taskrun(), "work left waiting");
        assert_eq!(&buf[..2], b"xy");
    }

    /// Arm a receive of `buf` on `fd` on the ring (its completion not
    /// looked at) and submit it. `buf` must outlive the receive.
    fn recv_into(ring: &mut Ring, fd: RawFd, buf: &mut [u8]) {
        let e = opcode::Recv::new(types::Fd(fd), buf.as_mut_ptr(), buf.len() as u32)
            .build()
            .user_data(CANCEL);
        // SAFETY: the caller keeps `buf` alive while the receive is armed.
        unsafe { ring.ring.submission().push(&e) }.unwrap();
        ring.ring.submit().unwrap();
    }

    /// Whether the eventfd `fd` was signalled since this last looked (the
    /// read takes the signal).
    fn signalled(fd: RawFd) -> bool {
        let mut n = 0u64;
        // SAFETY: reads at most 8 bytes into `n`; the eventfd does not
        // block.
        let r = unsafe { libc::read(fd, (&raw mut n).cast(), 8) };
        r == 8 && n > 0
    }

    /// A wait in the ring takes the completions that come, with the
    /// eventfd off (no epoll wake-up for what it takes itself), and ends
    /// by its alarm when nothing more comes.
    #[test]
    fn a_wait_in_the_ring_takes_what_comes_and_ends_at_its_alarm() {
        let Ok(mut ring) = Ring::new() else {
            eprintln!("skipped: io_uring is unavailable here");
            return;
        };
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut buf = [0u8; 1];
        recv_into(&mut ring, a.as_raw_fd(), &mut buf);
        // Taken in the wait's first enter; then nothing comes, and the
        // wait sleeps in its enter until the alarm.
        std::io::Write::write_all(&mut b, b"x").unwrap();
        let _ = signalled(ring.eventfd.as_raw_fd());
        ring.wait();
        assert_eq!(&buf, b"x");
        assert!(!ring.ring.submission().taskrun(), "work left waiting");
        assert!(
            ring.rang && !ring.alarm,
            "the wait did not end by its alarm"
        );
        // The next wait arms the alarm again.
        ring.wait();
        assert!(
            ring.rang && !ring.alarm,
            "the wait did not end by its alarm"
        );
        assert!(
            !signalled(ring.eventfd.as_raw_fd()),
            "a completion the wait took signalled the eventfd"
        );
    }

    /// Where no current-thread runtime runs (the driver needs one per
    /// core), a connection stays on tokio.
    #[test]
    fn a_multi_thread_runtime_keeps_tokio_streams() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(ring_here(), None);
        });
    }
}
