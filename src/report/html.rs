//! The HTML report (`--html FILE`, `versus report --format html`): one
//! self-contained page that opens offline. Charts are inline SVG drawn
//! here (no script, no fetch): latency percentile curves per endpoint (log
//! scales), latency, throughput, errors and mismatches over time, then the
//! mismatch groups and the run's configuration; after the summary, a
//! flow's instances and steps, or a stream's methods. Every piece of text
//! that came from a request, a response or the command line is escaped.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::info::Report;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escape text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#x{:x};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// One line of a chart.
struct Line {
    name: String,
    color: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// An axis: its range and the ticks to label.
struct Axis {
    min: f64,
    max: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
    label: String,
}

impl Axis {
    fn at(&self, v: f64, len: f64) -> f64 {
        let (v, lo, hi) = if self.log {
            (v.max(self.min).log10(), self.min.log10(), self.max.log10())
        } else {
            (v, self.min, self.max)
        };
        if hi <= lo {
            0.0
        } else {
            (v - lo) / (hi - lo) * len
        }
    }
}

const W: f64 = 720.0;
const H: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 34.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 45.0;

fn chart(id: &str, title: &str, x: &Axis, y: &Axis, lines: &[Line]) -> String {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<figure><figcaption>{}</figcaption><svg class="chart" id="{id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{}">"#,
        escape(title),
        escape(title)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>"##
    );
    for (v, label) in &y.ticks {
        let py = TOP + ph - y.at(*v, ph);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{py:.1}" y2="{py:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0,
            escape(label)
        );
    }
    for (v, label) in &x.ticks {
        let px = LEFT + x.at(*v, pw);
        let _ = write!(
            s,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{}" stroke="#e5e5e5"/><text x="{px:.1}" y="{}" text-anchor="middle" font-size="11">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            escape(label)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text><text x="14" y="{}" text-anchor="middle" font-size="12" transform="rotate(-90 14 {})">{}</text>"#,
        LEFT + pw / 2.0,
        H - 6.0,
        escape(&x.label),
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        escape(&y.label)
    );
    for (i, l) in lines.iter().enumerate() {
        let pts: Vec<String> = l
            .points
            .iter()
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .map(|(a, b)| format!("{:.1},{:.1}", LEFT + x.at(*a, pw), TOP + ph - y.at(*b, ph)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let dash = if l.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{}" stroke-width="2"{dash} points="{}"><title>{}</title></polyline>"#,
            l.color,
            pts.join(" "),
            escape(&l.name)
        );
        if pts.len() <= 400 {
            for pt in &pts {
                let (cx, cy) = pt.split_once(',').unwrap_or(("0", "0"));
                let _ = write!(
                    s,
                    r#"<circle cx="{cx}" cy="{cy}" r="2.5" fill="{}"/>"#,
                    l.color
                );
            }
        }
        let ly = TOP + 14.0 + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<line x1="{}" x2="{}" y1="{ly:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{}" y="{:.1}" font-size="11">{}</text>"#,
            LEFT + 10.0,
            LEFT + 34.0,
            l.color,
            LEFT + 40.0,
            ly + 4.0,
            escape(&l.name)
        );
    }
    s.push_str("</svg></figure>\n");
    s
}

/// Nice linear ticks from 0 to at least `max`.
fn linear_axis(max: f64, label: &str, show: fn(f64) -> String) -> Axis {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let top = (max / step).ceil() * step;
    let ticks = (0..=((top / step).round() as usize))
        .map(|k| {
            let v = k as f64 * step;
            (v, show(v))
        })
        .collect();
    Axis {
        min: 0.0,
        max: top,
        log: false,
        ticks,
        label: label.into(),
    }
}

/// Log ticks at powers of ten covering `[lo, hi]` µs.
fn latency_axis(lo: f64, hi: f64) -> Axis {
    let lo = 10f64.powf(lo.max(1.0).log10().floor());
    let mut hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
    if hi <= lo {
        hi = lo * 10.0;
    }
    let mut ticks = Vec::new();
    let mut v = lo;
    while v <= hi * 1.0001 {
        ticks.push((v, tick_micros(v)));
        v *= 10.0;
    }
    Axis {
        min: lo,
        max: hi,
        log: true,
        ticks,
        label: "latency".into(),
    }
}

/// A round latency for an axis: `100µs`, `10ms`, `1s`.
fn tick_micros(us: f64) -> String {
    if us < 1000.0 {
        format!("{}µs", trim(us))
    } else if us < 1e6 {
        format!("{}ms", trim(us / 1e3))
    } else {
        format!("{}s", trim(us / 1e6))
    }
}

/// A number without trailing zeros.
fn trim(v: f64) -> String {
    let mut s = format!("{v:.3}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s
}

/// Quantiles of the percentile curve, as "nines" (x = -log10(1 - q)).
const CURVE: [f64; 16] = [
    0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 0.99995,
    0.99999, 1.0,
];

fn nines(q: f64) -> f64 {
    if q >= 1.0 {
        5.0
    } else {
        (-(1.0 - q).log10()).min(5.0)
    }
}

/// The colour of endpoint `i`'s column and lines.
fn color(i: usize) -> &'static str {
    COLORS[i % COLORS.len()]
}

/// Write the page.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let mut p = String::new();
    let labels: Vec<&str> = r.info.endpoints.iter().map(|e| e.label.as_str()).collect();
    head(&mut p, r, &labels);
    summary(&mut p, r, &labels);
    errors(&mut p, r);
    flows(&mut p, r);
    parts(&mut p, r, true);
    pages(&mut p, r, &color);
    if super::shows_methods(&r.run.stats.endpoints) {
        parts(&mut p, r, false);
    }
    thresholds(&mut p, r);
    p.push_str("<h2>Latency</h2>\n");
    percentiles(&mut p, r, &labels);
    if let Some(series) = r.series.filter(|s| !s.points.is_empty()) {
        let timeline = Timeline::new(series, &labels);
        timeline.latency(&mut p);
        p.push_str("<h2>Throughput</h2>\n");
        timeline.throughput(&mut p);
        timeline.users(&mut p);
        p.push_str("<h2>Errors and mismatches</h2>\n");
        timeline.errors(&mut p);
    }
    if let Some(found) = r.capacity {
        p.push_str("<h2>Capacity</h2>\n");
        for (e, line) in r.info.endpoints.iter().zip(super::capacity::lines(found)) {
            p.push_str(&format!("<p>{}: {}</p>\n", escape(&e.label), escape(&line)));
        }
    }
    if let Some(steps) = r.steps {
        load_curves(&mut p, r, steps);
    }
    mismatches(&mut p, r, &labels);
    noise(&mut p, r);
    configuration(&mut p, r);
    p.push_str("</body></html>\n");
    out.write_all(p.as_bytes())
}

/// A sweep's load curves, per endpoint: latency percentiles and the
/// achieved rate against the rate offered; each method's or scenario
/// step's latency in a section of its own, opened on demand.
fn load_curves(p: &mut String, r: &Report<'_>, steps: &crate::results::steps::Steps) {
    let points = super::curve::points(steps);
    let top = points.iter().map(|q| q.x).fold(0.0, f64::max);
    let x = linear_axis(top, "offered (requests/s)", trim);
    p.push_str("<h2>Load curve</h2>\n");
    for (e, info) in r.info.endpoints.iter().enumerate() {
        // By rate (a search tries rates out of order); a step an endpoint
        // rested in is not on its curve.
        let mut mine: Vec<&super::curve::Point<'_>> = points
            .iter()
            .filter(|q| q.endpoint == e && q.x > 0.0)
            .collect();
        mine.sort_by(|a, b| a.x.total_cmp(&b.x));
        let whole: Vec<_> = mine.iter().filter(|q| q.part.is_none()).copied().collect();
        let id = format!("curve-{e}");
        // A search's knee and capacity, marked on the latency curve.
        let found = r.capacity.and_then(|c| c.get(e));
        let marks: Vec<(&str, f64)> = [
            ("knee", found.and_then(|c| c.knee)),
            ("capacity", found.and_then(|c| c.rate)),
        ]
        .into_iter()
        .filter_map(|(name, at)| Some((name, at?)))
        .collect();
        p.push_str(&format!("<h3>{}</h3>\n", escape(&info.label)));
        p.push_str(&percentiles_against_rate(
            &id,
            &info.label,
            &x,
            &whole,
            &marks,
        ));
        let achieved = Line {
            name: "achieved".into(),
            color: color(e),
            dashed: false,
            points: whole.iter().map(|q| (q.x, q.achieved)).collect(),
        };
        let offered = Line {
            name: "offered".into(),
            color: "#000000",
            dashed: true,
            points: whole.iter().map(|q| (q.x, q.x)).collect(),
        };
        let high = whole.iter().map(|q| q.achieved).fold(top, f64::max);
        p.push_str(&chart(
            &format!("{id}-rate"),
            &format!("{}: achieved against offered (requests/s)", info.label),
            &x,
            &linear_axis(high, "achieved (requests/s)", trim),
            &[achieved, offered],
        ));
        let mut parts: Vec<&str> = mine.iter().filter_map(|q| q.part).collect();
        parts.sort_unstable();
        parts.dedup();
        for (k, part) in parts.iter().enumerate() {
            let of_part: Vec<_> = mine
                .iter()
                .filter(|q| q.part == Some(part))
                .copied()
                .collect();
            p.push_str(&format!(
                "<details><summary>{}: {}</summary>\n",
                escape(&info.label),
                escape(part)
            ));
            let title = format!("{}: {part}", info.label);
            p.push_str(&percentiles_against_rate(
                &format!("{id}-{k}"),
                &title,
                &x,
                &of_part,
                &[],
            ));
            p.push_str("</details>\n");
        }
    }
}

/// p50, p90 and p99 of `points` against their step's rate (log scale),
/// with a dotted upright line at each of `marks` (a name and a rate).
fn percentiles_against_rate(
    id: &str,
    title: &str,
    x: &Axis,
    points: &[&super::curve::Point<'_>],
    marks: &[(&str, f64)],
) -> String {
    let (mut lo, mut hi) = (f64::MAX, 1.0f64);
    let mut lines: Vec<Line> = [("p50", 0.5, false), ("p90", 0.9, true), ("p99", 0.99, true)]
        .iter()
        .enumerate()
        .map(|(i, (name, q, dashed))| Line {
            name: (*name).to_string(),
            color: color(i),
            dashed: *dashed,
            points: points
                .iter()
                .filter_map(|pt| {
                    let v = super::quantile(pt.latency, *q)?;
                    lo = lo.min(v);
                    hi = hi.max(v);
                    Some((pt.x, v))
                })
                .collect(),
        })
        .collect();
    if lo > hi {
        return String::new();
    }
    let y = latency_axis(lo, hi);
    lines.extend(marks.iter().map(|(name, at)| Line {
        name: format!("{name} {}/s", super::rate(*at)),
        color: "#888888",
        dashed: true,
        points: vec![(*at, y.min), (*at, y.max)],
    }));
    chart(
        &format!("{id}-latency"),
        &format!("{title}: latency against offered (p50 solid; p90, p99 dashed; log scale)"),
        x,
        &y,
        &lines,
    )
}

/// The page's head (its title names the endpoints; the content security
/// policy lets nothing load, so the page opens offline and runs no
/// script), the styles, and a line saying what ran, how long, when and
/// where.
fn head(p: &mut String, r: &Report<'_>, labels: &[&str]) {
    let run = r.run;
    p.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    p.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">");
    let _ = write!(
        p,
        "<title>versus report: {}</title>",
        escape(&labels.join(" vs "))
    );
    p.push_str("<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}th:first-child,td:first-child{text-align:left}td.text{text-align:left;font-family:monospace;white-space:pre-wrap;word-break:break-all;max-width:40em}figure{margin:1em 0}figcaption{font-weight:600}.fail{color:#b00;font-weight:600}.pass{color:#070}code{white-space:pre-wrap;word-break:break-all}</style>");
    p.push_str("</head><body>\n<h1>versus report</h1>\n");
    let _ = writeln!(
        p,
        "<p>{} endpoints, {} long{}, started {} on <code>{}</code>.</p>",
        run.stats.endpoints.len(),
        escape(&super::duration(run.elapsed)),
        if run.interrupted { ", interrupted" } else { "" },
        escape(&r.header.start),
        escape(&r.header.host)
    );
}

/// The summary table (a column per endpoint in its colour, the shared
/// rows of `report::table`: rate, latency, errors, statuses, bytes, first
/// byte, connections, and the mismatched share when answers were
/// compared), then a line of how many requests were compared, mismatched
/// and left incomplete, one per figure only some runs have
/// (`report::notes`), and one of the requests, their average latency and
/// errors over every endpoint.
fn summary(p: &mut String, r: &Report<'_>, labels: &[&str]) {
    let run = r.run;
    let eps = &run.stats.endpoints;
    p.push_str("<h2>Summary</h2>\n<table id=\"summary\"><tr><th></th>");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(p, "<th style=\"color:{}\">{}</th>", color(i), escape(l));
    }
    p.push_str("</tr>\n");
    for (name, cells) in super::table::rows(r) {
        let _ = write!(p, "<tr><td>{}</td>", escape(name));
        for c in &cells {
            let _ = write!(p, "<td>{}</td>", escape(c));
        }
        p.push_str("</tr>\n");
    }
    p.push_str("</table>\n");
    let v = &run.stats.verdicts;
    let _ = writeln!(
        p,
        "<p>Compared: {} requests; mismatched: {}{}; incomplete: {}.</p>",
        v.compared,
        v.mismatched,
        if v.compared > 0 {
            format!(" ({})", super::percent(v.mismatched, v.compared))
        } else {
            String::new()
        },
        v.incomplete
    );
    for (name, value) in super::notes(r.info, run) {
        let _ = writeln!(p, "<p>{name}: {}.</p>", escape(&value));
    }
    if let Some(n) = super::noise(r.info, v) {
        let _ = writeln!(p, "<p>Noise: {}.</p>", escape(&n.sentence()));
    }
    let t = super::Totals::of(eps);
    let _ = writeln!(
        p,
        "<p>Requests: {} over all endpoints, latency avg {}; errors: {} ({}).</p>",
        t.requests,
        escape(&super::table::mean(&t.latency)),
        t.errors,
        super::percent(t.errors, t.requests)
    );
}

/// The thresholds checked and whether each passed, failures marked;
/// nothing when none were given.
fn thresholds(p: &mut String, r: &Report<'_>) {
    if r.checks.is_empty() {
        return;
    }
    p.push_str("<h2>Thresholds</h2>\n<table id=\"thresholds\"><tr><th>result</th><th>threshold</th><th>endpoint</th><th>measured</th></tr>\n");
    for c in r.checks {
        let _ = writeln!(
            p,
            "<tr><td class=\"{}\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td></tr>",
            if c.passed { "pass" } else { "fail" },
            if c.passed { "passed" } else { "FAILED" },
            escape(&c.threshold),
            escape(c.endpoint.as_deref().unwrap_or("(run)")),
            escape(&c.actual)
        );
    }
    p.push_str("</table>\n");
}

/// The chart of latency by percentile, a curve per endpoint that
/// answered, on log scales so the tail reads as well as the median; a
/// line saying so when no endpoint answered.
fn percentiles(p: &mut String, r: &Report<'_>, labels: &[&str]) {
    let mut lo = f64::MAX;
    let mut hi: f64 = 1.0;
    let mut curves = Vec::new();
    for (i, s) in r.run.stats.endpoints.iter().enumerate() {
        if s.latency.is_empty() {
            continue;
        }
        lo = lo.min(s.latency.min() as f64);
        hi = hi.max(s.latency.max() as f64);
        curves.push(Line {
            name: labels[i].to_string(),
            color: color(i),
            dashed: false,
            points: CURVE
                .iter()
                .map(|q| {
                    let v = if *q >= 1.0 {
                        s.latency.max()
                    } else {
                        s.latency.value_at_quantile(*q)
                    };
                    (nines(*q), v as f64)
                })
                .collect(),
        });
    }
    if curves.is_empty() {
        p.push_str("<p>No responses.</p>\n");
    } else {
        p.push_str(&chart(
            "percentiles",
            "Latency by percentile (log scales)",
            &nines_axis(),
            &latency_axis(lo, hi),
            &curves,
        ));
    }
}

/// The percentile axis: nines from 0% to 99.999%.
fn nines_axis() -> Axis {
    Axis {
        min: 0.0,
        max: 5.0,
        log: false,
        ticks: [
            (0.0, "0%"),
            (1.0, "90%"),
            (2.0, "99%"),
            (3.0, "99.9%"),
            (4.0, "99.99%"),
            (5.0, "99.999%"),
        ]
        .iter()
        .map(|(v, l)| (*v, (*l).to_string()))
        .collect(),
        label: "percentile".into(),
    }
}

/// The charts over time, one point per (full) interval: what they share.
struct Timeline<'a> {
    series: &'a crate::results::series::Series,
    labels: &'a [&'a str],
    /// Seconds from the start to the last full interval's end.
    time: Axis,
}

/// When interval `pt` of `series` ended, in seconds from the start.
fn ended(series: &crate::results::series::Series, pt: &crate::results::series::Point) -> f64 {
    pt.index as f64 * series.interval + pt.seconds
}

impl<'a> Timeline<'a> {
    /// The charts of `series`, their time axis up to its last full
    /// interval.
    fn new(series: &'a crate::results::series::Series, labels: &'a [&'a str]) -> Timeline<'a> {
        let end = series
            .full_points()
            .last()
            .map_or(1.0, |pt| ended(series, pt));
        Timeline {
            series,
            labels,
            time: linear_axis(end, "time (s)", trim),
        }
    }

    /// Latency over time: each endpoint's p50 (solid) and p99 (dashed)
    /// per interval, on a log scale; nothing when no interval had a
    /// response.
    fn latency(&self, p: &mut String) {
        let series = self.series;
        let mut lines = Vec::new();
        let (mut lo, mut hi) = (f64::MAX, 1.0f64);
        for (i, label) in self.labels.iter().enumerate() {
            for (name, dashed, get) in [
                (
                    "p50",
                    false,
                    (|e: &crate::results::series::EndpointPoint| e.p50) as fn(&_) -> Option<u64>,
                ),
                ("p99", true, |e| e.p99),
            ] {
                let pts: Vec<(f64, f64)> = series
                    .full_points()
                    .filter_map(|pt| {
                        let v = get(pt.endpoints.get(i)?)? as f64;
                        lo = lo.min(v);
                        hi = hi.max(v);
                        Some((ended(series, pt), v))
                    })
                    .collect();
                lines.push(Line {
                    name: format!("{label} {name}"),
                    color: color(i),
                    dashed,
                    points: pts,
                });
            }
        }
        if lo <= hi {
            p.push_str(&chart(
                "latency-time",
                "Latency over time (p50 solid, p99 dashed; log scale)",
                &self.time,
                &latency_axis(lo, hi),
                &lines,
            ));
        }
    }

    /// Requests per second over time, a line per endpoint, and the rate
    /// offered (dashed, black) in the open model.
    fn throughput(&self, p: &mut String) {
        let series = self.series;
        let mut top: f64 = 0.0;
        let offered: Vec<(f64, f64)> = series
            .full_points()
            .filter_map(|pt| {
                let v = pt.endpoints.first()?.offered?;
                top = top.max(v);
                Some((ended(series, pt), v))
            })
            .collect();
        let mut lines: Vec<Line> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, label)| Line {
                name: (*label).to_string(),
                color: color(i),
                dashed: false,
                points: series
                    .full_points()
                    .filter_map(|pt| {
                        let e = pt.endpoints.get(i)?;
                        let v = e.completed as f64 / pt.seconds.max(1e-9);
                        top = top.max(v);
                        Some((ended(series, pt), v))
                    })
                    .collect(),
            })
            .collect();
        if !offered.is_empty() {
            lines.push(Line {
                name: "offered".into(),
                color: "#000000",
                dashed: true,
                points: offered,
            });
        }
        p.push_str(&chart(
            "throughput-time",
            "Requests per second over time",
            &self.time,
            &linear_axis(top, "requests/s", trim),
            &lines,
        ));
    }

    /// Closed model: the virtual users over time, when they changed
    /// (`--stages`).
    fn users(&self, p: &mut String) {
        let series = self.series;
        let points: Vec<(f64, f64)> = series
            .full_points()
            .filter_map(|pt| Some((ended(series, pt), pt.endpoints.first()?.users?)))
            .collect();
        let (lo, hi) = points.iter().fold((f64::MAX, 0.0f64), |(lo, hi), (_, v)| {
            (lo.min(*v), hi.max(*v))
        });
        if hi - lo < 0.5 {
            return;
        }
        let line = Line {
            name: "virtual users".into(),
            color: "#000000",
            dashed: false,
            points,
        };
        p.push_str(&chart(
            "users-time",
            "Virtual users over time",
            &self.time,
            &linear_axis(hi, "users", trim),
            &[line],
        ));
    }

    /// Errors per interval, a line per endpoint, and the mismatched
    /// requests per interval (dashed, black) on the same scale.
    fn errors(&self, p: &mut String) {
        let series = self.series;
        let mut top: f64 = 0.0;
        let mut lines: Vec<Line> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, label)| Line {
                name: format!("{label} errors"),
                color: color(i),
                dashed: false,
                points: series
                    .full_points()
                    .filter_map(|pt| {
                        let v = pt.endpoints.get(i)?.errors as f64;
                        top = top.max(v);
                        Some((ended(series, pt), v))
                    })
                    .collect(),
            })
            .collect();
        lines.push(Line {
            name: "mismatches".into(),
            color: "#000000",
            dashed: true,
            points: series
                .full_points()
                .map(|pt| {
                    top = top.max(pt.mismatched as f64);
                    (ended(series, pt), pt.mismatched as f64)
                })
                .collect(),
        });
        p.push_str(&chart(
            "errors-time",
            "Errors and mismatched requests per interval",
            &self.time,
            &linear_axis(top, "per interval", trim),
            &lines,
        ));
    }
}

/// The mismatch groups (method, field, kind, endpoint, count), each with
/// its sample requests and every endpoint's value; a line saying so when
/// there are none.
fn mismatches(p: &mut String, r: &Report<'_>, labels: &[&str]) {
    p.push_str("<h2>Mismatches</h2>\n");
    let groups = r.run.stats.verdicts.sorted_groups();
    if groups.is_empty() {
        p.push_str("<p>No mismatch groups.</p>\n");
        return;
    }
    p.push_str("<table id=\"mismatches\"><tr><th>method</th><th>field</th><th>kind</th><th>endpoint</th><th>count</th><th>samples</th></tr>\n");
    for g in groups {
        let samples = samples(g, labels);
        let _ = writeln!(
            p,
            "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{samples}</td></tr>",
            escape(&g.method),
            escape(&g.field),
            escape(&g.kind),
            escape(&g.endpoint),
            g.count
        );
    }
    p.push_str("</table>\n");
}

/// Noise mode: each field where the two reference answers differed, how
/// often there and at the candidates, and whether that was only noise.
fn noise(p: &mut String, r: &Report<'_>) {
    let Some(n) = super::noise(r.info, &r.run.stats.verdicts) else {
        return;
    };
    if n.fields.is_empty() {
        return;
    }
    p.push_str("<h2>Noise</h2>\n<table id=\"noise\"><tr><th>field</th><th>reference vs reference</th><th>reference vs candidate</th><th>only noise</th></tr>\n");
    for f in &n.fields {
        let _ = writeln!(
            p,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.counts.field),
            f.reference_pair,
            f.candidate,
            if f.only_noise { "yes" } else { "no" }
        );
    }
    p.push_str("</table>\n");
}

/// A mismatch group's samples cell: per sample, its request and each
/// endpoint's value, labelled.
fn samples(g: &crate::stats::MismatchGroup, labels: &[&str]) -> String {
    let mut samples = String::new();
    for s in &g.samples {
        let _ = write!(
            samples,
            "<div>#{}: <code class=\"request\">{}</code><br>",
            s.seq,
            escape(&s.request)
        );
        for (i, val) in s.values.iter().enumerate() {
            let who = labels.get(i).copied().unwrap_or("?");
            let _ = write!(
                samples,
                "{}: <code class=\"value\">{}</code><br>",
                escape(who),
                escape(val)
            );
        }
        samples.push_str("</div>");
    }
    samples
}

/// The run's configuration: the command line, versus's version, host,
/// start, interval, concurrency, lead, comparison, the I/O driver of
/// plain-TCP HTTP/1.1 connections, the endpoints, and the shards a merged
/// run came from.
fn configuration(p: &mut String, r: &Report<'_>) {
    p.push_str("<h2>Configuration</h2>\n<table id=\"configuration\">");
    let mut kv = |k: &str, v: String| {
        let _ = write!(
            p,
            "<tr><td>{}</td><td class=\"text\">{}</td></tr>",
            escape(k),
            escape(&v)
        );
    };
    kv("command", r.header.command.join(" "));
    kv("versus", r.header.versus.clone());
    kv("host", r.header.host.clone());
    kv("start", r.header.start.clone());
    kv("interval", format!("{} ms", r.header.interval_ms));
    kv("concurrency", r.header.concurrency.to_string());
    kv("lead", r.info.window.to_string());
    kv(
        "comparison",
        if r.info.comparison { "on" } else { "off" }.to_string(),
    );
    if let Some(io) = &r.info.io {
        kv("I/O", format!("{io} (plain-TCP HTTP/1.1 connections)"));
    }
    for (i, e) in r.info.endpoints.iter().enumerate() {
        kv(&format!("endpoint {i}"), format!("{} {}", e.label, e.url));
    }
    if !r.header.shards.is_empty() {
        kv("shards", r.header.shards.len().to_string());
        for s in &r.header.shards {
            kv("shard", format!("{} at {}", s.host, s.start));
        }
    }
    p.push_str("</table>\n");
}

/// Errors by kind (a row per kind, a column per endpoint) and by method
/// (a row per method, endpoint and kind); nothing when there were none.
fn errors(p: &mut String, r: &Report<'_>) {
    let eps = &r.run.stats.endpoints;
    let table = crate::stats::error_table(eps);
    if !table.is_empty() {
        p.push_str("<h2>Errors by kind</h2>\n<table id=\"errors\"><tr><th>kind</th>");
        for e in &r.info.endpoints {
            let _ = write!(p, "<th>{}</th>", escape(&e.label));
        }
        p.push_str("</tr>\n");
        for (kind, counts) in &table {
            let _ = write!(p, "<tr><td class=\"text\">{}</td>", escape(kind));
            for n in counts {
                let _ = write!(p, "<td>{n}</td>");
            }
            p.push_str("</tr>\n");
        }
        p.push_str("</table>\n");
    }
    let groups = r.run.stats.verdicts.sorted_error_groups();
    if !groups.is_empty() {
        p.push_str("<h2>Errors by method</h2>\n<table id=\"errors-by-method\"><tr><th>method</th><th>endpoint</th><th>kind</th><th>count</th></tr>\n");
        for g in groups {
            let _ = writeln!(
                p,
                "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td></tr>",
                escape(&g.method),
                escape(&g.endpoint),
                escape(&g.field),
                g.count
            );
        }
        p.push_str("</table>\n");
    }
    faults(p, r);
}

/// The faults set on each endpoint and how often each acted, then the
/// errors they caused beside the endpoints' own; nothing without faults.
fn faults(p: &mut String, r: &Report<'_>) {
    let eps = r.info.endpoints.iter().zip(&r.run.stats.endpoints);
    if eps.clone().all(|(_, s)| s.faults.is_empty()) {
        return;
    }
    p.push_str("<h2>Faults injected</h2>\n<table id=\"faults\"><tr><th>endpoint</th><th>fault</th><th>acted on</th><th>counted as</th></tr>\n");
    for (e, s) in eps.clone() {
        for f in super::injected(s) {
            let _ = writeln!(
                p,
                "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                escape(&e.label),
                escape(f.name),
                f.acted,
                escape(f.counted_as.as_deref().unwrap_or("-"))
            );
        }
    }
    p.push_str("</table>\n");
    let causes: Vec<_> = eps
        .flat_map(|(e, s)| super::cause_rows(s).into_iter().map(move |c| (e, c)))
        .collect();
    if causes.is_empty() {
        return;
    }
    p.push_str("<h2>Errors by cause</h2>\n<table id=\"errors-by-cause\"><tr><th>endpoint</th><th>kind</th><th>cause</th><th>count</th></tr>\n");
    for (e, (kind, cause, n)) in causes {
        let _ = writeln!(
            p,
            "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{n}</td></tr>",
            escape(&e.label),
            escape(&kind),
            escape(&cause)
        );
    }
    p.push_str("</table>\n");
}

/// Flows: per endpoint the instances that ended, the successful ones and
/// how long those took (avg, p50, p99); nothing for a request stream.
fn flows(p: &mut String, r: &Report<'_>) {
    let eps = &r.run.stats.endpoints;
    if eps.iter().all(|s| s.flows.instances == 0) {
        return;
    }
    p.push_str("<h2>Flows</h2>\n<table id=\"flows\"><tr><th>endpoint</th><th>instances</th><th>successful</th><th>duration avg</th><th>duration p50</th><th>duration p99</th></tr>\n");
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for (label, f) in super::flow_rows(&e.label, s) {
            let _ = writeln!(
                p,
                "<tr><td class=\"text\">{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&label),
                f.instances,
                f.succeeded,
                escape(&super::percent(f.succeeded, f.instances)),
                escape(&super::table::mean(&f.duration)),
                escape(&super::latency(&f.duration, 0.5)),
                escape(&super::latency(&f.duration, 0.99))
            );
        }
    }
    p.push_str("</table>\n");
}

/// Each paged step's comparison (`report::pages`): its table, a chart of
/// page latency (p50) by depth per endpoint, and the improvements.
fn pages(p: &mut String, r: &Report<'_>, color: &dyn Fn(usize) -> &'static str) {
    for (n, step) in super::pages::PagedStep::of(r.info, r.run)
        .iter()
        .enumerate()
    {
        let _ = write!(
            p,
            "<h2>Pages of step {}</h2>\n<table id=\"pages-{n}\"><tr><th></th>",
            escape(step.name)
        );
        for (i, (label, _, _)) in step.columns.iter().enumerate() {
            let _ = write!(p, "<th style=\"color:{}\">{}</th>", color(i), escape(label));
        }
        p.push_str("</tr>\n");
        for (name, cells) in step.rows() {
            let heading = !name.starts_with("  ");
            let _ = write!(
                p,
                "<tr><td>{}{}{}</td>",
                if heading { "<b>" } else { "&nbsp;&nbsp;" },
                escape(name.trim_start()),
                if heading { "</b>" } else { "" }
            );
            for c in &cells {
                let _ = write!(p, "<td>{}</td>", escape(c));
            }
            p.push_str("</tr>\n");
        }
        p.push_str("</table>\n");
        let buckets = step
            .columns
            .iter()
            .map(|(_, _, t)| t.depth.len())
            .max()
            .unwrap_or(0);
        let mut lo = f64::MAX;
        let mut hi: f64 = 1.0;
        let lines: Vec<Line> = step
            .columns
            .iter()
            .enumerate()
            .map(|(i, (label, _, t))| Line {
                name: label.to_string(),
                color: color(i),
                dashed: false,
                points: t
                    .depth
                    .iter()
                    .enumerate()
                    .filter_map(|(b, h)| Some((b as f64, super::quantile(h, 0.5)?)))
                    .inspect(|(_, v)| {
                        lo = lo.min(*v);
                        hi = hi.max(*v);
                    })
                    .collect(),
            })
            .collect();
        if buckets > 1 {
            let x = Axis {
                min: 0.0,
                max: (buckets - 1) as f64,
                log: false,
                ticks: (0..buckets)
                    .map(|b| (b as f64, crate::stats::TraversalStats::bucket_label(b)))
                    .collect(),
                label: "page".into(),
            };
            p.push_str(&chart(
                &format!("depth-{n}"),
                "Page latency (p50) by depth",
                &x,
                &latency_axis(lo, hi),
                &lines,
            ));
        }
        let improvements = step.improvement_lines();
        if !improvements.is_empty() {
            p.push_str("<ul>");
            for l in improvements {
                let _ = write!(p, "<li>{}</li>", escape(&l));
            }
            p.push_str("</ul>\n");
        }
    }
}

/// A table of every endpoint's flow steps (`steps`) or methods, one row
/// per part and endpoint; the columns only steps fill are left out for
/// methods. Nothing when no endpoint has any.
fn parts(p: &mut String, r: &Report<'_>, steps: bool) {
    let eps = &r.run.stats.endpoints;
    let of: fn(&crate::stats::EndpointStats) -> &Vec<crate::stats::PartStats> =
        if steps { |s| &s.steps } else { |s| &s.methods };
    if eps.iter().all(|s| of(s).is_empty()) {
        return;
    }
    let (id, title, what) = if steps {
        ("steps", "Steps", "step")
    } else {
        ("methods", "By method", "method")
    };
    let _ = write!(
        p,
        "<h2>{title}</h2>\n<table id=\"{id}\"><tr><th>{what}</th><th>endpoint</th><th>requests</th><th>errors</th><th>p50</th><th>p99</th>"
    );
    if steps {
        p.push_str("<th>failed checks</th><th>not built</th><th>skipped</th><th>mismatched</th>");
    }
    p.push_str("</tr>\n");
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for part in of(s) {
            let _ = write!(
                p,
                "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                escape(&part.name),
                escape(&e.label),
                part.requests,
                part.errors,
                escape(&super::latency(&part.latency, 0.5)),
                escape(&super::latency(&part.latency, 0.99))
            );
            if steps {
                let _ = write!(
                    p,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    part.failed_checks, part.not_built, part.skipped, part.mismatched
                );
            }
            p.push_str("</tr>\n");
        }
    }
    p.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear axis steps by 1, 2 or 5 times a power of ten, to the top.
    #[test]
    fn linear_axes_step_by_round_numbers() {
        for (max, ticks) in [
            (40.0, vec![0.0, 10.0, 20.0, 30.0, 40.0]),
            (7.0, vec![0.0, 2.0, 4.0, 6.0, 8.0]),
            (400.0, vec![0.0, 100.0, 200.0, 300.0, 400.0]),
        ] {
            let axis = linear_axis(max, "x", trim);
            let got: Vec<f64> = axis.ticks.iter().map(|t| t.0).collect();
            assert_eq!(got, ticks, "{max}");
        }
    }

    /// Axis ticks name a latency in the unit it is round in.
    #[test]
    fn ticks_are_in_microseconds_milliseconds_or_seconds() {
        for (us, shown) in [
            (1.0, "1µs"),
            (999.0, "999µs"),
            (1000.0, "1ms"),
            (250_000.0, "250ms"),
            (1e6, "1s"),
            (2.5e6, "2.5s"),
        ] {
            assert_eq!(tick_micros(us), shown, "{us}");
        }
    }

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
