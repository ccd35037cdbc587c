//! Shares of work dealt round robin: a shard of a run (`--shard I/N`), a
//! core's part of it.

/// One share of work dealt round robin over `count` parts: thing k goes to
/// part `k % count`. `--shard I/N` is such a share of a run, and a core's
/// share of a run's work is another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Share {
    /// This part, from 0.
    pub index: u64,
    /// How many parts.
    pub count: u64,
}

impl Share {
    /// The whole: one part of one.
    pub const WHOLE: Share = Share { index: 0, count: 1 };

    /// Part `index` of `count` (`count` at least 1).
    pub fn new(index: usize, count: usize) -> Share {
        Share {
            index: index as u64,
            count: count.max(1) as u64,
        }
    }

    /// Of `n` things dealt round robin, how many are this part's.
    pub fn share(self, n: u64) -> u64 {
        n / self.count + u64::from(self.index < n % self.count)
    }

    /// [`Share::share`] of a `usize`.
    pub fn share_of(self, n: usize) -> usize {
        usize::try_from(self.share(n as u64)).unwrap_or(usize::MAX)
    }

    /// Whether thing `k` (from 0) is this part's.
    pub fn owns(self, k: u64) -> bool {
        k % self.count == self.index
    }

    /// Part `index` of this shard's share split into `parts` (a core's
    /// part of a shard): together, the parts of every shard are all of
    /// `0..`, each number once.
    pub fn part(self, index: usize, parts: usize) -> Share {
        let parts = parts.max(1) as u64;
        Share {
            index: index as u64 * self.count + self.index,
            count: parts * self.count,
        }
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Share {
    type Err = String;
    fn from_str(s: &str) -> Result<Share, String> {
        let parsed = s.split_once('/').and_then(|(i, n)| {
            Some((i.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?))
        });
        match parsed {
            Some((index, count)) if index < count => Ok(Share { index, count }),
            _ => Err(format!(
                "--shard {s:?}: expected I/N with 0 <= I < N, like 0/4 (the first of four shards)"
            )),
        }
    }
}
