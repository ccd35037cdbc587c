//! Pairing the elements of two arrays compared unordered or by key: each
//! reference element with the first unused candidate element that is the
//! same, searching on from the previous pairing. With a hash that is equal
//! for any two values that are the same, the search looks only among the
//! candidates of that hash, in the same order: the same pairs, without
//! testing every candidate (reversed arrays of n elements took n²/2 tests).

use super::tape::{Kind, Tape};

/// The outcome of pairing two sequences' elements.
pub struct Pairing {
    /// For each reference element, the candidate element paired with it.
    pub of_reference: Vec<Option<usize>>,
    /// Whether each candidate element was paired.
    pub candidate_used: Vec<bool>,
}

/// Pairs each of `n` reference elements with the first unused one of `m`
/// candidate elements that `same` accepts, searching from just after the
/// previous pairing so that elements in (nearly) the same order cost one
/// test each.
pub fn pair_up(n: usize, m: usize, same: impl FnMut(usize, usize) -> bool) -> Pairing {
    pair(n, m, None, same)
}

/// [`pair_up`], testing only candidates whose hash in `hashes.1` is the
/// reference element's in `hashes.0`: `same` must never accept two
/// elements of different hashes.
pub fn pair_by_hash(hashes: (&[u64], &[u64]), same: impl FnMut(usize, usize) -> bool) -> Pairing {
    pair(hashes.0.len(), hashes.1.len(), Some(hashes), same)
}

fn pair(
    n: usize,
    m: usize,
    hashes: Option<(&[u64], &[u64])>,
    mut same: impl FnMut(usize, usize) -> bool,
) -> Pairing {
    let mut candidate_used = vec![false; m];
    let mut of_reference = Vec::with_capacity(n);
    // The candidates by hash, each hash's in ascending order.
    let mut by_hash: Vec<(u64, usize)> = hashes.map_or_else(Vec::new, |(_, hb)| {
        hb.iter().enumerate().map(|(j, h)| (*h, j)).collect()
    });
    by_hash.sort_unstable();
    let mut next = 0;
    for i in 0..n {
        let mut free = |j: &usize| !candidate_used[*j] && same(i, *j);
        let found = match hashes {
            Some((ha, _)) => {
                let from = by_hash.partition_point(|(h, _)| *h < ha[i]);
                let to = from + by_hash[from..].partition_point(|(h, _)| *h == ha[i]);
                let list = &by_hash[from..to];
                let split = list.partition_point(|(_, j)| *j < next);
                let cyclic = list[split..].iter().chain(&list[..split]);
                cyclic.map(|(_, j)| *j).find(|j| free(j))
            }
            None => (0..m).map(|k| (next + k) % m).find(|j| free(j)),
        };
        if let Some(j) = found {
            candidate_used[j] = true;
            next = j + 1;
        }
        of_reference.push(found);
    }
    Pairing {
        of_reference,
        candidate_used,
    }
}

/// A hash of the value at `i` equal for any two values that are equal with
/// no rules: strings decoded, numbers by value, object members in any
/// order (the last of a key written twice), array items in any order (so
/// that arrays compared unordered inside hash alike too).
pub fn strict_hash(tape: &Tape<'_>, i: u32) -> u64 {
    match tape.kind(i) {
        Kind::Null => 1,
        Kind::True => 2,
        Kind::False => 3,
        Kind::Number => {
            // Equal values are the same f64 (parsing rounds correctly);
            // -0 is 0.
            let x = tape.text(i).parse::<f64>().map_or(0.5, |x| x + 0.0);
            mix(4, x.to_bits())
        }
        Kind::String => mix(5, bytes_hash(tape.string(i).as_bytes())),
        Kind::Array => tape.items(i).fold(6, |sum, item| {
            sum.wrapping_add(mix(6, strict_hash(tape, item)))
        }),
        Kind::Object => object_hash(tape, i),
    }
}

/// The members' hashes summed; a key written twice counts once, with its
/// last value.
fn object_hash(tape: &Tape<'_>, i: u32) -> u64 {
    let key = |k: u32| bytes_hash(tape.string(k).as_bytes());
    let member = |(k, v): (u64, u32)| mix(k, strict_hash(tape, v));
    // A key hash seen twice shows as a bit set twice; a bit set twice is
    // only then checked by sorting.
    let mut bits = [0u64; 64];
    let mut maybe_repeats = false;
    let mut sum = 7u64;
    for (k, v) in tape.members(i) {
        let kh = key(k);
        let (word, bit) = ((kh >> 58) as usize, 1u64 << ((kh >> 52) & 63));
        maybe_repeats |= bits[word] & bit != 0;
        bits[word] |= bit;
        sum = sum.wrapping_add(member((kh, v)));
    }
    let repeats = maybe_repeats && {
        let mut keys: Vec<u64> = tape.members(i).map(|(k, _)| key(k)).collect();
        keys.sort_unstable();
        keys.windows(2).any(|w| w[0] == w[1])
    };
    if !repeats {
        return sum;
    }
    // Keep the last member of each key hash (a hash that collides for two
    // keys then drops one of them: weaker, still equal for equal objects).
    let mut members: Vec<(u64, u32)> = tape.members(i).map(|(k, v)| (key(k), v)).collect();
    members.reverse();
    members.sort_by_key(|(k, _)| *k);
    members.dedup_by_key(|(k, _)| *k);
    members
        .into_iter()
        .fold(7, |sum, m| sum.wrapping_add(member(m)))
}

fn mix(a: u64, b: u64) -> u64 {
    (a.rotate_left(26) ^ b)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(31)
        .wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

/// A hash of a string's bytes from its length and its first, middle and
/// last eight bytes: cheap for the long hex strings JSON-RPC answers are
/// made of, and strings that share all of those only cost a test more.
fn bytes_hash(bytes: &[u8]) -> u64 {
    let word = |at: usize| {
        let mut w = [0u8; 8];
        let part = &bytes[at.min(bytes.len())..(at + 8).min(bytes.len())];
        w[..part.len()].copy_from_slice(part);
        u64::from_le_bytes(w)
    };
    let n = bytes.len();
    let h = mix(n as u64, word(0));
    match n > 8 {
        true => mix(mix(h, word(n / 2 - 4)), word(n - 8)),
        false => h,
    }
}
