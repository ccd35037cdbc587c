//! The receive buffers of a core's io_uring ring: a provided-buffer ring
//! (`IORING_REGISTER_PBUF_RING`, Linux 5.19+) from which the kernel takes a
//! buffer only when a receive has bytes to land, rather than one buffer
//! per connection held for as long as its receive waits. Ten thousand
//! connections waiting on slow answers then hold no receive memory; the
//! buffers in use are those whose bytes a task has not read yet, about a
//! turn's worth of answers. (The ring is first in, first out: a buffer
//! given back is taken again after every other free one.)
//!
//! The pool starts small and doubles (at most once a turn) when receives
//! find it empty (`ENOBUFS`), up to [`MAX`] buffers; past that, the ring
//! re-arms such a receive when a buffer comes back (see `uring.rs`).

use std::alloc::Layout;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::Submitter;

/// The size of each buffer: a small answer, head and body, in one receive.
pub(super) const SIZE: usize = 4096;
/// The buffer group's id (one group per ring).
pub(super) const GROUP: u16 = 0;
/// Buffers to start with. (Tests start with fewer, so that running dry is
/// what they exercise.)
const INITIAL: u16 = if cfg!(test) { 2 } else { 64 };
/// The most buffers (a power of two: the ring has this many entries):
/// 16 MiB per core.
pub(super) const MAX: u16 = if cfg!(test) { 8 } else { 4096 };
/// The ring's entries are page-aligned.
const PAGE: usize = 4096;

/// A ring of provided buffers, registered with one io_uring instance.
pub(super) struct Bufs {
    /// `MAX` entries, shared with the kernel, which takes them from its
    /// head up to `tail`.
    entries: NonNull<BufRingEntry>,
    /// The tail published to the kernel.
    tail: u16,
    /// The buffers, by id; never moved while the ring lives.
    bufs: Vec<Box<[u8]>>,
    /// The kernel may still use the memory: never free it.
    leaked: bool,
}

impl Bufs {
    /// Allocate the ring with [`INITIAL`] buffers and register it as
    /// group [`GROUP`].
    ///
    /// # Errors
    /// Registration refused (a kernel before 5.19).
    pub(super) fn new(submitter: &Submitter<'_>) -> io::Result<Bufs> {
        let layout = entries_layout();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let entries = NonNull::new(raw.cast::<BufRingEntry>())
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut bufs = Bufs {
            entries,
            tail: 0,
            bufs: Vec::new(),
            leaked: false,
        };
        // SAFETY: `entries` is page-aligned memory for `MAX` entries,
        // zeroed (a tail of 0), which lives until the ring is unregistered
        // (see `Drop`).
        unsafe { submitter.register_buf_ring_with_flags(entries.as_ptr() as u64, MAX, GROUP, 0)? };
        bufs.add(INITIAL);
        Ok(bufs)
    }

    /// Double the pool, up to [`MAX`] buffers.
    pub(super) fn grow(&mut self) {
        let have = self.bufs.len() as u16;
        self.add(have.min(MAX - have));
    }

    /// Buffers in the pool, in use or not.
    pub(super) fn len(&self) -> usize {
        self.bufs.len()
    }

    /// Buffer `id`'s bytes.
    pub(super) fn get(&self, id: u16) -> &[u8] {
        &self.bufs[usize::from(id)]
    }

    /// Hand buffer `id` back to the kernel.
    pub(super) fn give(&mut self, id: u16) {
        self.put(id);
        self.publish();
    }

    /// The kernel may still write into the buffers: keep their memory
    /// for the rest of the process.
    pub(super) fn leak(&mut self) {
        self.leaked = true;
    }

    /// `n` new buffers, handed to the kernel.
    fn add(&mut self, n: u16) {
        for _ in 0..n {
            let id = self.bufs.len() as u16;
            self.bufs.push(vec![0; SIZE].into_boxed_slice());
            self.put(id);
        }
        self.publish();
    }

    /// Write buffer `id` into the entry at the tail (not yet published).
    fn put(&mut self, id: u16) {
        let slot = usize::from(self.tail & (MAX - 1));
        let buf = &mut self.bufs[usize::from(id)];
        // SAFETY: `slot` < MAX, inside the allocation; the kernel reads
        // only entries before the published tail, and this one is past it.
        let entry = unsafe { &mut *self.entries.as_ptr().add(slot) };
        entry.set_addr(buf.as_mut_ptr() as u64);
        entry.set_len(SIZE as u32);
        entry.set_bid(id);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Let the kernel see the entries put so far.
    fn publish(&self) {
        // SAFETY: the tail field lies in the first entry, inside the
        // allocation, and is only ever accessed atomically by this side;
        // the release orders the entries' writes before it.
        unsafe {
            let tail = BufRingEntry::tail(self.entries.as_ptr()).cast_mut();
            (*tail.cast::<AtomicU16>()).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for Bufs {
    fn drop(&mut self) {
        if self.leaked {
            std::mem::forget(std::mem::take(&mut self.bufs));
            return;
        }
        // SAFETY: allocated in `new` with this layout; the ring is
        // unregistered (or its descriptor closed) and nothing is in flight
        // by then (see `Ring`'s drop).
        unsafe { std::alloc::dealloc(self.entries.as_ptr().cast(), entries_layout()) };
    }
}

fn entries_layout() -> Layout {
    Layout::from_size_align(usize::from(MAX) * std::mem::size_of::<BufRingEntry>(), PAGE)
        .unwrap_or_else(|_| unreachable!("a constant, valid layout"))
}
