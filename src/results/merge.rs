//! Merging saved runs: shards of one run (run on several machines, each
//! with its share of the rate) become one. Histograms add exactly, counters
//! sum, and intervals are aligned by wall clock. Streaming: one interval per
//! file is in memory at a time.

use std::path::Path;
use std::time::Duration;

use super::format::{Header, ShardRecord};
use super::reader::{Finished, ReadError, RunReader};
use crate::stats::{InputStats, RunStats, MALFORMED_SAMPLES};

/// Files opened for merging, checked to be shards of one run.
pub struct Shards {
    readers: Vec<RunReader>,
    /// Each file's first interval's position in the merged run.
    offsets: Vec<u64>,
    /// The merged header.
    pub header: Header,
    /// What the files differ in that merging does not need equal (their
    /// commands).
    warnings: Vec<String>,
}

/// A command line as shards of one run share it: without the values that
/// differ between shards (`--shard`, `--start-at`, the output files).
fn shared_command(command: &[String]) -> Vec<&str> {
    const OWN: [&str; 6] = [
        "--shard",
        "--start-at",
        "-o",
        "--output",
        "--html",
        "--mismatches",
    ];
    let mut kept = Vec::new();
    let mut skip = false;
    for arg in command.iter().skip(1) {
        if std::mem::take(&mut skip) {
            continue;
        }
        if OWN.contains(&arg.as_str()) {
            skip = true;
        } else if !OWN.iter().any(|f| arg.starts_with(&format!("{f}="))) {
            kept.push(arg.as_str());
        }
    }
    kept
}

impl Shards {
    /// Open every file and check they can be merged: the same endpoints
    /// (labels, in order) and the same interval.
    ///
    /// # Errors
    /// A [`ReadError`] naming the file that cannot be read or does not fit.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<Shards, ReadError> {
        let mut readers = Vec::with_capacity(paths.len());
        for p in paths {
            readers.push(RunReader::open(p.as_ref())?);
        }
        let Some(first) = readers.first() else {
            return Err(ReadError {
                path: "-".into(),
                problem: "no file given".into(),
            });
        };
        let labels = |r: &RunReader| -> Vec<String> {
            r.header.endpoints.iter().map(|e| e.label.clone()).collect()
        };
        let want = labels(first);
        for r in &readers[1..] {
            if labels(r) != want {
                return Err(ReadError {
                    path: r.path().into(),
                    problem: format!(
                        "its endpoints ({}) are not those of {} ({}); only runs of the same endpoints can be merged",
                        labels(r).join(", "),
                        first.path(),
                        want.join(", ")
                    ),
                });
            }
            let urls = r.header.endpoints.iter().zip(&first.header.endpoints);
            if let Some((a, b)) = urls.into_iter().find(|(a, b)| a.url != b.url) {
                return Err(ReadError {
                    path: r.path().into(),
                    problem: format!(
                        "it is not a shard of the run in {}: endpoint {} is {} there and {} here; only shards of one run (the same endpoints at the same time) can be merged",
                        first.path(),
                        a.label,
                        b.url,
                        a.url
                    ),
                });
            }
            if r.header.interval_ms != first.header.interval_ms {
                return Err(ReadError {
                    path: r.path().into(),
                    problem: format!(
                        "its interval is {} ms, {}'s is {} ms; they cannot be aligned",
                        r.header.interval_ms,
                        first.path(),
                        first.header.interval_ms
                    ),
                });
            }
        }
        check_shards(&readers)?;
        let mut warnings = Vec::new();
        for r in &readers[1..] {
            if shared_command(&r.header.command) != shared_command(&first.header.command) {
                warnings.push(format!(
                    "{} and {} were run with different commands ({:?} and {:?}): merged as shards of one run",
                    first.path(),
                    r.path(),
                    shared_command(&first.header.command).join(" "),
                    shared_command(&r.header.command).join(" ")
                ));
            }
        }
        let start = readers
            .iter()
            .map(|r| r.header.start_unix_ms)
            .min()
            .unwrap_or(0);
        let interval = first.header.interval_ms;
        let offsets = readers
            .iter()
            .map(|r| (r.header.start_unix_ms - start + interval / 2) / interval)
            .collect();
        let mut header = readers
            .iter()
            .find(|r| r.header.start_unix_ms == start)
            .map_or_else(|| first.header.clone(), |r| r.header.clone());
        if readers.len() > 1 {
            header.shards = readers
                .iter()
                .flat_map(|r| {
                    if r.header.shards.is_empty() {
                        vec![ShardRecord {
                            host: r.header.host.clone(),
                            start: r.header.start.clone(),
                            command: r.header.command.clone(),
                            shard: r.header.shard,
                            late_ms: r.header.late_ms,
                        }]
                    } else {
                        r.header.shards.clone()
                    }
                })
                .collect();
            header.concurrency = readers.iter().map(|r| r.header.concurrency).sum();
            // Shards run side by side (checked when merged): the whole
            // run's rate is theirs together, made with --shard or not (two
            // runs at 100/s each once merged into 100 scheduled, 200 sent).
            header.rate = readers.iter().map(|r| r.header.rate).sum();
            header.shard = None;
            header.late_ms = None;
            header.comparison = readers.iter().any(|r| r.header.comparison);
            // Each file's requests are in its own file only: together they
            // keep as few as the file that keeps fewest.
            header.record = readers
                .iter()
                .map(|r| r.header.record)
                .min()
                .unwrap_or_default();
        }
        Ok(Shards {
            readers,
            offsets,
            header,
            warnings,
        })
    }

    /// Merge: each merged interval (in order, aligned by wall clock) goes to
    /// `each`; returns the whole run.
    ///
    /// # Errors
    /// The first file that turns out to be unreadable.
    pub fn merge(mut self, each: &mut dyn FnMut(u64, &RunStats)) -> Result<Finished, ReadError> {
        let n = self.header.endpoints.len();
        let mut heads: Vec<Option<(u64, RunStats)>> = Vec::with_capacity(self.readers.len());
        for (r, off) in self.readers.iter_mut().zip(&self.offsets) {
            heads.push(r.next_interval()?.map(|(i, s)| (i + off, s)));
        }
        while let Some(at) = heads.iter().flatten().map(|(i, _)| *i).min() {
            let mut merged = RunStats::new(n);
            for (k, head) in heads.iter_mut().enumerate() {
                if head.as_ref().is_some_and(|(i, _)| *i == at) {
                    if let Some((_, s)) = head.take() {
                        merged.merge(&s);
                    }
                    *head = self.readers[k]
                        .next_interval()?
                        .map(|(i, s)| (i + self.offsets[k], s));
                }
            }
            each(at, &merged);
        }
        let start = self.header.start_unix_ms;
        let mut ends = Vec::new();
        let mut spans = Vec::new();
        let mut all: Option<Finished> = None;
        for r in self.readers {
            let shard_start = r.header.start_unix_ms;
            let path = r.path().to_string();
            let f = r.finish()?;
            let from = Duration::from_millis(shard_start - start);
            ends.push(from + f.elapsed);
            spans.push((from, from + f.elapsed, path));
            all = Some(match all {
                None => f,
                Some(mut a) => {
                    a.stats.merge(&f.stats);
                    add_input(&mut a.input, &f.input);
                    a.input_error = a.input_error.or(f.input_error);
                    a.interrupted |= f.interrupted;
                    a.complete &= f.complete;
                    // Each shard wrote its own log: together, their sums.
                    a.logged = match (a.logged, f.logged) {
                        (Some(x), Some(y)) => Some((x.0 + y.0, x.1 + y.1, x.2 + y.2)),
                        (x, y) => x.or(y),
                    };
                    a.recorded = match (a.recorded, f.recorded) {
                        (Some(x), Some(y)) => Some((x.0 + y.0, x.1 + y.1)),
                        (x, y) => x.or(y),
                    };
                    a.warnings.extend(f.warnings);
                    a
                }
            });
        }
        let mut all = all.ok_or_else(|| ReadError {
            path: "-".into(),
            problem: "no file given".into(),
        })?;
        overlapping(&mut spans, Duration::from_millis(self.header.interval_ms))?;
        all.elapsed = ends.into_iter().max().unwrap_or_default();
        all.header = self.header;
        all.warnings.extend(self.warnings);
        Ok(all)
    }
}

/// Shards of one run run side by side: every file's time (from its
/// start, `from`, to its end) overlaps the files that started before it,
/// within an interval. Runs made one after the other are refused: their
/// rates would add as if they had run at once.
fn overlapping(
    spans: &mut [(Duration, Duration, String)],
    slack: Duration,
) -> Result<(), ReadError> {
    spans.sort_by_key(|(from, _, _)| *from);
    let Some((_, mut until, mut last)) = spans.first().cloned() else {
        return Ok(());
    };
    for (from, to, path) in &spans[1..] {
        if *from > until + slack {
            return Err(ReadError {
                path: path.clone(),
                problem: format!(
                    "it is not a shard of the same run as {last}: it started {} after that run ended; shards run at the same time (merging runs made one after the other would add their rates); compare them with versus compare",
                    crate::display::duration(*from - until)
                ),
            });
        }
        if *to > until {
            until = *to;
            last = path.clone();
        }
    }
    Ok(())
}

/// Files written with `--shard` must be shards of one split: the same N,
/// no shard twice (its requests would count twice).
fn check_shards(readers: &[RunReader]) -> Result<(), ReadError> {
    let sharded: Vec<_> = readers
        .iter()
        .filter_map(|r| r.header.shard.map(|s| (r, s)))
        .collect();
    for (k, (r, s)) in sharded.iter().enumerate() {
        let (first, f) = sharded[0];
        if s.count != f.count {
            return Err(ReadError {
                path: r.path().into(),
                problem: format!(
                    "it is shard {s}, {} is shard {f}: shards of one run have the same N",
                    first.path()
                ),
            });
        }
        if let Some((twin, _)) = sharded[..k].iter().find(|(_, t)| t.index == s.index) {
            return Err(ReadError {
                path: r.path().into(),
                problem: format!(
                    "it is shard {s}, and so is {}: give each shard once, or its requests count twice",
                    twin.path()
                ),
            });
        }
    }
    Ok(())
}

fn add_input(a: &mut InputStats, b: &InputStats) {
    a.requests += b.requests;
    a.malformed += b.malformed;
    let room = MALFORMED_SAMPLES.saturating_sub(a.samples.len());
    a.samples.extend(b.samples.iter().take(room).cloned());
    a.summary = match (a.summary.take(), &b.summary) {
        (Some(x), Some(y)) if x != *y => Some(format!("{x}; {y}")),
        (x, y) => x.or_else(|| y.clone()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shards of one run share their command but for their own share, start
    /// and files, in either spelling (`-o F`, `--output=F`).
    #[test]
    fn a_shards_own_flags_are_left_out_of_the_shared_command() {
        let command = |args: &str| -> Vec<String> {
            std::iter::once("versus")
                .chain(args.split(' '))
                .map(str::to_string)
                .collect()
        };
        let one = command("--shard 0/2 -o a.jsonl --rate 10 --html=a.html a=http://h/");
        let two = command("--rate 10 --shard=1/2 --output b.jsonl --start-at 5 a=http://h/");
        assert_eq!(shared_command(&one), ["--rate", "10", "a=http://h/"]);
        assert_eq!(shared_command(&one), shared_command(&two));
        assert_ne!(
            shared_command(&one),
            shared_command(&command("--rate 20 a=http://h/"))
        );
    }
}
