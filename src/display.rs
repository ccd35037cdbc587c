//! How values are shown to a person, in reports, messages and the live
//! view alike: durations, text made safe for a terminal, and the nearest
//! known word to a mistyped one.

use std::time::Duration;

/// A duration as every human-readable line shows it (reports, messages,
/// the live view): four significant digits in the largest unit that keeps
/// it at 1 or more, trailing zeros dropped as Go drops them (`1.17s`,
/// `619.1ms`, `42.36µs`, `81µs`, `1s`), `3m 6.5s` or `1m` from a minute on.
/// (The text report's per-endpoint lines and vegeta's layout keep formats
/// of their own, in `report`.)
pub fn duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    let (value, unit) = if ns < 1e3 {
        return format!("{}ns", d.as_nanos());
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else if ns < 60e9 {
        (ns / 1e9, "s")
    } else {
        let tenths = (d.as_millis() + 50) / 100;
        let (minutes, rest) = (tenths / 600, tenths % 600);
        return match (rest / 10, rest % 10) {
            (0, 0) => format!("{minutes}m"),
            (s, 0) => format!("{minutes}m {s}s"),
            (s, t) => format!("{minutes}m {s}.{t}s"),
        };
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    let text = format!("{value:.decimals$}");
    format!("{}{unit}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Make text safe to print on a terminal: control characters (other than
/// newline and tab) are shown escaped, so a body cannot move the cursor or
/// change colours.
pub fn escape_terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The Levenshtein distance between `a` and `b`: how far a word typed
/// is from a known one, for "did you mean" suggestions.
pub fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}
