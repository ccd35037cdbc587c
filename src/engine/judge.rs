//! On the core, once every endpoint has finished a unit of work: the
//! verdict across endpoints recorded into the core's statistics (mismatch
//! groups with samples, noise, per-method counts and latency; for a flow,
//! per step, with the steps an endpoint skipped counted apart), and per
//! outcome the error class (failures, HTTP 4xx/5xx, JSON-RPC errors inside
//! HTTP 2xx) by method. Equal answers cost a byte comparison and a method
//! scan.

use std::rc::Rc;

use super::Settings;
use crate::compare::jsonrpc::{classify_response, mentions_error, ResponseClass};
use crate::compare::method::{self, MethodName};
use crate::model::Outcome;
use crate::model::Request;
use crate::stats::{
    count_group, jsonrpc_error_name, part, part_index, RunStats, Tallies, BATCH_ERROR, MAX_PARTS,
};

use super::judge_thread::{self, Differing, ToJudge};
use super::unit::FlowRun;

/// Record what kind of error `outcome` (endpoint `e`) is, if any: JSON-RPC
/// error answers are counted by code, and every error is grouped by the
/// flow step's name (`step`) or else the request's method. Returns whether
/// it is an error: the one decision every count of errors follows.
pub(crate) fn classify(
    settings: &Settings,
    stats: &mut RunStats,
    e: usize,
    req: &Request,
    outcome: &Outcome,
    step: Option<&str>,
) -> bool {
    let error = match &outcome.result {
        Err(f) => Some(f.name().to_string()),
        Ok(r) if r.status >= 400 => Some(format!("HTTP {}", r.status)),
        Ok(crate::model::Response { grpc: Some(g), .. }) if g.is_error() => {
            *stats.endpoints[e].grpc_errors.entry(g.code).or_default() += 1;
            Some(crate::grpc::error_name(g.code))
        }
        Ok(r)
            if settings.comparer.jsonrpc()
                && r.grpc.is_none()
                && r.status < 300
                && mentions_error(&r.body) =>
        {
            let code = match classify_response(&r.body) {
                ResponseClass::Error { code, .. } => Some(code),
                ResponseClass::Batch { errors, .. } if errors > 0 => Some(BATCH_ERROR),
                _ => None,
            };
            code.map(|code| {
                *stats.endpoints[e].jsonrpc_errors.entry(code).or_default() += 1;
                jsonrpc_error_name(code)
            })
        }
        Ok(_) => None,
    };
    if let Some(error) = error {
        let kind;
        let group = match step {
            Some(name) => name,
            None => {
                kind = settings.method_of(req);
                &kind.group
            }
        };
        count_group(
            &mut stats.verdicts.error_groups,
            group,
            &error,
            "error",
            &settings.endpoints[e].label,
            1,
            Vec::new,
        );
        return true;
    }
    false
}

/// The kind of the last request that was not JSON-RPC, kept because
/// single-request mode (and many replays) send the same request again and
/// again: naming it costs an allocation or two, comparing it a memcmp.
/// With it, where the last request judged was counted ([`RepeatPlaces`]), and
/// where each JSON-RPC method is ([`MethodPlaces`]).
#[derive(Default)]
pub(crate) struct MethodCache {
    last: Option<Cached>,
    placed: Option<RepeatPlaces>,
    named: Vec<MethodPlaces>,
}

/// Where a request is counted: its part in every endpoint's `methods`
/// (the same at each), and its place in the verdicts' method counts.
/// Good while the statistics those places are in are the ones recorded
/// into.
#[derive(Clone, Copy)]
struct Places {
    part: usize,
    counted: usize,
}

/// Where the last request judged has its method counted: the same request
/// judged again (single-request mode) is counted there with no look at a
/// name.
struct RepeatPlaces {
    /// The request, kept alive so that its address names it alone.
    req: Rc<Request>,
    at: Places,
}

/// Where the requests of one JSON-RPC method are counted: a stream's
/// request is found there by its method's bytes, with no name checked to
/// be UTF-8 or looked up in three lists (180 instructions a compared line
/// fewer; callgrind, `bench/callgrind.sh stream2`).
struct MethodPlaces {
    /// The method, as requests have it.
    name: Box<[u8]>,
    at: Places,
}

/// A request (body, target, method) and its kind.
struct Cached {
    /// The body: a reference-counted clone, so a request sharing its buffer
    /// (single-request mode) is the same body without a look at its bytes.
    body: bytes::Bytes,
    target: Option<String>,
    method: Option<http::Method>,
    kind: MethodName,
}

impl MethodCache {
    /// The kind of `req`, from the cache when `req` has the last one's
    /// body, target and method.
    fn kind(&mut self, settings: &Settings, req: &Request) -> &MethodName {
        let same = |c: &Cached| {
            let body = (c.body.as_ptr() == req.body.as_ptr() && c.body.len() == req.body.len())
                || c.body == req.body;
            body && c.target == req.target && c.method == req.method
        };
        // Looked at where it lies: taken out and put back, the cached kind
        // was copied twice a request.
        if !self.last.as_ref().is_some_and(same) {
            self.last = None;
        }
        let cached = self.last.get_or_insert_with(|| Cached {
            body: req.body.clone(),
            target: req.target.clone(),
            method: req.method.clone(),
            kind: settings.method_of(req),
        });
        &cached.kind
    }

    /// Forget where methods are counted: the statistics are new.
    pub(crate) fn forget_places(&mut self) {
        self.placed = None;
        self.named.clear();
    }
}

/// Judge one request whose outcomes are all in (with its number in the
/// run, which a repeat of single-request mode does not carry itself), and
/// record the verdict (its latencies per method counted in `tallies`).
pub(crate) fn verdict(
    settings: &Settings,
    (stats, tallies): (&mut RunStats, &mut Tallies),
    kinds: &mut MethodCache,
    to: Option<&ToJudge>,
    (req, seq): (&Rc<Request>, u64),
    outcomes: &[Option<&Outcome>],
    errors: &[bool],
) {
    // Only a tap takes a failed request (`--record mismatches`).
    let failed = !settings.taps.is_empty() && errors.contains(&true);
    if let Some(p) = kinds.placed.as_ref().filter(|p| Rc::ptr_eq(&p.req, req)) {
        count_at((stats, tallies), outcomes, errors, p.at);
        judge(settings, stats, to, (req, seq), outcomes, (None, failed));
        return;
    }
    // A JSON-RPC record named by its method's bytes, when the reference
    // sends it as it is.
    let as_is = settings
        .endpoints
        .first()
        .is_some_and(|e| e.style != crate::model::Style::Grpc && e.template.is_none());
    let quick = (req.target.is_none() && as_is)
        .then(|| method::quick_jsonrpc_name(&req.body))
        .flatten();
    if let Some(n) = quick.and_then(|m| kinds.named.iter().find(|n| *n.name == *m)) {
        count_at((stats, tallies), outcomes, errors, n.at);
        judge(settings, stats, to, (req, seq), outcomes, (None, failed));
        return;
    }
    let quick = quick.and_then(|m| std::str::from_utf8(m).ok());
    let name = match quick {
        Some(m) => m,
        None => &kinds.kind(settings, req).group,
    };
    // Every endpoint's methods are recorded together, so they stand in
    // the same order: the name is looked up once, at the reference.
    let at = stats
        .endpoints
        .first_mut()
        .map(|s| part_index(&mut s.methods, name));
    let mut same = at.is_some();
    count_parts((stats, tallies), outcomes, errors, |e, s| {
        // The reference's is the one looked up; another's is checked.
        let i = match at.filter(|&i| s.methods.get(i).is_some_and(|p| e == 0 || p.name == name)) {
            Some(i) => i,
            None => part_index(&mut s.methods, name),
        };
        same &= at == Some(i);
        i
    });
    let counted = stats.verdicts.count_method(name, 1);
    judge(settings, stats, to, (req, seq), outcomes, (None, failed));
    let places = at.filter(|_| same).map(|part| Places { part, counted });
    if let (Some(at), Some(m)) = (places, quick) {
        if kinds.named.len() < MAX_PARTS {
            kinds.named.push(MethodPlaces {
                name: m.as_bytes().into(),
                at,
            });
        }
    }
    // Kept only for a request held elsewhere too (single-request mode's,
    // which the feed keeps): a stream's requests come once each.
    kinds.placed = places
        .filter(|_| Rc::strong_count(req) > 1)
        .map(|at| RepeatPlaces {
            req: req.clone(),
            at,
        });
}

/// Count each endpoint's outcome of one request at `at`, its places.
fn count_at(
    (stats, tallies): (&mut RunStats, &mut Tallies),
    outcomes: &[Option<&Outcome>],
    errors: &[bool],
    at: Places,
) {
    count_parts((stats, tallies), outcomes, errors, |_, _| at.part);
    stats.verdicts.methods[at.counted].1 += 1;
}

/// Count each endpoint's outcome of one request under its method, at
/// the part of the endpoint's `methods` that `part` gives (found at every
/// endpoint, an outcome or not, so that the parts stand in the same order
/// everywhere), its latency in `tallies`.
fn count_parts(
    (stats, tallies): (&mut RunStats, &mut Tallies),
    outcomes: &[Option<&Outcome>],
    errors: &[bool],
    mut part: impl FnMut(usize, &mut crate::stats::EndpointStats) -> usize,
) {
    for (e, ((s, o), error)) in stats
        .endpoints
        .iter_mut()
        .zip(outcomes)
        .zip(errors)
        .enumerate()
    {
        let i = part(e, s);
        if let Some(latency) = o.as_ref().and_then(|o| s.methods[i].count(o, *error)) {
            tallies.method(e, i, latency);
        }
    }
}

/// Judge one flow instance that every endpoint has finished (`runs`, in
/// endpoint order), step by step: the answers of step k are compared
/// wherever the reference and another endpoint both have one; a step an
/// endpoint never reached (its instance failed earlier there) is counted
/// as skipped at that endpoint.
pub(crate) fn flow_verdict(
    settings: &Settings,
    steps: &[String],
    flow: Option<&crate::flow::Flow>,
    stats: &mut RunStats,
    to: Option<&ToJudge>,
    runs: &[Option<&FlowRun>],
) {
    for (k, name) in steps.iter().enumerate() {
        let step = |e: usize| runs[e].and_then(|r| r.steps.get(k));
        for e in 0..runs.len() {
            if step(e).is_none() {
                part(&mut stats.endpoints[e].steps, name).skipped += 1;
            }
        }
        on_stack(
            (0..runs.len()).map(|e| step(e)?.outcome.as_ref()),
            |outcomes| {
                // Without the reference's answer, or any other where there are
                // other endpoints, there is nothing to compare.
                let others = outcomes.len() == 1 || outcomes[1..].iter().any(Option::is_some);
                let reference = match step(0) {
                    Some(s) if outcomes[0].is_some() && others => &s.request,
                    _ => return,
                };
                // A paged step's answers are its items: findings name them by key.
                let key = flow
                    .and_then(|f| f.steps().get(k))
                    .and_then(|s| s.paging())
                    .map(|p| p.key());
                stats.verdicts.count_method(name, 1);
                let numbered = (reference, reference.seq);
                let step = (Some((name.as_str(), key)), false);
                judge(settings, stats, to, numbered, outcomes, step);
            },
        );
    }
}

/// `f` given `items` as a slice: on the stack for as many as
/// [`ON_STACK`] (every endpoint's outcome of a unit, judged where it lies
/// with no allocation), in a vector beyond.
pub(crate) fn on_stack<T: Copy + Default, R>(
    items: impl ExactSizeIterator<Item = T>,
    f: impl FnOnce(&[T]) -> R,
) -> R {
    let n = items.len();
    if n > ON_STACK {
        return f(&items.collect::<Vec<T>>());
    }
    let mut stack = [T::default(); ON_STACK];
    for (slot, item) in stack.iter_mut().zip(items) {
        *slot = item;
    }
    f(&stack[..n])
}

/// How many items [`on_stack`] holds on the stack.
const ON_STACK: usize = 8;

/// Count one request's (or, with `step`, one flow step's: its name, and
/// the item key when it pages) outcomes as compared, and see that they
/// agree: answers that differ go to the judge thread (`to`), or, when its
/// queue is full or there is none, are judged here (counted as not judged
/// instead once judging has given up after a stop). A request that met
/// an error (`failed`) and whose answers agree goes to the taps here.
fn judge(
    settings: &Settings,
    stats: &mut RunStats,
    to: Option<&ToJudge>,
    (req, seq): (&Request, u64),
    outcomes: &[Option<&Outcome>],
    (step, failed): (Option<(&str, Option<&str>)>, bool),
) {
    let agreed = || {
        if failed {
            for tap in &settings.taps {
                tap.failed(settings, req, seq);
            }
        }
    };
    // Compared where the reference and another endpoint both answered:
    // each at its own rate (a capacity search), one may not have been
    // sent this request.
    if let [reference, others @ ..] = outcomes {
        if !others.is_empty() && (reference.is_none() || others.iter().all(Option::is_none)) {
            return agreed();
        }
    }
    stats.verdicts.compared += 1;
    if outcomes.len() < 2 || settings.comparer.agree(outcomes) {
        return agreed();
    }
    // A repeat of single-request mode shares one request: the copy judged
    // carries this repeat's number.
    let numbered;
    let req = if req.seq == seq {
        req
    } else {
        numbered = Request { seq, ..req.clone() };
        &numbered
    };
    let Some(to) = to else {
        return judge_thread::record(settings, stats, req, outcomes, (step, failed));
    };
    if let Err(unit) = to.hand(Box::new(Differing::new(req, outcomes, (step, failed)))) {
        if to.gave_up() {
            stats.verdicts.not_judged += 1;
            return;
        }
        stats.verdicts.judged_on_core += 1;
        unit.record(settings, stats);
    }
}
