//! Rendering: turns merged statistics into what the user reads. Renderers
//! take the stats and a writer; they compute nothing that the stats do not
//! hold. This module owns formatting, escaping and layout only.

pub mod capacity;
pub mod compare;
pub mod csv;
pub mod curve;
pub mod html;
pub mod info;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod mismatch_log;
pub mod outputs;
pub mod pages;
pub mod remote_write;
pub mod significance;
pub mod table;
pub mod text;
pub mod threshold;
pub mod vegeta;
pub mod verbose;

pub use crate::display::{duration, escape_terminal};

use std::time::Duration;

use hdrhistogram::Histogram;

/// Write `head` and `text` at `indent`, each further line of `text` under
/// its first: a body's lines keep the sample's indentation (a final line
/// end and CRs dropped), escaped for the terminal.
pub(crate) fn write_block(
    out: &mut dyn std::io::Write,
    indent: &str,
    head: &str,
    text: &str,
) -> std::io::Result<()> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let under = " ".repeat(head.chars().count());
    for (i, line) in text.split('\n').enumerate() {
        let lead = if i == 0 { head } else { &under };
        let line = escape_terminal(line.strip_suffix('\r').unwrap_or(line));
        writeln!(out, "{indent}{}{line}", escape_terminal(lead))?;
    }
    Ok(())
}

/// A fault set on an endpoint (`--fault`) as every format shows it.
pub struct Injected<'a> {
    /// The fault in its own words.
    pub name: &'a str,
    /// How often it acted: connections, or requests for the HTTP faults.
    pub acted: u64,
    /// The error kind a request it ends is counted as (`None`: it only
    /// slows requests down).
    pub counted_as: Option<String>,
}

impl Injected<'_> {
    /// `reset after 1KB: 118 (counted as connection reset)`: how the text
    /// formats list it (escaped for a terminal).
    pub fn line(&self) -> String {
        let counted = self
            .counted_as
            .as_ref()
            .map_or(String::new(), |c| format!(" (counted as {c})"));
        format!("{}: {}{counted}", escape_terminal(self.name), self.acted)
    }
}

/// The faults set on an endpoint, in name order (none without faults).
pub fn injected(s: &crate::stats::EndpointStats) -> Vec<Injected<'_>> {
    s.faults
        .iter()
        .map(|(name, n)| Injected {
            name,
            acted: *n,
            counted_as: crate::fault::counted_as(name),
        })
        .collect()
}

/// Every error kind a fault caused some of, with each cause (`fault
/// NAME`, then `endpoint`) and its count: the table rows of the formats.
pub fn cause_rows(s: &crate::stats::EndpointStats) -> Vec<(String, String, u64)> {
    s.error_kinds()
        .into_iter()
        .flat_map(|(kind, n)| {
            s.causes(&kind, n)
                .into_iter()
                .map(move |(cause, c)| (kind.clone(), cause, c))
        })
        .collect()
}

/// What follows the count of `n` errors of `kind` in the text formats:
/// who caused them (` (fault reset after 1KB: 118, endpoint: 2)`);
/// empty when no fault caused any.
pub fn causes_note(s: &crate::stats::EndpointStats, kind: &str, n: u64) -> String {
    let causes = s.causes(kind, n);
    if causes.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = causes.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    format!(" ({})", parts.join(", "))
}

/// A histogram's value at quantile `q` in µs (its largest value at 1);
/// `None` when it is empty.
pub fn quantile(h: &Histogram<u64>, q: f64) -> Option<f64> {
    if h.is_empty() {
        None
    } else if q >= 1.0 {
        Some(h.max() as f64)
    } else {
        Some(h.value_at_quantile(q) as f64)
    }
}

/// What the open model schedules at an endpoint: flow instances in a
/// scenario, requests otherwise.
pub fn scheduled_unit(s: &crate::stats::EndpointStats) -> &'static str {
    match s.steps.is_empty() {
        true => "requests",
        false => "instances",
    }
}

/// [`quantile`] as a latency (`850µs`, `1.250ms`), or `-` when empty.
pub fn latency(h: &Histogram<u64>, q: f64) -> String {
    quantile(h, q).map_or_else(|| "-".to_string(), micros)
}

/// An endpoint's held-back time as the tables show it: `-` when none,
/// else the time and the time the endpoint ran.
pub fn held(s: &crate::stats::EndpointStats) -> String {
    if s.held_back.is_zero() {
        "-".to_string()
    } else {
        format!("{} of {}", duration(s.held_back), duration(s.active))
    }
}

/// An endpoint's mismatched requests as the tables show them: `-` for
/// the reference (index 0, what the others are compared with), else the
/// count and its share of the compared requests.
pub fn mismatched(index: usize, s: &crate::stats::EndpointStats, compared: u64) -> String {
    if index == 0 {
        "-".to_string()
    } else {
        format!("{} ({})", s.mismatched, percent(s.mismatched, compared))
    }
}

/// True when the reference (the first endpoint) never answered though
/// others were compared with it: every difference is its failure, so the
/// reports say so instead of counting mismatches.
pub fn reference_silent(eps: &[crate::stats::EndpointStats]) -> bool {
    eps.len() > 1 && eps[0].responses == 0 && eps[0].completed() > 0
}

/// What the input held beyond its requests, as the text and Markdown
/// reports say it: `N requests read, M malformed records skipped`, or,
/// when `--strict` stopped the input at one, that it did (it was not
/// skipped).
pub fn input_counts(run: &crate::engine::RunOutput) -> String {
    let input = &run.input;
    if run.input_error.as_ref().is_some_and(|e| e.is_strict()) {
        format!(
            "{} requests read, then a malformed record stopped the input (--strict)",
            input.requests
        )
    } else {
        format!(
            "{} requests read, {} malformed records skipped",
            input.requests, input.malformed
        )
    }
}

/// The summary's figures that only some runs have, a name and a value
/// each, as the Markdown and HTML reports list them (the text report says
/// the same values in its own words): the run's notes, the warm-up left out, requests
/// compared as bytes, the mismatch log's lines, the
/// figures of judging, the request lines the saved run left out, the input's malformed records and the source's
/// summary.
pub fn notes(
    info: &crate::results::info::RunInfo,
    run: &crate::engine::RunOutput,
) -> Vec<(&'static str, String)> {
    let v = &run.stats.verdicts;
    // What the text report says first (a skipped endpoint, what `--out`
    // delivered).
    let mut out: Vec<(&'static str, String)> =
        info.notes.iter().map(|n| ("Note", n.clone())).collect();
    if let Some(w) = &info.warmup {
        out.push(("Warm-up", w.clone()));
    }
    if let Some(s) = &info.stages {
        out.push(("Stages", s.clone()));
    }
    if let Some(s) = &info.sweep {
        out.push(("Sweep", s.describe()));
    }
    if v.fell_back > 0 {
        out.push(("As bytes", format!("{} requests", v.fell_back)));
    }
    out.extend(judging(v));
    if let Some(l) = logged(info) {
        out.push(("Logged", l));
    }
    if let Some(s) = saved(info) {
        out.push(("Saved", s));
    }
    if run.input.malformed > 0 {
        out.push(("Input", input_counts(run)));
    }
    if let Some(summary) = &run.input.summary {
        out.push(("Source", summary.clone()));
    }
    out
}

/// `--mismatches`: how many mismatched requests were written, and why
/// not all when some were not (the summary's `Logged:`).
pub fn logged(info: &crate::results::info::RunInfo) -> Option<String> {
    let (seen, written, limit) = info.logged?;
    let why = if written < seen.min(limit) {
        " (some lines could not be written)"
    } else if seen > limit {
        " (--mismatch-limit reached)"
    } else {
        ""
    };
    Some(format!(
        "{written} of {seen} mismatched requests written to --mismatches{why}"
    ))
}

/// Which request lines the saved run left out (the summary's `Saved:`);
/// nothing when it keeps every one, or the run is saved nowhere.
pub fn saved(info: &crate::results::info::RunInfo) -> Option<String> {
    use crate::results::info::Record;
    match info.record? {
        Record::Requests => None,
        Record::None => {
            Some("no request lines kept (--record none): the run cannot be replayed".into())
        }
        Record::Mismatches => Some(match info.recorded {
            Some((seen, written)) if written < seen => format!(
                "request lines kept for {written} of the {seen} requests that mismatched or met an error (--record mismatches, --record-limit reached)"
            ),
            Some((seen, _)) => format!(
                "request lines kept for the {seen} requests that mismatched or met an error (--record mismatches)"
            ),
            None => "request lines kept only for requests that mismatched or met an error (--record mismatches)".into(),
        }),
    }
}

/// Noise mode's figures (`--noise`), as every format shows them.
pub struct Noise<'a> {
    /// The endpoint that is the reference's second copy.
    pub twin: &'a str,
    /// Requests that differed only where the two reference answers differ.
    pub noise_only: u64,
    /// The fields where the two reference answers differed, most often
    /// first.
    pub fields: Vec<NoisyField<'a>>,
}

/// A field where the two reference answers differed.
pub struct NoisyField<'a> {
    /// Its counts.
    pub counts: &'a crate::stats::NoiseField,
    /// Share of the compared requests where the reference answers differ
    /// here.
    pub reference_pair: String,
    /// Share of the compared requests where a candidate differs here.
    pub candidate: String,
    /// Every candidate difference here was noise.
    pub only_noise: bool,
}

impl Noise<'_> {
    /// The summary's sentence (`Noise:`).
    pub fn sentence(&self) -> String {
        format!(
            "{} is a second copy of the reference; {} requests differed only where the two reference answers differ",
            self.twin, self.noise_only
        )
    }
}

/// Noise mode's figures, when the run had a second copy of the
/// reference.
pub fn noise<'a>(
    info: &'a crate::results::info::RunInfo,
    v: &'a crate::stats::VerdictStats,
) -> Option<Noise<'a>> {
    let twin = &info.endpoints.get(info.twin?)?.label;
    let mut fields: Vec<_> = v.noise.iter().filter(|f| f.reference_pair > 0).collect();
    fields.sort_by(|a, b| {
        b.reference_pair
            .cmp(&a.reference_pair)
            .then_with(|| a.field.cmp(&b.field))
    });
    let fields = fields
        .into_iter()
        .map(|f| NoisyField {
            counts: f,
            reference_pair: percent(f.reference_pair, v.compared),
            candidate: percent(f.candidate, v.compared),
            only_noise: f.candidate == f.cancelled,
        })
        .collect();
    Some(Noise {
        twin,
        noise_only: v.noise_only,
        fields,
    })
}

/// The summary's figures of judging that are not zero, a name and a
/// value each: requests a timing core judged itself, the most bytes
/// waiting for the judge thread, and requests not judged because the run
/// stopped first.
pub fn judging(v: &crate::stats::VerdictStats) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if v.judged_on_core > 0 {
        out.push((
            "Judged on a timing core",
            format!("{} requests", v.judged_on_core),
        ));
    }
    if v.judge_queue_peak > 0 {
        out.push(("Judge queue peak", size(v.judge_queue_peak)));
    }
    if v.not_judged > 0 {
        out.push(("Not judged", format!("{} requests", v.not_judged)));
    }
    out
}

/// A size in bytes in the units the size flags take (`--judge-memory
/// 256MiB`): `512 B`, `1.5 KiB`, `12.3 MiB`, `1.2 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The figures over every endpoint together: the text summary's
/// `Completed: ... total requests`, `Timing: ... request avg` and
/// `Errors:`.
pub struct Totals {
    /// Requests completed.
    pub requests: u64,
    /// Of those, errors.
    pub errors: u64,
    /// Every endpoint's latencies together, µs.
    pub latency: Histogram<u64>,
}

impl Totals {
    /// The totals of `eps`.
    pub fn of(eps: &[crate::stats::EndpointStats]) -> Totals {
        let mut latency = crate::stats::new_histogram();
        for s in eps {
            // The histograms resize themselves, so adding cannot fail.
            let _ = latency.add(&s.latency);
        }
        Totals {
            requests: eps.iter().map(crate::stats::EndpointStats::completed).sum(),
            errors: eps.iter().map(crate::stats::EndpointStats::errors).sum(),
            latency,
        }
    }
}

/// A rate per second as every report shows it: two decimals from 0.01 up
/// (`200.00`), three significant digits below (`0.00278`, for `--rate
/// 10/h`), so a rate that is not zero never reads as zero.
pub fn rate(per_second: f64) -> String {
    if per_second == 0.0 || !per_second.is_finite() || per_second >= 0.01 {
        format!("{per_second:.2}")
    } else {
        let decimals = (2.0 - per_second.log10().floor()) as usize;
        format!("{per_second:.decimals$}")
    }
}

/// The rows of a flows table for one endpoint: all its instances under
/// its `label`, then each scenario's under `label: scenario` (suites).
pub fn flow_rows<'a>(
    label: &str,
    s: &'a crate::stats::EndpointStats,
) -> Vec<(String, &'a crate::stats::FlowStats)> {
    std::iter::once((label.to_string(), &s.flows))
        .chain(
            s.by_flow
                .iter()
                .map(|f| (format!("{label}: {}", f.name), f)),
        )
        .collect()
}

/// True when the reports list methods: some endpoint saw more than one
/// (a stream of one method says nothing its totals do not).
pub fn shows_methods<'a>(
    endpoints: impl IntoIterator<Item = &'a crate::stats::EndpointStats>,
) -> bool {
    endpoints.into_iter().any(|s| s.methods.len() > 1)
}

/// A latency in microseconds (a histogram's unit) as [`duration`] shows
/// it.
pub fn micros(us: f64) -> String {
    duration(Duration::from_nanos((us.max(0.0) * 1e3).round() as u64))
}

/// Seconds with the original's four decimals, or six below 10 ms so that
/// loopback latencies do not all read 0.0001s.
pub fn seconds(micros: u64) -> String {
    let s = micros as f64 / 1e6;
    if micros >= 10_000 {
        format!("{s:.4}s")
    } else {
        format!("{s:.6}s")
    }
}

/// A duration the way Go prints one (`71.347768ms`, `10.092800734s`), as
/// the original report did.
pub fn go_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let (value, unit) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 1_000_000 {
        (ns as f64 / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    let mut s = format!("{value:.9}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("{s}{unit}")
}

/// Percent with two decimals; `-` when there is nothing to divide.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(seconds(55_500), "0.0555s");
        assert_eq!(seconds(250), "0.000250s");
        assert_eq!(go_duration(Duration::from_nanos(71_347_768)), "71.347768ms");
        assert_eq!(
            go_duration(Duration::from_nanos(10_092_800_734)),
            "10.092800734s"
        );
        assert_eq!(go_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(go_duration(Duration::from_secs(2)), "2s");
        assert_eq!(percent(1, 3), "33.33%");
        assert_eq!(rate(200.0), "200.00");
        assert_eq!(rate(1.5), "1.50");
        assert_eq!(rate(0.0), "0.00");
        assert_eq!(rate(10.0 / 3600.0), "0.00278");
        assert_eq!(rate(0.5 / 3600.0), "0.000139");
        assert_eq!(duration(Duration::from_nanos(1_170_497_137)), "1.17s");
        assert_eq!(duration(Duration::from_secs(1)), "1s");
        assert_eq!(duration(Duration::from_nanos(619_059_320)), "619.1ms");
        assert_eq!(duration(Duration::from_nanos(422_360)), "422.4µs");
        assert_eq!(micros(81.0), "81µs");
        assert_eq!(duration(Duration::from_nanos(42_360)), "42.36µs");
        assert_eq!(micros(471.0), "471µs");
        assert_eq!(micros(101_442.0), "101.4ms");
        assert_eq!(micros(1_926.0), "1.926ms");
        assert_eq!(duration(Duration::from_nanos(3_006_005_882)), "3.006s");
        assert_eq!(duration(Duration::from_secs(186)), "3m 6s");
        assert_eq!(duration(Duration::from_millis(186_500)), "3m 6.5s");
        assert_eq!(duration(Duration::from_secs(60)), "1m");
        assert_eq!(duration(Duration::from_millis(119_970)), "2m");
        assert_eq!(percent(0, 0), "-");
        assert_eq!(escape_terminal("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\nc");
    }
}
