//! `--format vegeta`: vegeta's text report (`vegeta report`, its
//! `NewTextReporter`), one block per endpoint, so a run can be laid beside
//! a vegeta run line for line. How versus's figures map to vegeta's
//! definitions is in docs/reports.md ("vegeta's layout: `--format vegeta`"):
//!
//! - Requests: completed requests (answers and failures); rate: requests
//!   over the attack; throughput: successes (status 200-399) over the
//!   whole duration (with no attack, one request, both are counts, as
//!   vegeta's are).
//! - Duration, the endpoint's own ([`crate::stats::Sends`]): attack = from
//!   its first request's start to its last one's (in the open model a
//!   request starts when it was due), wait = from that last start to the
//!   latest end of a request, total = attack + wait. A saved run written
//!   before send times were kept gives the run's time instead: attack to
//!   the last due request ((requests - 1) / rate) in the open model, all
//!   attack in the closed one.
//! - Latencies, bytes and status codes from the endpoint's statistics;
//!   failures count under status code 0, as vegeta's do.

use std::io::{self, Write};
use std::time::Duration;

use super::info::Report;
use crate::model::Failure;
use crate::stats::EndpointStats;

/// Width of vegeta's first column ("Status Codes" and tabwriter's padding
/// of 2).
const NAME: usize = 14;
/// Width of its second ("[min, mean, 50, 90, 95, 99, max]" and 2).
const FIELDS: usize = 34;

/// Write every endpoint's block; several endpoints each under a `# N.
/// endpoint` line.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let several = r.info.endpoints.len() > 1;
    for (i, (e, s)) in r
        .info
        .endpoints
        .iter()
        .zip(&r.run.stats.endpoints)
        .enumerate()
    {
        if several {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "# {i}. {e}")?;
        }
        block(out, s, r.info.rate, r.run.elapsed)?;
    }
    Ok(())
}

fn line(out: &mut dyn Write, name: &str, fields: &str, values: &str) -> io::Result<()> {
    writeln!(out, "{name:<NAME$}{fields:<FIELDS$}{values}")
}

/// One endpoint, as vegeta reports one attack.
fn block(
    out: &mut dyn Write,
    s: &EndpointStats,
    rate: Option<f64>,
    elapsed: Duration,
) -> io::Result<()> {
    let requests = s.completed();
    let (attack, wait) = durations(s, rate, elapsed);
    let total = attack + wait;
    let success: u64 = s.status[200..400].iter().sum();
    // vegeta divides only when the attack took time.
    let (per_s, throughput) = match attack.is_zero() {
        true => (requests as f64, success as f64),
        false => (
            requests as f64 / attack.as_secs_f64(),
            success as f64 / total.as_secs_f64(),
        ),
    };
    line(
        out,
        "Requests",
        "[total, rate, throughput]",
        &format!("{requests}, {per_s:.2}, {throughput:.2}"),
    )?;
    line(
        out,
        "Duration",
        "[total, attack, wait]",
        &format!("{}, {}, {}", go(total), go(attack), go(wait)),
    )?;
    latencies(out, &s.latency)?;
    let mean_of = |n: u64| {
        if requests == 0 {
            0.0
        } else {
            n as f64 / requests as f64
        }
    };
    line(
        out,
        "Bytes In",
        "[total, mean]",
        &format!("{}, {:.2}", s.bytes_in, mean_of(s.bytes_in)),
    )?;
    line(
        out,
        "Bytes Out",
        "[total, mean]",
        &format!("{}, {:.2}", s.bytes_out, mean_of(s.bytes_out)),
    )?;
    let ratio = if requests == 0 {
        0.0
    } else {
        success as f64 * 100.0 / requests as f64
    };
    line(out, "Success", "[ratio]", &format!("{ratio:.2}%"))?;
    status_codes(out, s)?;
    writeln!(out, "Error Set:")?;
    error_set(out, s)?;
    injected(out, s)
}

/// The latencies line: min, mean, p50, p90, p95, p99 and max, zeros
/// without responses as vegeta's.
fn latencies(out: &mut dyn Write, h: &hdrhistogram::Histogram<u64>) -> io::Result<()> {
    let at = |q: f64| {
        micros(if h.is_empty() {
            0
        } else {
            h.value_at_quantile(q)
        })
    };
    let mean = micros(if h.is_empty() {
        0
    } else {
        h.mean().round() as u64
    });
    line(
        out,
        "Latencies",
        "[min, mean, 50, 90, 95, 99, max]",
        &format!(
            "{}, {}, {}, {}, {}, {}, {}",
            at(0.0),
            mean,
            at(0.5),
            at(0.9),
            at(0.95),
            at(0.99),
            at(1.0)
        ),
    )
}

/// The status codes line: each code and its count, sorted as strings as
/// vegeta sorts them, failures under code 0.
fn status_codes(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    let failed: u64 = s.failures.iter().sum();
    let mut codes: Vec<(String, u64)> = s
        .status
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (c.to_string(), *n))
        .collect();
    if failed > 0 {
        codes.push(("0".into(), failed));
    }
    codes.sort();
    let codes: String = codes.iter().map(|(c, n)| format!("{c}:{n}  ")).collect();
    line(out, "Status Codes", "[code:count]", &codes)
}

/// After the error set, a block vegeta has not: the faults versus
/// injected and how often each acted, so their acts are not read as the
/// endpoint's errors; nothing without faults.
fn injected(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    let injected = super::injected(s);
    if !injected.is_empty() {
        writeln!(out, "Faults injected by versus:")?;
        for f in injected {
            writeln!(out, "{}", f.line())?;
        }
    }
    Ok(())
}

/// The distinct errors, as vegeta lists them (one a line): HTTP error
/// statuses and failure kinds, requests abandoned at the stop (not among
/// the requests), each with who caused it when a fault caused some
/// (`(fault status 503: 40, endpoint: 3)`), so an error versus caused is
/// told apart from the endpoint's.
fn error_set(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    for (code, n) in s.status.iter().enumerate().skip(400) {
        if *n > 0 {
            let reason = http::StatusCode::from_u16(code as u16)
                .ok()
                .and_then(|c| c.canonical_reason())
                .unwrap_or("");
            let kind = crate::stats::status_error_name(code as u16);
            let causes = super::causes_note(s, &kind, *n);
            writeln!(out, "{code} {reason}{}", super::escape_terminal(&causes))?;
        }
    }
    for f in Failure::ALL {
        let n = s.failures[f.index()];
        if n > 0 {
            let causes = super::causes_note(s, f.name(), n);
            writeln!(out, "{}{}", f.name(), super::escape_terminal(&causes))?;
        }
    }
    if s.abandoned > 0 {
        writeln!(out, "abandoned in flight at the stop: {}", s.abandoned)?;
    }
    Ok(())
}

/// Attack and wait (see the module's doc).
fn durations(s: &EndpointStats, rate: Option<f64>, elapsed: Duration) -> (Duration, Duration) {
    if !s.sends.is_empty() {
        return (s.sends.attack(), s.sends.wait());
    }
    let requests = s.completed();
    match rate {
        Some(r) if r > 0.0 && requests > 1 => {
            let attack = Duration::from_secs_f64((requests - 1) as f64 / r).min(elapsed);
            (attack, elapsed - attack)
        }
        _ => (elapsed, Duration::ZERO),
    }
}

fn micros(us: u64) -> String {
    go(Duration::from_micros(us))
}

/// A duration as vegeta prints one: rounded to the next finer unit than
/// its own (1.004387s → 1.004s, 3.421935ms → 3.422ms), in Go's notation.
fn go(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let ns = d.as_nanos();
    let unit: u128 = match ns {
        n if n >= 3_600_000_000_000 => 60_000_000_000,
        n if n >= 60_000_000_000 => 1_000_000_000,
        n if n >= 1_000_000_000 => 1_000_000,
        n if n >= 1_000_000 => 1_000,
        _ => 1,
    };
    // Go's Duration.Round: halves away from zero.
    let rounded = (ns + unit / 2) / unit * unit;
    let rounded = Duration::from_nanos(u64::try_from(rounded).unwrap_or(u64::MAX));
    if rounded >= Duration::from_secs(60) {
        let s = rounded.as_secs();
        let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
        return if h > 0 {
            format!("{h}h{m}m{sec}s")
        } else {
            format!("{m}m{sec}s")
        };
    }
    super::go_duration(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_as_vegeta_rounds_them() {
        // From the seed's figures, through vegeta's round().
        assert_eq!(go(Duration::from_nanos(9_991_026_326)), "9.991s");
        assert_eq!(go(Duration::from_nanos(3_421_935)), "3.422ms");
        assert_eq!(go(Duration::from_nanos(1_004_387_943)), "1.004s");
        assert_eq!(go(Duration::from_nanos(45_753)), "45.753µs");
        assert_eq!(go(Duration::from_secs(90)), "1m30s");
        assert_eq!(go(Duration::ZERO), "0s");
    }

    #[test]
    fn each_endpoint_has_its_own_attack_and_wait() {
        let ms = Duration::from_millis;
        let mut s = EndpointStats::default();
        s.status[200] = 3;
        s.responses = 3;
        // Starts at 0, 0.5 and 1 s; the last ends 200 ms after its start,
        // whatever the run's time.
        for start in [0, 500, 1000] {
            s.sends.record(ms(start), ms(200));
        }
        assert_eq!(durations(&s, Some(2.0), ms(5000)), (ms(1000), ms(200)));
        let mut out = Vec::new();
        block(&mut out, &s, Some(2.0), ms(5000)).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Rate 3 / 1 s, throughput 3 / 1.2 s.
        assert!(text.starts_with(
            "Requests      [total, rate, throughput]         3, 3.00, 2.50\n\
             Duration      [total, attack, wait]             1.2s, 1s, 200ms\n"
        ));
        // One request: no attack, so vegeta's rate and throughput are
        // counts.
        let mut one = EndpointStats::default();
        one.status[200] = 1;
        one.responses = 1;
        one.sends.record(ms(3), ms(7));
        let mut out = Vec::new();
        block(&mut out, &one, None, ms(5000)).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with(
            "Requests      [total, rate, throughput]         1, 1.00, 1.00\n\
             Duration      [total, attack, wait]             7ms, 0s, 7ms\n"
        ));
    }

    #[test]
    fn a_run_saved_without_send_times_takes_the_runs_time() {
        // 600 requests at 60/s: the last is due at 599/60 = 9.983 s; the
        // run's 10.99 s leave 1.007 s of wait, as in the seed.
        let mut s = EndpointStats {
            responses: 600,
            ..EndpointStats::default()
        };
        let (attack, wait) = durations(&s, Some(60.0), Duration::from_millis(10_990));
        assert_eq!(go(attack), "9.983s");
        assert_eq!(go(wait), "1.007s");
        // The closed model: all attack.
        s.responses = 10;
        let (attack, wait) = durations(&s, None, Duration::from_secs(2));
        assert_eq!((attack, wait), (Duration::from_secs(2), Duration::ZERO));
    }

    #[test]
    fn a_block_has_vegeta_columns_and_codes() {
        let mut s = EndpointStats::default();
        for _ in 0..3 {
            crate::stats::record(&mut s.latency, Duration::from_millis(2));
        }
        s.status[200] = 2;
        s.status[503] = 1;
        s.failures[Failure::Reset.index()] = 1;
        s.bytes_in = 24;
        s.responses = 3;
        s.faults.insert("status 503".into(), 1);
        s.fault_errors
            .insert(("HTTP 503".into(), "status 503".into()), 1);
        let mut out = Vec::new();
        block(&mut out, &s, Some(2.0), Duration::from_secs(2)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Requests      [total, rate, throughput]         4, 2.67, 1.00"
        );
        assert_eq!(
            lines[1],
            "Duration      [total, attack, wait]             2s, 1.5s, 500ms"
        );
        assert_eq!(
            lines[4],
            "Bytes Out     [total, mean]                     0, 0.00"
        );
        assert_eq!(
            lines[5],
            "Success       [ratio]                           50.00%"
        );
        assert_eq!(
            lines[6],
            "Status Codes  [code:count]                      0:1  200:2  503:1  "
        );
        assert_eq!(
            &lines[7..],
            [
                "Error Set:",
                "503 Service Unavailable (fault status 503: 1, endpoint: 0)",
                "connection reset",
                "Faults injected by versus:",
                "status 503: 1 (counted as HTTP 503)"
            ]
        );
    }
}
