//! The JSON report (`--format json`): one object, schema documented in
//! `docs/json-report.md` and kept stable (fields are only ever added).
//! Latencies in milliseconds, rates as fractions, sizes in bytes.

use std::io::{self, Write};

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use super::info::Report;
use crate::model::TlsReason;
use crate::stats::EndpointStats;

/// The schema name.
pub const SCHEMA: &str = "versus-report";
/// The schema version.
pub const VERSION: u32 = 1;

fn ms(us: f64) -> Value {
    json!((us * 1000.0).round() / 1e6)
}

fn latency(h: &Histogram<u64>) -> Value {
    if h.is_empty() {
        return Value::Null;
    }
    json!({
        "mean": ms(h.mean()),
        "stdev": ms(h.stdev()),
        "min": ms(h.min() as f64),
        "p25": ms(h.value_at_quantile(0.25) as f64),
        "p50": ms(h.value_at_quantile(0.5) as f64),
        "p75": ms(h.value_at_quantile(0.75) as f64),
        "p90": ms(h.value_at_quantile(0.9) as f64),
        "p95": ms(h.value_at_quantile(0.95) as f64),
        "p99": ms(h.value_at_quantile(0.99) as f64),
        "p99_9": ms(h.value_at_quantile(0.999) as f64),
        "max": ms(h.max() as f64),
    })
}

fn fraction(part: u64, whole: u64) -> Value {
    if whole == 0 {
        Value::Null
    } else {
        json!(part as f64 / whole as f64)
    }
}

fn endpoint(i: usize, label: &str, url: &str, s: &EndpointStats) -> Value {
    let kinds: Map<String, Value> = s
        .error_kinds()
        .into_iter()
        .map(|(kind, n)| (kind, json!(n)))
        .collect();
    let causes: Map<String, Value> = s
        .error_kinds()
        .into_iter()
        .filter_map(|(kind, n)| {
            let c = s.causes(&kind, n);
            (!c.is_empty()).then(|| {
                let c: Map<String, Value> = c.into_iter().map(|(c, n)| (c, json!(n))).collect();
                (kind, Value::Object(c))
            })
        })
        .collect();
    let faults: Vec<Value> = super::injected(s)
        .into_iter()
        .map(|f| json!({"fault": f.name, "acted": f.acted, "counted_as": f.counted_as}))
        .collect();
    let tls_reasons: Map<String, Value> = TlsReason::ALL
        .iter()
        .filter(|r| s.tls_reasons[r.index()] > 0)
        .map(|r| (r.name().to_string(), json!(s.tls_reasons[r.index()])))
        .collect();
    let grpc: Map<String, Value> = s
        .grpc_errors
        .iter()
        .map(|(c, n)| (crate::grpc::code_name(*c).to_string(), json!(n)))
        .collect();
    let codes = |from: usize| -> Map<String, Value> {
        s.status
            .iter()
            .enumerate()
            .skip(from)
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| (c.to_string(), json!(n)))
            .collect()
    };
    json!({
        "index": i,
        "label": label,
        "url": url,
        "sent": s.sent,
        "completed": s.completed(),
        "responses": s.responses,
        "rps": s.rate(),
        "sent_rps": s.sent_rate(),
        "latency_ms": latency(&s.latency),
        "uncorrected_ms": latency(&s.uncorrected),
        "send_lag_ms": latency(&s.lag),
        "on_time_percent": s.on_time(),
        "late": s.late,
        "unsent": s.unsent,
        "offered": s.offered,
        "user_seconds": s.user_time.as_secs_f64(),
        "ttfb_ms": latency(&s.ttfb),
        "errors": {
            "count": s.errors(),
            "rate": fraction(s.errors(), s.completed()),
            "kinds": kinds,
            "causes": causes,
            "tls_reasons": tls_reasons,
            "statuses": codes(400),
            "grpc": grpc,
        },
        "status": codes(0),
        "bytes": {
            "in": s.bytes_in,
            "out": s.bytes_out,
            "per_response": s.bytes_per_response(),
        },
        "connects": s.connect.len(),
        "connects_during_run": s.reconnects,
        "connect_ms": latency(&s.connect),
        "tls_handshakes": s.tls.len(),
        "tls_ms": latency(&s.tls),
        "connect_waits": s.connect_wait.len(),
        "connect_wait_ms": latency(&s.connect_wait),
        "spare_connects_failed": s.spare_failed,
        "failed_connects": s.failed_connects(),
        "never_connected": s.never_connected(),
        "held_s": s.held_back.as_secs_f64(),
        "abandoned": s.abandoned,
        "failed_checks": s.failed_checks,
        "mismatched": (i > 0).then_some(s.mismatched),
        "failed_every_request": s.failed_every_request(),
        "faults": faults,
        "steps": s.steps.iter().map(part).collect::<Vec<_>>(),
        "methods": s.methods.iter().map(part).collect::<Vec<_>>(),
        "flows": (s.flows.instances > 0).then(|| json!({
            "instances": s.flows.instances,
            "succeeded": s.flows.succeeded,
            "success_rate": fraction(s.flows.succeeded, s.flows.instances),
            "duration_ms": latency(&s.flows.duration),
        })),
        "scenarios": s.by_flow.iter().map(|f| json!({
            "name": f.name,
            "instances": f.instances,
            "succeeded": f.succeeded,
            "success_rate": fraction(f.succeeded, f.instances),
            "duration_ms": latency(&f.duration),
        })).collect::<Vec<_>>(),
    })
}

/// One flow step or method of an endpoint.
fn part(p: &crate::stats::PartStats) -> Value {
    json!({
        "name": p.name,
        "requests": p.requests,
        "errors": p.errors,
        "failed_checks": p.failed_checks,
        "not_built": p.not_built,
        "skipped": p.skipped,
        "mismatched": p.mismatched,
        "latency_ms": latency(&p.latency),
        "traversal": p.traversal.as_deref().map(traversal),
    })
}

/// A paged step's traversals at one endpoint.
fn traversal(t: &crate::stats::TraversalStats) -> Value {
    use super::pages::{per_traversal, size_per_page};
    json!({
        "completed": t.completed,
        "stopped": t.stopped,
        "pages": t.pages,
        "items": t.items,
        "bytes": t.bytes,
        "repeated_items": t.duplicates,
        "items_without_key": t.unkeyed,
        "pages_per_traversal": per_traversal(t, t.pages),
        "items_per_traversal": per_traversal(t, t.items),
        "bytes_per_page": size_per_page(t),
        "time_ms": latency(&t.time),
        "latency_by_depth": t.depth.iter().enumerate().map(|(b, h)| json!({
            "pages": crate::stats::TraversalStats::bucket_label(b),
            "latency_ms": latency(h),
        })).collect::<Vec<_>>(),
    })
}

/// Every paged step's pairwise improvements (see `report::pages`).
fn paged(r: &Report<'_>) -> Vec<Value> {
    super::pages::PagedStep::of(r.info, r.run)
        .iter()
        .map(|step| {
            let label = |i: usize| step.columns[i].0;
            json!({
                "step": step.name,
                "improvements": step.improvements().iter().map(|g| json!({
                    "endpoint": label(g.this),
                    "against": label(g.base),
                    "latency_faster_pct": g.latency,
                    "latency_p": g.latency_p,
                    "size_smaller_pct": g.size,
                    "traversal_faster_pct": g.traversal,
                    "traversal_p": g.traversal_p,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// The report as a JSON value.
pub fn value(r: &Report<'_>) -> Value {
    let run = r.run;
    let v = &run.stats.verdicts;
    let mut endpoints: Vec<Value> = r
        .info
        .endpoints
        .iter()
        .zip(&run.stats.endpoints)
        .enumerate()
        .map(|(i, (e, s))| endpoint(i, &e.label, &e.url, s))
        .collect();
    for (v, c) in endpoints.iter_mut().zip(r.capacity.unwrap_or_default()) {
        v["capacity"] = json!({
            "rate": c.rate,
            "held_steps": c.held_steps,
            "broken_by": c.broken_by,
            "knee": c.knee,
            "settled": c.settled,
            "tried": c.tried.iter().map(|t| json!({"rate": t.rate, "broken_by": t.broken_by})).collect::<Vec<_>>(),
        });
    }
    let groups: Vec<Value> = v
        .sorted_groups()
        .into_iter()
        .map(|g| serde_json::to_value(g).unwrap_or(Value::Null))
        .collect();
    let by_method: Vec<Value> = v
        .sorted_error_groups()
        .into_iter()
        .map(|g| {
            json!({
                "method": g.method,
                "endpoint": g.endpoint,
                "kind": g.field,
                "count": g.count,
            })
        })
        .collect();
    let t = super::Totals::of(&run.stats.endpoints);
    json!({
        "schema": SCHEMA,
        "version": VERSION,
        "versus": env!("CARGO_PKG_VERSION"),
        "run": {
            "command": r.header.command,
            "host": r.header.host,
            "start": r.header.start,
            "elapsed_s": run.elapsed.as_secs_f64(),
            "interrupted": run.interrupted,
            "concurrency": r.header.concurrency,
            "rate": r.info.rate,
            "lead": r.info.window,
            "shards": r.header.shards.len().max(1),
            "io": r.info.io,
            "warmup": r.info.warmup,
            "record": r.info.record.map(crate::results::info::Record::name),
            "recorded": r.info.recorded.map(|(seen, written)| json!({
                "seen": seen, "written": written,
            })),
            "stages": r.info.stages,
            "sweep": r.info.sweep.as_ref().map(|s| json!({
                "rates": s.rates,
                "settle_s": s.settle_ms as f64 / 1e3,
                "step_s": s.hold_ms as f64 / 1e3,
            })),
        },
        "endpoints": endpoints,
        "totals": {
            "requests": t.requests,
            "errors": t.errors,
            "error_rate": fraction(t.errors, t.requests),
            "latency_ms": latency(&t.latency),
        },
        "comparison": {
            "enabled": r.info.comparison,
            "compared": v.compared,
            "mismatched": v.mismatched,
            "mismatch_rate": fraction(v.mismatched, v.compared),
            "incomplete": v.incomplete,
            "compared_as_bytes": v.fell_back,
            "logged": r.info.logged.map(|(seen, written, limit)| json!({
                "seen": seen, "written": written, "limit": limit,
            })),
            "judged_on_core": v.judged_on_core,
            "not_judged": v.not_judged,
            "judge_queue_peak_bytes": v.judge_queue_peak,
            "noise": super::noise(r.info, v).map(|n| json!({
                "twin": n.twin,
                "noise_only": n.noise_only,
                "fields": n.fields.iter().map(|f| json!({
                    "field": f.counts.field,
                    "reference_pair": f.counts.reference_pair,
                    "candidate": f.counts.candidate,
                    "cancelled": f.counts.cancelled,
                    "only_noise": f.only_noise,
                })).collect::<Vec<_>>(),
            })),
            "reference_answered": !super::reference_silent(&run.stats.endpoints),
            "groups": groups,
        },
        "errors_by_method": by_method,
        "input": {
            "requests": run.input.requests,
            "malformed": run.input.malformed,
            "samples": run.input.samples.iter().map(|m| json!({"location": m.location, "reason": m.reason})).collect::<Vec<_>>(),
            "summary": run.input.summary,
        },
        "pagination": paged(r),
        "steps": r.steps.map(|s| load_curve(r, s)),
        "notes": r.info.notes,
        "thresholds": r.checks,
        "passed": super::threshold::all_passed(r.checks),
    })
}

/// A sweep's steps: per step its rate and, per endpoint, its figures
/// and its methods' or scenario steps'.
fn load_curve(r: &Report<'_>, steps: &crate::results::steps::Steps) -> Value {
    let points = super::curve::points(steps);
    let figures = |p: &super::curve::Point<'_>| {
        json!({
            "achieved_rps": p.achieved,
            "latency_ms": latency(p.latency),
            "errors": p.errors,
            "mismatched": p.mismatched,
        })
    };
    let json_steps: Vec<Value> = (steps.steps.iter().enumerate())
        .filter_map(|(k, step)| Some((k, step.as_ref()?)))
        .map(|(k, step)| {
            let of_step = || points.iter().filter(move |p| p.step == k);
            let endpoints: Vec<Value> = r
                .info
                .endpoints
                .iter()
                .enumerate()
                .map(|(e, info)| {
                    let mine = || of_step().filter(move |p| p.endpoint == e);
                    let mut v = mine()
                        .find(|p| p.part.is_none())
                        .map_or(Value::Null, figures);
                    v["label"] = json!(info.label);
                    v["offered_rps"] = json!(mine().find_map(|p| p.offered));
                    v["parts"] = mine()
                        .filter_map(|p| {
                            let mut f = figures(p);
                            f["name"] = json!(p.part?);
                            Some(f)
                        })
                        .collect();
                    v
                })
                .collect();
            json!({"rate": step.rate, "seconds": step.seconds, "endpoints": endpoints})
        })
        .collect();
    Value::Array(json_steps)
}

/// Write the JSON report (pretty, one trailing newline).
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &value(r)).map_err(io::Error::other)?;
    writeln!(out)
}
