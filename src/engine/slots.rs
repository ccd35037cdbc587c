//! The slots of a core, polled from one task: a set of futures that polls
//! each one when it is woken, as `futures_util`'s `FuturesUnordered` does,
//! but made for one thread. A wake-up from the set's own thread (every
//! one a slot gets in practice: its answers, timers and work all come from
//! the core's runtime) puts the future on a plain queue, where
//! `FuturesUnordered`, made for wake-ups from any thread, takes four or
//! five atomic updates, and as many again to take it off its queue: on
//! this machine about a fiftieth of a request's CPU. A wake-up from
//! another thread still works, through a lock.

use std::cell::UnsafeCell;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

thread_local! {
    static HERE: u8 = const { 0 };
}

/// This thread, as the address of a thread-local: cheaper to read than
/// `thread::current().id()`, and no two live threads share it.
fn this_thread() -> usize {
    HERE.with(|h| std::ptr::from_ref(h) as usize)
}

/// A set of futures run to their end, each polled when woken; itself a
/// future, ready when all of them are.
pub(crate) struct Slots<F> {
    nodes: Vec<Arc<Node<F>>>,
    shared: Arc<Shared>,
    /// The futures being polled (the queue taken), kept for its memory.
    batch: Vec<usize>,
    /// Futures not ended.
    live: usize,
    /// The waker left with `Shared::remote` for wake-ups from other
    /// threads: registered again (under its lock) only when the task
    /// polling the set changes, not at every poll.
    remote_parent: Option<Waker>,
    /// Not `Send`: `Shared::owner` is the thread it was made on.
    _here: PhantomData<*const ()>,
}

/// What a future's waker reaches.
struct Shared {
    owner: usize,
    /// Touched only on the owner thread, and never across a call that
    /// could wake a future: no two references to it are ever alive.
    local: UnsafeCell<Queue>,
    /// Wake-ups from other threads.
    remote: Mutex<Remote>,
    has_remote: AtomicBool,
}

// SAFETY: `local` is only touched on the owner thread (see `Shared::wake`
// and `Slots`, which is not `Send`); `remote` is behind a lock.
unsafe impl Sync for Shared {}
// SAFETY: as for `Sync` above.
unsafe impl Send for Shared {}

/// The futures woken on the owner thread.
#[derive(Default)]
struct Queue {
    /// Futures woken, by index, once each.
    woken: Vec<usize>,
    /// Whether each future is in `woken`.
    queued: Vec<bool>,
    /// The task polling the set, while it waits.
    parent: Option<Waker>,
}

/// The futures woken on other threads.
#[derive(Default)]
struct Remote {
    /// Futures woken, by index (the poll drops repeats).
    woken: Vec<usize>,
    /// The task polling the set.
    parent: Option<Waker>,
}

/// One future of the set. A waker's data points here, so the future
/// itself follows the header (`repr(C)`): the ring driver's prefetch of a
/// woken task's lines (`uring::prefetch_task`) brings the future in.
#[repr(C)]
struct Node<F> {
    shared: Arc<Shared>,
    index: usize,
    /// `None` once it ended or the set was dropped: only the owner thread
    /// polls or drops it, so the last reference, wherever it goes, drops
    /// no future.
    future: UnsafeCell<Option<F>>,
}

// SAFETY: the future is only touched on the owner thread (polled and
// dropped by `Slots`, and see `Drop` below); other threads reach `shared`
// and `index` alone.
unsafe impl<F> Sync for Node<F> {}
// SAFETY: as for `Sync` above.
unsafe impl<F> Send for Node<F> {}

impl<F> Drop for Node<F> {
    fn drop(&mut self) {
        // A future still here (the set's drop unwound from a panic in an
        // earlier future's destructor) is leaked off the owner thread,
        // never dropped there.
        if this_thread() != self.shared.owner {
            if let Some(f) = self.future.get_mut().take() {
                std::mem::forget(f);
            }
        }
    }
}

impl<F> Node<F> {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        Self::clone_raw,
        Self::wake_raw,
        Self::wake_by_ref_raw,
        Self::drop_raw,
    );

    /// A waker for `node`, borrowed: no reference counted.
    fn waker_ref(node: &Arc<Node<F>>) -> ManuallyDrop<Waker> {
        let p = Arc::as_ptr(node).cast::<()>();
        // SAFETY: the vtable's functions take `p` as an `Arc<Node<F>>`'s
        // pointer, which it is; `ManuallyDrop` leaves its count alone.
        ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(p, &Self::VTABLE)) })
    }

    unsafe fn clone_raw(p: *const ()) -> RawWaker {
        // SAFETY: `p` is an `Arc<Node<F>>`'s pointer (see `waker_ref`).
        unsafe { Arc::increment_strong_count(p.cast::<Node<F>>()) };
        RawWaker::new(p, &Self::VTABLE)
    }

    unsafe fn wake_raw(p: *const ()) {
        // SAFETY: as in `clone_raw`; this waker's count is released.
        unsafe {
            Self::wake_by_ref_raw(p);
            Self::drop_raw(p);
        }
    }

    unsafe fn wake_by_ref_raw(p: *const ()) {
        // SAFETY: as in `clone_raw`: the waker holds a count, so the node
        // lives.
        let node = unsafe { &*p.cast::<Node<F>>() };
        node.shared.wake(node.index);
    }

    unsafe fn drop_raw(p: *const ()) {
        // SAFETY: as in `clone_raw`; the count this waker held.
        drop(unsafe { Arc::from_raw(p.cast::<Node<F>>()) });
    }
}

impl Shared {
    /// Queue future `index` to be polled and wake the task polling the set.
    fn wake(&self, index: usize) {
        let parent = if this_thread() == self.owner {
            // SAFETY: on the owner thread, and the reference ends before
            // the wake below (which could come back here).
            let q = unsafe { &mut *self.local.get() };
            if !q.queued[index] {
                q.queued[index] = true;
                q.woken.push(index);
            }
            q.parent.take()
        } else {
            let mut q = self.remote.lock().unwrap_or_else(PoisonError::into_inner);
            q.woken.push(index);
            self.has_remote.store(true, Ordering::Release);
            q.parent.clone()
        };
        if let Some(p) = parent {
            p.wake();
        }
    }

    /// The local queue.
    ///
    /// # Safety
    /// On the owner thread only, and the reference must end before any
    /// call that could wake a future of the set.
    #[allow(clippy::mut_from_ref)]
    unsafe fn local(&self) -> &mut Queue {
        // SAFETY: as the caller promises.
        unsafe { &mut *self.local.get() }
    }
}

impl<F: Future<Output = ()>> Slots<F> {
    pub fn new() -> Slots<F> {
        Slots {
            nodes: Vec::new(),
            shared: Arc::new(Shared {
                owner: this_thread(),
                local: UnsafeCell::default(),
                remote: Mutex::default(),
                has_remote: AtomicBool::new(false),
            }),
            batch: Vec::new(),
            live: 0,
            remote_parent: None,
            _here: PhantomData,
        }
    }

    /// Add a future, polled first in the set's next poll.
    pub fn push(&mut self, future: F) {
        let index = self.nodes.len();
        self.nodes.push(Arc::new(Node {
            shared: self.shared.clone(),
            index,
            future: UnsafeCell::new(Some(future)),
        }));
        self.live += 1;
        // SAFETY: on the owner thread (`Slots` is not `Send`); nothing is
        // called while it is borrowed.
        let q = unsafe { self.shared.local() };
        q.queued.push(true);
        q.woken.push(index);
    }
}

impl<F: Future<Output = ()>> Future for Slots<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let shared = &*this.shared;
        if shared.has_remote.swap(false, Ordering::Acquire) {
            let woken = std::mem::take(
                &mut shared
                    .remote
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .woken,
            );
            // SAFETY: on the owner thread; nothing is called while it is
            // borrowed.
            let q = unsafe { shared.local() };
            for i in woken {
                if !std::mem::replace(&mut q.queued[i], true) {
                    q.woken.push(i);
                }
            }
        }
        // Poll the futures woken so far, each once; those woken meanwhile
        // wait for the next poll, after the runtime's other tasks.
        {
            // SAFETY: as above.
            let q = unsafe { shared.local() };
            std::mem::swap(&mut q.woken, &mut this.batch);
        }
        for &i in &this.batch {
            // SAFETY: as above.
            unsafe { shared.local() }.queued[i] = false;
            let node = &this.nodes[i];
            // SAFETY: only this thread touches a node's future, here and
            // in `drop`, one reference at a time.
            let slot = unsafe { &mut *node.future.get() };
            let Some(future) = slot.as_mut() else {
                continue;
            };
            let waker = Node::waker_ref(node);
            // SAFETY: the future stays where it is, in its node, until it
            // is dropped in place.
            let future = unsafe { Pin::new_unchecked(future) };
            if future.poll(&mut Context::from_waker(&waker)).is_ready() {
                *slot = None;
                this.live -= 1;
            }
        }
        this.batch.clear();
        if this.live == 0 {
            return Poll::Ready(());
        }
        // SAFETY: as above.
        let q = unsafe { shared.local() };
        if !q.woken.is_empty() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        match &mut q.parent {
            Some(w) => w.clone_from(cx.waker()),
            none => *none = Some(cx.waker().clone()),
        }
        if !this
            .remote_parent
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            let w = cx.waker().clone();
            shared
                .remote
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .parent = Some(w.clone());
            this.remote_parent = Some(w);
            // A wake-up from another thread between the look at the start
            // and this registration found no waker, or the old one: look
            // again.
            if shared.has_remote.load(Ordering::Acquire) {
                cx.waker().wake_by_ref();
            }
        }
        Poll::Pending
    }
}

impl<F> Drop for Slots<F> {
    fn drop(&mut self) {
        // On the owner thread: the futures end here, whoever holds their
        // wakers.
        for node in &self.nodes {
            // SAFETY: see `poll`.
            unsafe { *node.future.get() = None };
        }
        // SAFETY: on the owner thread; the waker is dropped after.
        let parent = unsafe { self.shared.local() }.parent.take();
        drop(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    /// A future that ends after `n` polls, recording each, and leaves its
    /// waker where the test can take it.
    fn counted(
        id: usize,
        n: usize,
        log: Rc<RefCell<Vec<usize>>>,
        waker: Rc<RefCell<Option<Waker>>>,
    ) -> impl Future<Output = ()> {
        let mut polls = 0;
        std::future::poll_fn(move |cx| {
            log.borrow_mut().push(id);
            polls += 1;
            if polls == n {
                return Poll::Ready(());
            }
            *waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    struct Flag(AtomicBool);
    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn polls_a_future_only_when_it_is_woken_and_ends_when_all_end() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let wakers: Vec<_> = (0..3).map(|_| Rc::new(RefCell::new(None))).collect();
        let mut set = Slots::new();
        for (i, w) in wakers.iter().enumerate() {
            set.push(counted(i, 2 + i, log.clone(), w.clone()));
        }
        let parent = Arc::new(Flag(AtomicBool::new(false)));
        let parent_waker = Waker::from(parent.clone());
        let mut cx = Context::from_waker(&parent_waker);
        let mut set = std::pin::pin!(set);
        // First poll: every future once.
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(*log.borrow(), [0, 1, 2]);
        // Nothing woken: nothing polled.
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(log.borrow().len(), 3);
        // Woken twice: polled once; the parent is woken.
        let w1: Waker = wakers[1].borrow_mut().take().unwrap();
        w1.wake_by_ref();
        w1.wake_by_ref();
        assert!(parent.0.swap(false, Ordering::SeqCst));
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(log.borrow()[3..], [1]);
        // Future 0 ends at its second poll; a wake of its old waker later
        // polls nothing.
        let w0 = wakers[0].borrow_mut().take().unwrap();
        w0.wake_by_ref();
        assert!(set.as_mut().poll(&mut cx).is_pending());
        w0.wake();
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(log.borrow()[4..], [0]);
        // The rest end; the set is ready then.
        for _ in 0..3 {
            for w in &wakers[1..] {
                if let Some(w) = w.borrow_mut().take() {
                    w.wake();
                }
            }
            let _ = set.as_mut().poll(&mut cx);
        }
        assert!(set.as_mut().poll(&mut cx).is_ready());
        assert_eq!(log.borrow()[5..], [1, 2, 2, 2]);
    }

    #[test]
    fn a_future_woken_while_polled_runs_again_after_the_others() {
        let polls = Rc::new(Cell::new(0));
        let mut set = Slots::new();
        let p = polls.clone();
        set.push(std::future::poll_fn(move |cx| {
            p.set(p.get() + 1);
            if p.get() == 3 {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }));
        let parent = Arc::new(Flag(AtomicBool::new(false)));
        let parent_waker = Waker::from(parent.clone());
        let mut cx = Context::from_waker(&parent_waker);
        let mut set = std::pin::pin!(set);
        // Polled once a poll of the set, which yields (wakes its task).
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls.get(), 1);
        assert!(parent.0.swap(false, Ordering::SeqCst));
        assert!(set.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls.get(), 2);
        assert!(set.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_wake_from_another_thread_reaches_the_future() {
        // `during`: the other thread wakes the future while the set polls
        // it, before the set has registered its own waker.
        for during in [false, true] {
            let polls = Rc::new(Cell::new(0));
            let kept = Rc::new(RefCell::new(None::<Waker>));
            let mut set = Slots::new();
            let (p, k) = (polls.clone(), kept.clone());
            set.push(std::future::poll_fn(move |cx| {
                p.set(p.get() + 1);
                if p.get() == 2 {
                    return Poll::Ready(());
                }
                let w = cx.waker().clone();
                if during {
                    std::thread::spawn(move || w.wake()).join().unwrap();
                } else {
                    *k.borrow_mut() = Some(w);
                }
                Poll::Pending
            }));
            let parent = Arc::new(Flag(AtomicBool::new(false)));
            let parent_waker = Waker::from(parent.clone());
            let mut cx = Context::from_waker(&parent_waker);
            assert!(Pin::new(&mut set).poll(&mut cx).is_pending());
            if let Some(w) = kept.borrow_mut().take() {
                std::thread::spawn(move || w.wake()).join().unwrap();
            }
            // The task polling the set is woken, and its next poll polls
            // the future.
            assert!(parent.0.load(Ordering::SeqCst), "during: {during}");
            assert!(Pin::new(&mut set).poll(&mut cx).is_ready());
            assert_eq!(polls.get(), 2);
        }
    }

    #[test]
    fn wake_ups_from_another_thread_while_the_set_polls() {
        // Another thread wakes the future without pause while this one
        // polls the set: nothing is lost, and (under Miri, in CI) the two
        // threads never touch the same memory unsynchronised.
        const POLLS: usize = 20;
        let polls = Rc::new(Cell::new(0));
        let (tx, rx) = std::sync::mpsc::channel::<Waker>();
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = Slots::new();
        let p = polls.clone();
        set.push(std::future::poll_fn(move |cx| {
            p.set(p.get() + 1);
            if p.get() == 1 {
                tx.send(cx.waker().clone()).unwrap();
            }
            if p.get() == POLLS {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        let s = stop.clone();
        let waking = std::thread::spawn(move || {
            let w = rx.recv().unwrap();
            while !s.load(Ordering::SeqCst) {
                w.wake_by_ref();
                std::thread::yield_now();
            }
        });
        let parent = Arc::new(Flag(AtomicBool::new(false)));
        let parent_waker = Waker::from(parent.clone());
        let mut cx = Context::from_waker(&parent_waker);
        while Pin::new(&mut set).poll(&mut cx).is_pending() {
            while !parent.0.swap(false, Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::SeqCst);
        waking.join().unwrap();
        assert_eq!(polls.get(), POLLS);
    }

    #[test]
    fn dropping_the_set_drops_its_futures_and_their_wakers_stay_safe() {
        struct Dropped(Rc<Cell<bool>>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let dropped = Rc::new(Cell::new(false));
        let kept = Rc::new(RefCell::new(None::<Waker>));
        let mut set = Slots::new();
        let (d, k) = (Dropped(dropped.clone()), kept.clone());
        set.push(std::future::poll_fn(move |cx| {
            let _ = &d;
            *k.borrow_mut() = Some(cx.waker().clone());
            Poll::<()>::Pending
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut set).poll(&mut cx).is_pending());
        drop(set);
        assert!(dropped.get());
        // The waker outlives the set: waking and dropping it, here and on
        // another thread, touch no future.
        let w = kept.borrow_mut().take().unwrap();
        w.wake_by_ref();
        std::thread::spawn(move || w.wake()).join().unwrap();
    }
}
