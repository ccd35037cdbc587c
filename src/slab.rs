//! Small byte strings copied into shared chunks: one allocation per chunk,
//! not one per string.
//!
//! A request stream makes a body of its own for every line it reads, and
//! every answer whose body is kept for the comparison makes another. Each
//! was a `malloc` and a `free` (the line's freed on another thread than
//! the one that made it, which glibc makes dear): about 230 instructions
//! an allocation, 9 % of a compared stream's instructions (callgrind,
//! `run.sh stream2`'s run). A [`Slab`] copies
//! each one into the free end of a chunk and hands it on as a [`Bytes`]
//! that shares the chunk: a reference count, taken and given back, per
//! body, and a chunk freed when its last body is dropped.
//!
//! A chunk is never written where a body was split off it, so a body is
//! as owned as a copy of its own. What it costs is memory held late: a
//! chunk lives as long as its longest-lived body. That is at most
//! [`CHUNK`] bytes for each body still alive (a stream's open units are
//! at most `--lead` a core); a body longer than [`LARGEST`] is copied on
//! its own, as before.

use bytes::{Bytes, BytesMut};

/// A chunk's size.
pub const CHUNK: usize = 8 * 1024;
/// The longest string copied into a chunk; a longer one gets an
/// allocation of its own.
pub const LARGEST: usize = CHUNK / 8;

/// Copies small byte strings into shared chunks.
#[derive(Debug, Default)]
pub struct Slab {
    chunk: BytesMut,
}

impl Slab {
    /// An empty slab; its first copy makes its first chunk.
    pub fn new() -> Self {
        Slab::default()
    }

    /// A copy of `bytes`, in this slab's chunk when it is short.
    pub fn copy(&mut self, bytes: &[u8]) -> Bytes {
        if bytes.is_empty() {
            return Bytes::new();
        }
        if bytes.len() > LARGEST {
            return Bytes::copy_from_slice(bytes);
        }
        if self.chunk.capacity() - self.chunk.len() < bytes.len() {
            self.chunk = BytesMut::with_capacity(CHUNK);
        }
        self.chunk.extend_from_slice(bytes);
        self.chunk.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_equal_to_their_source_and_share_a_chunk() {
        let mut slab = Slab::new();
        let a = slab.copy(b"first");
        let b = slab.copy(b"second");
        assert_eq!(&a[..], b"first");
        assert_eq!(&b[..], b"second");
        // Side by side in one chunk.
        assert_eq!(a.as_ptr().wrapping_add(a.len()), b.as_ptr());
    }

    #[test]
    fn a_copy_outlives_its_slab_and_later_copies() {
        let mut slab = Slab::new();
        let a = slab.copy(b"kept");
        for i in 0..CHUNK {
            drop(slab.copy(&[i as u8; 100][..1 + i % 100]));
        }
        drop(slab);
        assert_eq!(&a[..], b"kept");
    }

    #[test]
    fn a_full_chunk_is_followed_by_a_new_one() {
        let mut slab = Slab::new();
        let bodies: Vec<Bytes> = (0..(CHUNK / LARGEST) * 3)
            .map(|i| slab.copy(&vec![i as u8; LARGEST]))
            .collect();
        for (i, b) in bodies.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u8), "body {i}");
        }
        let distinct = |a: &Bytes, b: &Bytes| a.as_ptr().wrapping_add(a.len()) != b.as_ptr();
        let new_chunks = bodies.windows(2).filter(|w| distinct(&w[0], &w[1])).count();
        assert_eq!(new_chunks, 2);
    }

    #[test]
    fn a_long_string_and_an_empty_one_take_no_room() {
        let mut slab = Slab::new();
        let a = slab.copy(b"a");
        let long = slab.copy(&vec![7; LARGEST + 1]);
        assert_eq!(long.len(), LARGEST + 1);
        assert!(slab.copy(b"").is_empty());
        let b = slab.copy(b"b");
        assert_eq!(a.as_ptr().wrapping_add(1), b.as_ptr());
    }
}
