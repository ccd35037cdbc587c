//! `--out prometheus=URL` and `--out otlp=URL`: each interval's figures
//! streamed as Prometheus remote write (snappy, protobuf) or OTLP/HTTP
//! metrics (protobuf) to a receiver on 127.0.0.1 that decodes them. The counters' last values are the report's figures
//! exactly; a receiver that answers 500, refuses connections or never
//! answers leaves the run and its report alone, and the report says how
//! many intervals were not delivered. The real Prometheus takes them too
//! (ignored without it).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use common::*;
use versus::report::remote_write::otlp_proto::{self, ExportMetricsServiceRequest};
use versus::report::remote_write::proto::WriteRequest;

/// How a test receiver behaves.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Answers 204 No Content.
    Takes,
    /// Answers 500.
    Fails,
    /// Reads the request and never answers.
    Stalls,
    /// Answers 500 on its first N connections, then takes.
    FailsFirst(u64),
    /// Answers a body holding native histograms as a Prometheus not set
    /// to take them does (500, naming them); takes the others.
    NoNative,
}

/// What a test receiver takes: its `--out` kind, request line and
/// headers.
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Prometheus,
    Otlp,
}

impl Wire {
    /// The kind and the path of its URL.
    fn kind_and_path(self) -> (&'static str, &'static str) {
        match self {
            Wire::Prometheus => ("prometheus", "/api/v1/write"),
            Wire::Otlp => ("otlp", "/v1/metrics"),
        }
    }

    /// The lines (lowercase) every request holds.
    fn lines(self) -> &'static [&'static str] {
        match self {
            Wire::Prometheus => &[
                "post /api/v1/write http/1.1\r\n",
                "content-encoding: snappy\r\n",
                "content-type: application/x-protobuf\r\n",
                "x-prometheus-remote-write-version: 0.1.0\r\n",
            ],
            Wire::Otlp => &[
                "post /v1/metrics http/1.1\r\n",
                "content-type: application/x-protobuf\r\n",
            ],
        }
    }

    /// Check that `body` decodes.
    fn decodes(self, body: &[u8]) {
        match self {
            Wire::Prometheus => drop(WriteRequest::decode_snappy(body).expect("a WriteRequest")),
            Wire::Otlp => drop(otlp(body)),
        }
    }
}

/// An OTLP body decoded.
fn otlp(body: &[u8]) -> ExportMetricsServiceRequest {
    prost::Message::decode(body).expect("an ExportMetricsServiceRequest")
}

/// A receiver keeping every body it took, in order.
struct Receiver {
    server: RawServer,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
    wire: Wire,
}

/// Read one request from `s`: its head and body.
fn request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let length = content_length(&head);
    let mut body = buf[end..].to_vec();
    while body.len() < length {
        let n = s.read(&mut chunk).ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

impl Receiver {
    fn start(mode: Mode) -> Receiver {
        Receiver::start_as(mode, Wire::Prometheus)
    }

    fn start_as(mode: Mode, wire: Wire) -> Receiver {
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        let server = RawServer::start(move |mut s, n| {
            let Some((head, body)) = request(&mut s) else {
                return;
            };
            let lower = head.to_ascii_lowercase();
            for h in wire.lines() {
                assert!(lower.contains(h), "{h:?} not in {head}");
            }
            let native = |body: &[u8]| {
                let request = WriteRequest::decode_snappy(body).expect("a WriteRequest");
                request.timeseries.iter().any(|s| !s.histograms.is_empty())
            };
            if mode == Mode::NoNative && native(&body) {
                let _ = s.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 31\r\nConnection: close\r\n\r\nnative histograms are disabled\n",
                );
                return;
            }
            let mode = match mode {
                Mode::FailsFirst(first) if n < first => Mode::Fails,
                Mode::FailsFirst(_) | Mode::NoNative => Mode::Takes,
                other => other,
            };
            match mode {
                Mode::Takes | Mode::FailsFirst(_) | Mode::NoNative => {
                    wire.decodes(&body);
                    kept.lock().unwrap().push(body);
                    let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
                }
                Mode::Fails => {
                    let _ = s.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy",
                    );
                }
                // Held open, unanswered, until the sender gives up.
                Mode::Stalls => {
                    let _ = s.read(&mut [0u8; 1]);
                }
            }
        });
        Receiver {
            server,
            bodies,
            wire,
        }
    }

    fn url(&self) -> String {
        let (kind, path) = self.wire.kind_and_path();
        format!("{kind}=http://{}{path}", self.server.addr)
    }

    /// The remote-write bodies taken.
    fn written(&self) -> Vec<WriteRequest> {
        let bodies = self.bodies.lock().unwrap();
        let decoded = bodies.iter().map(|b| WriteRequest::decode_snappy(b));
        decoded.collect::<Result<_, _>>().unwrap()
    }

    /// The OTLP bodies taken.
    fn exported(&self) -> Vec<ExportMetricsServiceRequest> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| otlp(b))
            .collect()
    }
}

/// A label's value in a series.
fn label<'a>(
    s: &'a versus::report::remote_write::proto::TimeSeries,
    name: &str,
) -> Option<&'a str> {
    s.labels
        .iter()
        .find(|l| l.name == name)
        .map(|l| l.value.as_str())
}

/// The last value sent of `name` at `endpoint` for the endpoint as a
/// whole (no method or step), summed over its other labels.
fn last(bodies: &[WriteRequest], name: &str, endpoint: &str) -> Option<f64> {
    bodies.iter().rev().find_map(|b| {
        let values: Vec<f64> = b
            .timeseries
            .iter()
            .filter(|s| {
                label(s, "__name__") == Some(name)
                    && label(s, "endpoint") == Some(endpoint)
                    && label(s, "method").is_none()
                    && label(s, "step").is_none()
            })
            .map(|s| s.samples[0].value)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    })
}

/// Two endpoints, the second answering differently for every fifth
/// request and 500 for every seventh: mismatches and errors planted.
fn endpoints() -> (Server, Server) {
    let a = Server::start(|_| Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#));
    let b = Server::start(|seen| {
        let id = id_of(&seen.body);
        match (id % 7, id % 5) {
            (0, _) => Reply::ok("busy").status(500),
            (_, 0) => Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x2"}"#),
            _ => Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#),
        }
    });
    (a, b)
}

/// Run 300 requests against `endpoints()` with `--out` to `receiver`;
/// the JSON report.
fn run_to(out: &str, extra: &[&str]) -> serde_json::Value {
    run_at(out, extra, 300)
}

/// [`run_to`], sending 300 requests at `rate` a second.
fn run_at(out: &str, extra: &[&str], rate: u32) -> serde_json::Value {
    let (a, b) = endpoints();
    let (ua, ub) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let rate = rate.to_string();
    let mut args = vec![
        "-q",
        "--format",
        "json",
        "--stop-after",
        "300",
        "--rate",
        &rate,
    ];
    args.extend_from_slice(&["--out", out]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&[&ua, &ub]);
    let run = run_bin(&args, &lines(300));
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// The report's note on metrics.
fn metrics_note(report: &serde_json::Value) -> String {
    let notes = report["notes"].as_array().unwrap();
    let note = notes
        .iter()
        .find_map(|n| n.as_str().filter(|n| n.starts_with("metrics ")));
    note.unwrap_or_else(|| panic!("no metrics note in {notes:?}"))
        .to_string()
}

/// The last values sent for report endpoint `e` (`figure(metric)`) are
/// its figures exactly: requests, errors (all kinds), mismatches; and its
/// quantile gauges are set.
fn assert_sent_figures(e: &serde_json::Value, figure: impl Fn(&str) -> Option<f64>) {
    let name = e["label"].as_str().unwrap();
    assert_eq!(
        figure("versus_requests_total"),
        e["completed"].as_f64(),
        "{name}"
    );
    let errors = e["errors"]["count"].as_f64().unwrap();
    assert_eq!(
        figure("versus_errors_total").unwrap_or(0.0),
        errors,
        "{name}"
    );
    assert_eq!(
        figure("versus_mismatches_total"),
        e["mismatched"].as_f64(),
        "{name}"
    );
    for q in ["p50", "p90", "p99"] {
        let gauge = figure(&format!("versus_request_duration_{q}_seconds"));
        assert!(gauge.is_some_and(|v| v > 0.0), "{name} {q}");
    }
}

#[test]
fn the_last_counters_are_the_reports_figures() {
    let receiver = Receiver::start(Mode::Takes);
    let report = run_to(&receiver.url(), &["--run-id", "nightly-7"]);
    let bodies = receiver.written();
    assert!(!bodies.is_empty());
    let mut mismatched = 0;
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        let figure = |key: &str| last(&bodies, key, name);
        assert_sent_figures(e, figure);
        mismatched += e["mismatched"].as_u64().unwrap_or(0);
        let count = figure("versus_request_duration_seconds_count").unwrap();
        let inf = bodies.last().unwrap().timeseries.iter().find(|s| {
            label(s, "__name__") == Some("versus_request_duration_seconds_bucket")
                && label(s, "endpoint") == Some(name)
                && label(s, "method").is_none()
                && label(s, "le") == Some("+Inf")
        });
        assert_eq!(inf.map(|s| s.samples[0].value), Some(count), "{name}");
        // The same latency as a native histogram: every answer in a
        // bucket, the buckets' counts rebuilt from their deltas.
        let native = bodies.last().unwrap().timeseries.iter().find_map(|s| {
            let whole = label(s, "endpoint") == Some(name) && label(s, "method").is_none();
            let named = label(s, "__name__") == Some("versus_request_duration_seconds");
            (whole && named).then(|| s.histograms[0].clone())
        });
        let native = native.unwrap_or_else(|| panic!("no native histogram for {name}"));
        assert_eq!(native.count_int as f64, count, "{name}");
        let (mut running, mut sum) = (0i64, 0i64);
        for d in &native.positive_deltas {
            running += d;
            assert!(running > 0, "{name}: {:?}", native.positive_deltas);
            sum += running;
        }
        let spanned: u32 = native.positive_spans.iter().map(|s| s.length).sum();
        assert_eq!(spanned as usize, native.positive_deltas.len(), "{name}");
        assert_eq!(
            sum as u64 + native.zero_count_int,
            native.count_int,
            "{name}"
        );
    }
    // Planted: every fifth request differs, every seventh failed at b.
    assert!(mismatched > 0);
    assert!(report["endpoints"][1]["errors"]["count"].as_u64().unwrap() > 0);
    // One time per interval, each later than the last (a receiver rejects
    // a second sample of a series at one time).
    let times: Vec<i64> = bodies
        .iter()
        .map(|b| b.timeseries[0].samples[0].timestamp)
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // Each series one sample (or one native histogram) at that time.
    for b in &bodies {
        let at = b.timeseries[0].samples[0].timestamp;
        assert!(b.timeseries.iter().all(|s| match s.histograms.as_slice() {
            [] => s.samples.len() == 1 && s.samples[0].timestamp == at,
            [h] => s.samples.is_empty() && h.timestamp == at,
            _ => false,
        }));
    }
    // Every series names the run and the shard, with labels sorted.
    for s in bodies.iter().flat_map(|b| &b.timeseries) {
        assert_eq!(label(s, "run_id"), Some("nightly-7"));
        assert_eq!(label(s, "shard"), Some("0/1"));
        let names: Vec<&str> = s.labels.iter().map(|l| l.name.as_str()).collect();
        assert!(names.is_sorted(), "{names:?}");
    }
    // Mismatches by method and field: one field differs, so the
    // method's requests at b.
    let by_field: f64 = bodies
        .last()
        .unwrap()
        .timeseries
        .iter()
        .filter(|s| {
            label(s, "__name__") == Some("versus_mismatch_fields_total")
                && label(s, "endpoint") == Some("b")
                && label(s, "method") == Some("eth_blockNumber")
        })
        .map(|s| s.samples[0].value)
        .sum();
    assert_eq!(by_field, mismatched as f64);
    let note = metrics_note(&report);
    let n = bodies.len();
    assert!(note.contains("run_id nightly-7"), "{note}");
    assert!(
        note.contains(&format!("{n} of {n} intervals delivered")),
        "{note}"
    );
}

/// A receiver that fails in `mode` (or a port that refuses): the run's
/// report is whole and says no interval was delivered.
fn undelivered(out: &str) {
    let report = run_to(out, &[]);
    assert_eq!(report["endpoints"][0]["completed"], 300);
    assert_eq!(report["endpoints"][1]["completed"], 300);
    let note = metrics_note(&report);
    assert!(note.contains(": 0 of "), "{note}");
    assert!(note.contains(" not delivered"), "{note}");
    // The run id, random, is said in the note.
    assert!(note.starts_with("metrics (run_id "), "{note}");
}

#[test]
fn a_receiver_answering_500_is_counted_not_felt() {
    let receiver = Receiver::start(Mode::Fails);
    undelivered(&receiver.url());
    // Tried again before being given up.
    assert!(receiver.server.connections() >= 2);
}

#[test]
fn a_receiver_refusing_connections_is_counted_not_felt() {
    let out = format!("prometheus=http://127.0.0.1:{}/api/v1/write", closed_port());
    undelivered(&out);
    // The Markdown report (and so the HTML one) says it too.
    let server = Server::start(|_| Reply::ok("ok"));
    let args = [
        "-q",
        "--format",
        "markdown",
        "--stop-after",
        "5",
        "--out",
        &out,
    ];
    let run = run_bin(&[&args[..], &[&server.url()]].concat(), &lines(5));
    let md = String::from_utf8_lossy(&run.stdout);
    assert!(md.contains("- Note: metrics (run"), "{md}");
    assert!(md.contains(" not delivered"), "{md}");
}

/// A send that failed is tried again, and delivered.
#[test]
fn a_failed_send_is_tried_again() {
    let receiver = Receiver::start(Mode::FailsFirst(1));
    let report = run_to(&receiver.url(), &[]);
    let n = receiver.bodies.lock().unwrap().len();
    let note = metrics_note(&report);
    assert!(
        note.contains(&format!(
            ": {n} of {n} intervals delivered; 1 send tried again"
        )),
        "{note}"
    );
    let bodies = receiver.written();
    assert_eq!(last(&bodies, "versus_requests_total", "a"), Some(300.0));
}

#[test]
fn a_receiver_that_never_answers_is_counted_not_felt() {
    let receiver = Receiver::start(Mode::Stalls);
    undelivered(&receiver.url());
}

#[test]
fn a_bad_out_is_refused_before_any_request() {
    let server = Server::start(|_| Reply::ok("ok"));
    for (out, says) in [
        (
            "influx=http://127.0.0.1:1/",
            "unknown kind \"influx\"; the kinds are: prometheus, otlp",
        ),
        ("otlp=127.0.0.1:4318/v1/metrics", "must start with http://"),
        ("prometheus=127.0.0.1:9090", "must start with http://"),
        ("prometheus=http://127.0.0.1:x/", "bad port"),
        ("prometheus=https://127.0.0.1/", "https is not supported"),
        ("prometheus", "give KIND=URL"),
    ] {
        let run = run_bin(
            &["-q", "--stop-after", "3", "--out", out, &server.url()],
            &lines(3),
        );
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{out}: {err}");
        assert!(err.contains("--out") && err.contains(says), "{out}: {err}");
    }
    assert_eq!(server.requests(), 0);
}

/// The metrics of an OTLP request.
fn otlp_metrics(b: &ExportMetricsServiceRequest) -> impl Iterator<Item = &otlp_proto::Metric> {
    let scopes = b.resource_metrics.iter().flat_map(|r| &r.scope_metrics);
    scopes.flat_map(|s| &s.metrics)
}

/// An attribute's value.
fn attr<'a>(attributes: &'a [otlp_proto::KeyValue], key: &str) -> Option<&'a str> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    kv.value.as_ref()?.string_value.as_deref()
}

/// Whether `attributes` name `endpoint` as a whole (no method or step).
fn whole(attributes: &[otlp_proto::KeyValue], endpoint: &str) -> bool {
    attr(attributes, "endpoint") == Some(endpoint)
        && attr(attributes, "method").is_none()
        && attr(attributes, "step").is_none()
}

/// The last value sent of the sum or gauge `name` at `endpoint` as a
/// whole, summed over its other attributes.
fn last_point(bodies: &[ExportMetricsServiceRequest], name: &str, endpoint: &str) -> Option<f64> {
    use otlp_proto::Data;
    bodies.iter().rev().find_map(|b| {
        let values: Vec<f64> = otlp_metrics(b)
            .filter(|m| m.name == name)
            .flat_map(|m| match &m.data {
                Some(Data::Sum(s)) => s.data_points.clone(),
                Some(Data::Gauge(g)) => g.data_points.clone(),
                _ => Vec::new(),
            })
            .filter(|p| whole(&p.attributes, endpoint))
            .filter_map(|p| p.as_double)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    })
}

/// Checks on the last OTLP request's metrics: counters are cumulative
/// monotonic sums from one start, the latency a histogram with the
/// Prometheus buckets whose count is `completed` per endpoint, every
/// point names the run.
fn check_otlp_shapes(last: &ExportMetricsServiceRequest, completed: &[(&str, u64)], run_id: &str) {
    use otlp_proto::Data;
    let resource = last.resource_metrics[0].resource.as_ref().unwrap();
    assert_eq!(attr(&resource.attributes, "service.name"), Some("versus"));
    let scope = last.resource_metrics[0].scope_metrics[0].scope.as_ref();
    assert_eq!(scope.map(|s| s.name.as_str()), Some("versus"));
    let mut histograms = 0;
    for m in otlp_metrics(last) {
        let points: Vec<(&[otlp_proto::KeyValue], u64, u64)> = match &m.data {
            Some(Data::Sum(s)) => {
                assert!(s.is_monotonic, "{}", m.name);
                assert_eq!(s.aggregation_temporality, otlp_proto::CUMULATIVE);
                let p = s.data_points.iter();
                p.map(|p| (&p.attributes[..], p.start_time_unix_nano, p.time_unix_nano))
                    .collect()
            }
            Some(Data::Gauge(g)) => {
                let p = g.data_points.iter();
                p.map(|p| (&p.attributes[..], p.time_unix_nano, p.time_unix_nano))
                    .collect()
            }
            Some(Data::Histogram(h)) => {
                assert_eq!(m.name, "versus_request_duration_seconds");
                assert_eq!(h.aggregation_temporality, otlp_proto::CUMULATIVE);
                for p in &h.data_points {
                    assert_eq!(p.explicit_bounds, versus::report::remote_write::BUCKETS);
                    assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
                    // Per bucket, not cumulative: they add up to the count.
                    assert_eq!(p.bucket_counts.iter().sum::<u64>(), p.count);
                    for (name, n) in completed {
                        if whole(&p.attributes, name) {
                            assert_eq!(p.count, *n, "{name}");
                            assert!(p.sum.is_some_and(|s| s > 0.0), "{name}");
                            histograms += 1;
                        }
                    }
                }
                let p = h.data_points.iter();
                p.map(|p| (&p.attributes[..], p.start_time_unix_nano, p.time_unix_nano))
                    .collect()
            }
            None => panic!("{} has no data", m.name),
        };
        assert!(!points.is_empty(), "{}", m.name);
        for (attributes, start, at) in points {
            assert!(0 < start && start <= at, "{}: {start} {at}", m.name);
            assert_eq!(attr(attributes, "run_id"), Some(run_id), "{}", m.name);
            assert_eq!(attr(attributes, "shard"), Some("0/1"), "{}", m.name);
            assert!(attr(attributes, "endpoint").is_some(), "{}", m.name);
        }
    }
    assert_eq!(histograms, completed.len());
}

#[test]
fn otlp_carries_the_reports_figures() {
    let receiver = Receiver::start_as(Mode::Takes, Wire::Otlp);
    let report = run_to(&receiver.url(), &["--run-id", "nightly-8"]);
    let bodies = receiver.exported();
    assert!(!bodies.is_empty());
    let mut completed = Vec::new();
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        let figure = |key: &str| last_point(&bodies, key, name);
        assert_sent_figures(e, figure);
        completed.push((name, e["completed"].as_u64().unwrap()));
    }
    // Planted: every fifth request differs, every seventh failed at b.
    assert!(report["endpoints"][1]["mismatched"].as_u64().unwrap() > 0);
    assert!(report["endpoints"][1]["errors"]["count"].as_u64().unwrap() > 0);
    check_otlp_shapes(bodies.last().unwrap(), &completed, "nightly-8");
    // One time per interval, each later than the last.
    let times: Vec<u64> = bodies
        .iter()
        .map(|b| {
            let m = otlp_metrics(b).next().unwrap();
            match &m.data {
                Some(otlp_proto::Data::Sum(s)) => s.data_points[0].time_unix_nano,
                _ => panic!("{} first", m.name),
            }
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    let note = metrics_note(&report);
    let n = bodies.len();
    assert!(note.contains("/v1/metrics: "), "{note}");
    assert!(
        note.contains(&format!("{n} of {n} intervals delivered")),
        "{note}"
    );
}

#[test]
fn an_otlp_receiver_answering_500_is_counted_not_felt() {
    let receiver = Receiver::start_as(Mode::Fails, Wire::Otlp);
    undelivered(&receiver.url());
    assert!(receiver.server.connections() >= 2);
}

/// A Prometheus of Debian's package on a free port of 127.0.0.1, taking
/// remote write, its data in a folder of its own; stopped when dropped.
/// A program a test started on a free port of 127.0.0.1, its files (and
/// its stderr, `log`) in a folder of its own: stopped, and the folder
/// removed, when dropped.
struct Started {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    dir: std::path::PathBuf,
}

impl Started {
    /// A free port of 127.0.0.1 and an empty folder named `name`.
    fn place(name: &str) -> (std::net::SocketAddr, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("versus-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        (addr, dir)
    }

    /// Run `command` with its stderr in `dir`'s `log`, and wait (30 s at
    /// most) until `ready` says it is.
    fn run(
        mut command: std::process::Command,
        (addr, dir): (std::net::SocketAddr, std::path::PathBuf),
        ready: impl Fn(&Started) -> bool,
    ) -> Started {
        let child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?}: {e} (bash .ci/run installs it)"));
        let started = Started { child, addr, dir };
        for _ in 0..300 {
            if ready(&started) {
                return started;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "{command:?} not ready: {}",
            std::fs::read_to_string(started.dir.join("log")).unwrap()
        );
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Debian's Prometheus, taking remote write.
struct Prometheus(Started);

impl std::ops::Deref for Prometheus {
    type Target = Started;

    fn deref(&self) -> &Started {
        &self.0
    }
}

impl Prometheus {
    /// Started taking native histograms when `native`; ready when
    /// `/-/ready` answers 200 (its storage opened).
    fn start(native: bool) -> Prometheus {
        let (addr, dir) = Started::place(&format!("prometheus-{native}"));
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
        let mut command = std::process::Command::new("prometheus");
        command
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--config.file={}", config.display()))
            .args(native.then_some("--enable-feature=native-histograms"));
        Prometheus(Started::run(command, (addr, dir), |s| {
            get(s.addr, "/-/ready").is_some_and(|(status, _)| status == 200)
        }))
    }

    /// The value per endpoint of a PromQL `query` (now).
    fn query(&self, query: &str) -> std::collections::BTreeMap<String, f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = get(self.addr, &format!("/api/v1/query?query={encoded}")).unwrap();
        assert_eq!(status, 200, "{query}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let result = v["data"]["result"].as_array().unwrap();
        result
            .iter()
            .map(|r| {
                let endpoint = r["metric"]["endpoint"].as_str().unwrap().to_string();
                (endpoint, r["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect()
    }
}

/// GET `path`: the status and the body, or `None` when nothing listens.
fn get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(head.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// A Prometheus (taking native histograms when `native`), the JSON report
/// of a run sending to it, and the selector of an endpoint's whole
/// figures in that run.
fn run_to_prometheus(native: bool) -> (Prometheus, serde_json::Value, String) {
    let prometheus = Prometheus::start(native);
    let out = format!("prometheus=http://{}/api/v1/write", prometheus.addr);
    let run_id = format!("test-{}-{native}", std::process::id());
    let report = run_to(&out, &["--run-id", &run_id]);
    let whole = format!("run_id=\"{run_id}\",method=\"\",step=\"\"");
    (prometheus, report, whole)
}

#[test]
#[ignore = "needs prometheus: bash .ci/run installs it"]
fn prometheus_holds_the_reports_figures() {
    let (prometheus, report, whole) = run_to_prometheus(true);
    let n = report["endpoints"].as_array().unwrap().len();
    let note = metrics_note(&report);
    assert!(
        note.contains(" intervals delivered") && !note.contains("not delivered"),
        "{note}"
    );
    let requests = prometheus.query(&format!("versus_requests_total{{{whole}}}"));
    let errors = prometheus.query(&format!(
        "sum by (endpoint) (versus_errors_total{{{whole}}})"
    ));
    let mismatches = prometheus.query(&format!("versus_mismatches_total{{{whole}}}"));
    let p99 = prometheus.query(&format!("versus_request_duration_p99_seconds{{{whole}}}"));
    assert_eq!(requests.len(), n, "{requests:?}");
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_eq!(
            requests.get(name).copied(),
            e["completed"].as_f64(),
            "{name}"
        );
        let reported = e["errors"]["count"].as_f64().unwrap();
        assert_eq!(errors.get(name).copied().unwrap_or(0.0), reported, "{name}");
        assert_eq!(
            mismatches.get(name).copied(),
            e["mismatched"].as_f64(),
            "{name}"
        );
        // The same histogram's p99, in seconds against milliseconds.
        let ms = e["latency_ms"]["p99"].as_f64().unwrap();
        let s = p99[name];
        assert!(
            (s * 1000.0 - ms).abs() <= ms * 1e-6 + 1e-9,
            "{name}: {s} s, {ms} ms"
        );
    }
    assert!(mismatches["b"] > 0.0 && errors["b"] > 0.0);
    // The native histogram: every answer counted, its p99 the report's
    // within one bucket (schema 3: a bucket's bounds 9 % apart).
    let native = format!("versus_request_duration_seconds{{{whole}}}");
    let count = prometheus.query(&format!("histogram_count({native})"));
    let q99 = prometheus.query(&format!("histogram_quantile(0.99, {native})"));
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_eq!(count.get(name).copied(), e["completed"].as_f64(), "{name}");
        let ms = e["latency_ms"]["p99"].as_f64().unwrap();
        let ratio = q99[name] * 1000.0 / ms;
        assert!(
            (0.91..=1.10).contains(&ratio),
            "{name}: {} s, {ms} ms",
            q99[name]
        );
    }
}

/// A Prometheus not set to take native histograms gets every interval,
/// the latency as fixed buckets, and its counters are the report's.
#[test]
#[ignore = "needs prometheus: bash .ci/run installs it"]
fn a_prometheus_without_native_histograms_gets_fixed_buckets() {
    let (prometheus, report, whole) = run_to_prometheus(false);
    let note = metrics_note(&report);
    assert!(!note.contains("not delivered"), "{note}");
    assert!(note.contains("refused native histograms"), "{note}");
    let requests = prometheus.query(&format!("versus_requests_total{{{whole}}}"));
    let buckets = prometheus.query(&format!(
        "versus_request_duration_seconds_bucket{{{whole},le=\"+Inf\"}}"
    ));
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_eq!(
            requests.get(name).copied(),
            e["completed"].as_f64(),
            "{name}"
        );
        assert_eq!(
            buckets.get(name).copied(),
            e["completed"].as_f64(),
            "{name}"
        );
    }
}

/// The last value sent of `name` at `endpoint`'s step `step`.
fn last_of_step(bodies: &[WriteRequest], name: &str, endpoint: &str, step: &str) -> Option<f64> {
    bodies.iter().rev().find_map(|b| {
        b.timeseries
            .iter()
            .find(|s| {
                label(s, "__name__") == Some(name)
                    && label(s, "endpoint") == Some(endpoint)
                    && label(s, "step") == Some(step)
            })
            .map(|s| s.samples[0].value)
    })
}

#[test]
fn a_scenarios_steps_are_series_of_their_own() {
    let receiver = Receiver::start(Mode::Takes);
    let a = Server::start(|_| Reply::ok(r#"{"v":1}"#));
    let b = Server::start(|seen| match seen.path.as_str() {
        "/item" => Reply::ok(r#"{"v":2}"#),
        _ => Reply::ok(r#"{"v":1}"#),
    });
    let file = scenario_file(
        "metrics.toml",
        "[[step]]\nname = \"list\"\npath = \"/list\"\n\n[[step]]\nname = \"item\"\npath = \"/item\"\n",
    );
    let (ua, ub) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let out = receiver.url();
    let args = ["-c", "1", "--stop-after", "20", "--out", &out, &ua, &ub];
    let report = run_scenario_json(&file, &args);
    let bodies = receiver.written();
    for (e, name) in [(0, "a"), (1, "b")] {
        for step in ["list", "item"] {
            let figures = step_of(&report, e, step);
            let sent = |key| last_of_step(&bodies, key, name, step);
            assert_eq!(
                sent("versus_requests_total"),
                figures["requests"].as_f64(),
                "{name} {step}"
            );
            assert_eq!(
                sent("versus_errors_total"),
                figures["errors"].as_f64(),
                "{name} {step}"
            );
            assert_eq!(
                sent("versus_mismatches_total"),
                figures["mismatched"].as_f64().or(Some(0.0)),
                "{name} {step}"
            );
        }
    }
    assert_eq!(
        last_of_step(&bodies, "versus_mismatches_total", "b", "item"),
        Some(20.0)
    );
}

/// The words of `expr` that start with `prefix`, each to its end.
fn words<'a>(expr: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find(prefix) {
        let word = &rest[at..];
        let end = word
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(word.len());
        out.push(&word[..end]);
        rest = &word[end..];
    }
    out
}

/// The labels of every `by (...)` in `expr`.
fn grouped_by(expr: &str) -> Vec<String> {
    expr.split("by (")
        .skip(1)
        .flat_map(|part| {
            let list = &part[..part.find(')').unwrap_or(0)];
            list.split(',')
                .map(|l| l.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every series the Grafana dashboard (`deploy/grafana/versus.json`)
/// queries, and every label it groups by, is one versus writes: checked
/// against what a run with mismatches, errors and an offered rate sent.
#[test]
fn the_grafana_dashboard_queries_only_series_versus_writes() {
    use std::collections::{BTreeMap, BTreeSet};
    let receiver = Receiver::start(Mode::Takes);
    run_to(&receiver.url(), &[]);
    let mut written: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for body in &receiver.written() {
        for s in &body.timeseries {
            let name = label(s, "__name__").unwrap().to_string();
            let labels = written.entry(name).or_default();
            labels.extend(s.labels.iter().map(|l| l.name.clone()));
        }
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/versus.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let names = words(expr, "versus_");
            assert!(!names.is_empty(), "{expr}");
            let mut labels = BTreeSet::new();
            for name in names {
                let written = written.get(name);
                assert!(written.is_some(), "{name} is not written: {expr}");
                labels.extend(written.into_iter().flatten().cloned());
                queried += 1;
            }
            for l in grouped_by(expr) {
                assert!(
                    labels.contains(&l),
                    "{l} is on none of the series of {expr}"
                );
            }
        }
    }
    assert!(queried >= 10, "{queried}");
    // The run-id variable's query too.
    let variable = &dashboard["templating"]["list"][1]["definition"];
    for name in words(variable.as_str().unwrap(), "versus_") {
        assert!(written[name].contains("run_id"), "{variable}");
    }
}

/// The OpenTelemetry Collector of `tests/otelcol` (OTLP receiver, file
/// exporter; `bash .ci/run` builds it into `target/versus-otelcol`, or
/// `VERSUS_OTELCOL` names it), every batch it takes written as a line of
/// OTLP JSON.
struct Collector(Started);

impl std::ops::Deref for Collector {
    type Target = Started;

    fn deref(&self) -> &Started {
        &self.0
    }
}

impl Collector {
    /// Ready when its OTLP receiver accepts connections.
    fn start() -> Collector {
        let bin = std::env::var("VERSUS_OTELCOL").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/target/versus-otelcol").to_string()
        });
        let (addr, dir) = Started::place("otelcol");
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: {addr}\n\
                 exporters:\n  file:\n    path: {}\n\
                 service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    metrics:\n      receivers: [otlp]\n      exporters: [file]\n",
                dir.join("metrics.jsonl").display()
            ),
        )
        .unwrap();
        let mut command = std::process::Command::new(&bin);
        command.arg(format!("--config={}", config.display()));
        Collector(Started::run(command, (addr, dir), |s| {
            TcpStream::connect(s.addr).is_ok()
        }))
    }

    /// What it has written so far: a request (OTLP JSON) a line.
    fn written(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.join("metrics.jsonl")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// The last value the collector wrote of the sum or gauge `name` at
/// `endpoint` as a whole (no method or step), summed over its other
/// attributes, from its OTLP JSON.
fn last_written(lines: &[serde_json::Value], name: &str, endpoint: &str) -> Option<f64> {
    let attr = |p: &serde_json::Value, key: &str| -> Option<String> {
        let kv = p["attributes"]
            .as_array()?
            .iter()
            .find(|kv| kv["key"] == key)?;
        kv["value"]["stringValue"].as_str().map(str::to_string)
    };
    lines.iter().rev().find_map(|line| {
        let mut values = Vec::new();
        for r in line["resourceMetrics"].as_array()? {
            for s in r["scopeMetrics"].as_array()? {
                for m in s["metrics"]
                    .as_array()?
                    .iter()
                    .filter(|m| m["name"] == name)
                {
                    let points = m["sum"]["dataPoints"]
                        .as_array()
                        .or(m["gauge"]["dataPoints"].as_array());
                    for p in points.into_iter().flatten() {
                        let whole = attr(p, "endpoint").as_deref() == Some(endpoint)
                            && attr(p, "method").is_none()
                            && attr(p, "step").is_none();
                        if whole {
                            values.push(p["asDouble"].as_f64()?);
                        }
                    }
                }
            }
        }
        (!values.is_empty()).then(|| values.iter().sum())
    })
}

/// A real OpenTelemetry Collector takes `--out otlp=URL` and writes out
/// the report's figures: each endpoint's last requests, errors and
/// mismatches, and its latency quantiles.
#[test]
#[ignore = "needs the collector of tests/otelcol: bash .ci/run builds it"]
fn an_opentelemetry_collector_holds_the_reports_figures() {
    let collector = Collector::start();
    let out = format!("otlp=http://{}/v1/metrics", collector.addr);
    let report = run_to(&out, &["--run-id", "otel-1"]);
    let note = metrics_note(&report);
    assert!(
        note.contains(" intervals delivered") && !note.contains("not delivered"),
        "{note}"
    );
    // Each request was answered once the collector took it; its file
    // exporter writes it as it comes: wait for the last interval's.
    let last = &report["endpoints"][0];
    let label = last["label"].as_str().unwrap();
    let mut lines = collector.written();
    for _ in 0..100 {
        if last_written(&lines, "versus_requests_total", label) == last["completed"].as_f64() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        lines = collector.written();
    }
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_sent_figures(e, |key| last_written(&lines, key, name));
    }
    assert!(report["endpoints"][1]["mismatched"].as_u64().unwrap() > 0);
}

/// A receiver that refuses native histograms (as Prometheus does unless
/// told to take them) gets every interval all the same, its latency as
/// fixed buckets, and the report says so.
#[test]
fn a_receiver_refusing_native_histograms_gets_fixed_buckets() {
    let receiver = Receiver::start(Mode::NoNative);
    let report = run_to(&receiver.url(), &[]);
    let note = metrics_note(&report);
    assert!(!note.contains("not delivered"), "{note}");
    assert!(note.contains("refused native histograms"), "{note}");
    let bodies = receiver.written();
    assert!(bodies
        .iter()
        .all(|b| b.timeseries.iter().all(|s| s.histograms.is_empty())));
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_sent_figures(e, |key| last(&bodies, key, name));
    }
}

/// Without `--run-id`, the series are named by the saved run's own id,
/// which its header keeps.
#[test]
fn the_series_carry_the_saved_runs_id() {
    let receiver = Receiver::start(Mode::Takes);
    let saved = std::env::temp_dir().join(format!("versus-run-id-{}.jsonl", std::process::id()));
    run_to(&receiver.url(), &["-o", saved.to_str().unwrap()]);
    let text = std::fs::read_to_string(&saved).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let id = header["run_id"].as_str().expect("the header's run_id");
    assert_eq!(id.len(), 16, "{header}");
    let bodies = receiver.written();
    let series = bodies.iter().flat_map(|b| &b.timeseries);
    assert!(series.clone().count() > 0);
    assert!(series.into_iter().all(|s| label(s, "run_id") == Some(id)));
    let _ = std::fs::remove_file(saved);
}

/// A receiver gone for a while (its first six answers 500: two intervals'
/// three tries each) loses those intervals, counted, and no figure: the
/// counters are totals, so the next interval it takes carries them all.
#[test]
fn a_receiver_gone_for_a_while_loses_intervals_not_figures() {
    let receiver = Receiver::start(Mode::FailsFirst(6));
    let report = run_at(&receiver.url(), &[], 60);
    let note = metrics_note(&report);
    let n = receiver.bodies.lock().unwrap().len();
    assert!(note.contains(&format!(": {n} of ")), "{note}");
    assert!(
        note.contains(" 2 not delivered (last error: HTTP 500"),
        "{note}"
    );
    let bodies = receiver.written();
    for e in report["endpoints"].as_array().unwrap() {
        let name = e["label"].as_str().unwrap();
        assert_sent_figures(e, |key| last(&bodies, key, name));
    }
}
