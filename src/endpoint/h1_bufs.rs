//! Read and write buffers for HTTP/1.1 connections, lent from a per-thread
//! pool.
//!
//! A connection holds a read buffer only while bytes of an answer are in
//! it: it waits for its stream to have bytes before it takes one
//! (`Io::poll_read_ready`), and gives it back once the answer is read. So
//! 10,000 connections waiting on slow answers hold no read buffers (4 KiB
//! each, 40 MB in all, when every connection kept its own). It holds a
//! write buffer only from the request's serialization to the end of its
//! write. The few buffers that cycle are the ones last used, still in
//! cache: the pool is last in, first out, so an answer is read into the
//! buffer its request was just written from.
//!
//! A body kept for the comparison is copied out of the read buffer into
//! the thread's [`Slab`] ([`keep`]), so the buffer goes back to the pool
//! and the body costs no allocation of its own.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

use crate::slab::Slab;

/// A buffer's size when the pool makes one: a small answer, head and body,
/// comes in one read.
pub(crate) const INITIAL: usize = 4 * 1024;
/// The most buffers a thread keeps for reuse (1 MiB of them); more are
/// freed as they come back.
const KEEP: usize = 256;
/// A buffer grown larger than this for a large answer is freed rather than
/// kept, so the pool does not pin the memory of one large answer.
const LARGEST_KEPT: usize = 4 * INITIAL;

thread_local! {
    static POOL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
    static BODIES: RefCell<Slab> = RefCell::new(Slab::new());
}

/// A copy of a kept body, made in this thread's slab.
pub(crate) fn keep(body: &[u8]) -> Bytes {
    BODIES.with_borrow_mut(|slab| slab.copy(body))
}

/// An empty buffer with room for at least [`INITIAL`] bytes: the one last
/// given back on this thread, or a new one.
pub(crate) fn take() -> BytesMut {
    POOL.with_borrow_mut(Vec::pop)
        .unwrap_or_else(|| BytesMut::with_capacity(INITIAL))
}

/// Give back a buffer whose bytes were all read. It is kept when all of its
/// memory is its own again (no body split from it still lives) and it is
/// not large; otherwise it is freed.
pub(crate) fn give(mut buf: BytesMut) {
    buf.clear();
    if !buf.try_reclaim(INITIAL) || buf.capacity() > LARGEST_KEPT {
        return;
    }
    POOL.with_borrow_mut(|pool| {
        if pool.len() < KEEP {
            pool.push(buf);
        }
    });
}

/// How many buffers this thread's pool holds.
#[cfg(test)]
pub(crate) fn pooled() -> usize {
    POOL.with_borrow(Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_given_back_last_is_taken_first() {
        let a = take();
        let b = take();
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        give(a);
        give(b);
        assert_eq!(take().as_ptr(), pb);
        assert_eq!(take().as_ptr(), pa);
    }

    #[test]
    fn a_read_buffer_comes_back_empty_with_its_room() {
        let mut a = take();
        a.extend_from_slice(&[7; 100]);
        bytes::Buf::advance(&mut a, 100);
        give(a);
        let b = take();
        assert!(b.is_empty());
        assert!(b.capacity() >= INITIAL);
    }

    #[test]
    fn a_buffer_a_body_still_shares_is_not_kept() {
        let before = pooled();
        let mut a = take();
        a.extend_from_slice(&[1; INITIAL]);
        let body = a.split_to(INITIAL / 2).freeze();
        bytes::Buf::advance(&mut a, INITIAL / 2);
        give(a);
        assert_eq!(pooled(), before);
        assert_eq!(body.len(), INITIAL / 2);
    }

    #[test]
    fn a_large_buffer_is_freed_not_kept() {
        let before = pooled();
        give(BytesMut::with_capacity(LARGEST_KEPT * 2));
        assert_eq!(pooled(), before);
    }
}
