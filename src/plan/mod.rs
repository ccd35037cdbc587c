//! The validated run configuration. [`Plan::from_args`] turns the parsed
//! command line into a plan or a usage error naming the flag and the fix;
//! nothing is sent before it succeeds. The plan builds each layer's own
//! settings (the engine's [`Settings`], the input's source, the reports'
//! [`RunInfo`]): nothing below the app layer sees a flag.

pub mod checked;
pub mod given;
pub mod grpc;
pub mod scenario;
mod template;
mod tls;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use self::given::{Given, Said};
use crate::cli::RunArgs;
use crate::compare::rules::{self as compare_rules, RuleSet, Rules};
use crate::compare::{CompareMode, Comparer};
use crate::endpoint::{EndpointSpec, HttpVersion, IoDriver, Scheme, TransportOptions};
use crate::engine::shape::{parse_stages, Constant, Rate, Search, Shape, Staged, Sweep, Users};
use crate::engine::{Settings, StopAfter, Workload};
use crate::fault::Fault;
use crate::input::{Format, Source};
use crate::model::{Request, Share};
use crate::report::mismatch_log::MismatchLog;
use crate::results::info::{EndpointInfo, Record, RunInfo};
use crate::results::writer::ProblemLines;
use std::path::PathBuf;

/// Parse `--start-at`: RFC 3339 in UTC.
fn parse_start_at(s: &str) -> Result<std::time::SystemTime, String> {
    humantime::parse_rfc3339_weak(s.trim()).map_err(|e| {
        format!("--start-at {s:?}: {e}; give an RFC 3339 time in UTC, like 2030-01-01T12:00:00Z (`date -u -d +1min +%FT%TZ`)")
    })
}

/// Where requests come from, as the command line decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestMode {
    /// Read a request stream (stdin).
    Stream,
    /// Send this request over and over.
    Single(Request),
}

/// A bad command line: the message names the flag and the fix (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The I/O driver `--io` asks for: `auto` probes io_uring once and falls
/// back to epoll where this process cannot have it.
///
/// # Errors
/// `--io uring` where io_uring is unavailable, naming why and the fix.
fn io_driver(mode: crate::cli::IoMode) -> Result<IoDriver, String> {
    use crate::cli::IoMode;
    match mode {
        IoMode::Epoll => Ok(IoDriver::Epoll),
        IoMode::Auto => {
            Ok(crate::endpoint::probe_uring().map_or(IoDriver::Epoll, |()| IoDriver::Uring))
        }
        IoMode::Uring => match crate::endpoint::probe_uring() {
            Ok(()) => Ok(IoDriver::Uring),
            Err(e) => Err(format!(
                "--io uring: io_uring is unavailable here ({e}): use --io epoll or --io auto"
            )),
        },
    }
}

/// A validated run: the engine's settings, and what the app needs besides
/// them to open the input and to report.
#[derive(Debug)]
pub struct Plan {
    /// What the engine carries out. Shared with the engine's cores once a
    /// run starts; before that the plan alone holds it
    /// ([`Plan::engine_mut`]).
    pub engine: Arc<Settings>,
    /// Do not mask secrets.
    pub show_secrets: bool,
    /// Longest input line.
    pub max_line: usize,
    /// Stream or single request.
    pub mode: RequestMode,
    /// Where mismatched requests are written (`--mismatches`).
    pub mismatch_log: Option<Arc<MismatchLog>>,
    /// The request lines `--output` keeps (`--record`); `None` without
    /// `--output`.
    pub record: Option<Record>,
    /// `--record mismatches`: the tap that writes them.
    pub problem_lines: Option<Arc<ProblemLines>>,
    /// A scenario run's flow step names, as reports show them (thresholds
    /// may name them); empty otherwise.
    pub steps: Vec<String>,
    /// What the run notes before it starts, for the report (an optional
    /// endpoint the pre-flight check skipped).
    pub notes: Vec<String>,
    /// `--stages` as given, for the reports.
    pub stages: Option<String>,
    /// `--sweep`'s steps, for the reports.
    pub sweep: Option<Sweep>,
    /// `--find-capacity`'s search.
    pub search: Option<Search>,
    /// Format of the request stream; `None` for stdin without `--input`:
    /// lines, unless its first read shows a HAR file or a capture
    /// ([`crate::input::open`]).
    pub input_format: Option<Format>,
    /// File of the request stream; `None` is stdin.
    pub input_file: Option<PathBuf>,
    /// gRPC: the schema compiled from `--proto` (`None`: ask each gRPC
    /// endpoint's reflection service), how answers become JSON, and the
    /// methods flow steps call. [`crate::grpc::setup`] resolves them into
    /// each gRPC endpoint's [`EndpointSpec::grpc`] before the run.
    pub grpc: GrpcPlan,
}

/// The gRPC part of a plan, before the schema is resolved.
#[derive(Debug, Default)]
pub struct GrpcPlan {
    /// Compiled from `--proto` files.
    pub schema: Option<prost_reflect::DescriptorPool>,
    /// `--grpc-json`.
    pub json: crate::grpc::JsonOptions,
    /// Methods flow steps call, by endpoint position
    /// (`package.Service/Method`).
    pub step_methods: Vec<(usize, String)>,
}

impl Plan {
    /// The engine's settings, to change before the run (a scenario's
    /// headers and rules, gRPC schemas resolved into endpoints).
    ///
    /// # Panics
    /// Once the settings are shared with a run's cores: a plan is fitted
    /// before it runs, never while.
    pub fn engine_mut(&mut self) -> &mut Settings {
        Arc::get_mut(&mut self.engine).expect("a plan is changed only before it runs")
    }

    /// What the live view shows of the input's progress: how far into its
    /// file a request stream has read (`None` in single-request mode, or
    /// when the input is no regular file).
    pub fn input_gauge(&self) -> Option<crate::live::gauge::InputGauge> {
        match self.mode {
            RequestMode::Stream => crate::live::gauge::InputGauge::new(self.input_file.as_deref()),
            RequestMode::Single(_) => None,
        }
    }

    /// Whether some endpoint speaks HTTP/1.1 over plain TCP, the one kind
    /// of connection `--io` chooses the driver of.
    fn plain_http1(&self) -> bool {
        self.engine.transport.version != HttpVersion::Http2
            && self.engine.endpoints.iter().any(|e| {
                e.scheme == Scheme::Http
                    && matches!(
                        e.style,
                        crate::model::Style::Post | crate::model::Style::Get
                    )
            })
    }

    /// The description of this run that reports render from.
    pub fn run_info(&self) -> RunInfo {
        let engine = &self.engine;
        RunInfo {
            endpoints: self
                .engine
                .endpoints
                .iter()
                .map(|s| EndpointInfo {
                    label: s.label.clone(),
                    named: s.named,
                    url: s.display_url.clone(),
                })
                .collect(),
            window: engine.window,
            comparison: engine.comparer.enabled(),
            rate: engine.rate().map(|r| r.0),
            max_in_flight: engine.max_in_flight,
            twin: engine.comparer.twin(),
            notes: self.notes.clone(),
            verbose: engine.verbose,
            logged: self.mismatch_log.as_ref().map(|l| l.counts()),
            record: self.record,
            recorded: self.problem_lines.as_ref().and_then(|p| p.counts()),
            stages: self.stages.clone(),
            sweep: self.sweep.clone(),
            search: self.search.clone(),
            warmup: match (engine.warmup.count, engine.warmup.duration) {
                (Some(n), _) => Some(format!("{n} requests")),
                (None, Some(d)) => Some(humantime::format_duration(d).to_string()),
                (None, None) => None,
            },
            // The I/O driver is named only where it carried something:
            // a plain-TCP HTTP/1.1 endpoint.
            io: self
                .plain_http1()
                .then(|| engine.transport.io.name().to_string()),
        }
    }

    /// Validate the command line. `stdin_is_terminal` selects single-request
    /// mode when no stream can be read.
    ///
    /// # Errors
    /// A [`UsageError`] naming the flag or argument and the fix.
    pub fn from_args(args: &RunArgs, stdin_is_terminal: bool) -> Result<Plan, UsageError> {
        Plan::new(args, &Given::of(args), stdin_is_terminal)
    }

    /// The plan for `given`'s endpoints and load with the rest of `args`.
    ///
    /// # Errors
    /// As [`Plan::from_args`].
    pub fn new(
        args: &RunArgs,
        given: &Given<'_>,
        stdin_is_terminal: bool,
    ) -> Result<Plan, UsageError> {
        // The parts are checked in this order: the first usage error a
        // command line meets is always the same one.
        check_required(args, given)?;
        let mut stop_after = stop_after_of(given)?;
        let compare_mode = args
            .compare
            .parse::<CompareMode>()
            .map_err(|e| UsageError(format!("--compare: {e}")))?;
        let single = is_single(args, stdin_is_terminal);
        let warmup = warmup_of(args, &stop_after, single)?;
        let shaped = load_shape(args, given.stages, &mut stop_after)?;
        let (sweep, search) = (shaped.sweep.clone(), shaped.search.clone());
        let mut endpoints = endpoints_of(args, given)?;
        template::add_templates(&args.templates, &mut endpoints, single)?;
        let input = StreamInput::of(args)?;
        let mode = request_mode(args, single, &mut stop_after)?;
        let comparison = Comparison::of(args, compare_mode, &mut endpoints)?;
        let outputs = Outputs::of(args);
        let transport = Transport::of(args, &given.faults, &mut endpoints)?;
        let shard = args
            .shard
            .as_deref()
            .map_or(Ok(Share::WHOLE), str::parse)
            .map_err(UsageError)?;
        let start_at = args
            .start_at
            .as_deref()
            .map(parse_start_at)
            .transpose()
            .map_err(UsageError)?;
        let grpc = GrpcPlan::of(args)?;
        let load = Load::share(args, shard, shaped, stop_after, warmup);
        Ok(Plan {
            engine: Arc::new(settings(
                args,
                endpoints,
                transport,
                comparison,
                outputs.taps,
                load,
                start_at,
            )),
            show_secrets: args.show_secrets,
            stages: given.stages.map(|s| s.text.to_string()),
            sweep,
            search,
            max_line: usize::try_from(args.max_line).unwrap_or(usize::MAX),
            mode,
            mismatch_log: outputs.mismatch_log,
            record: outputs.record,
            problem_lines: outputs.problem_lines,
            steps: Vec::new(),
            notes: Vec::new(),
            input_format: input.format,
            input_file: input.file,
            grpc,
        })
    }

    /// The engine's input: in single-request mode the request over and
    /// over; else the request stream, `stream` when given (the demo's
    /// generator, a test's lines), or else the command line's:
    /// `--input-file` (stdin without it) read as `--input` says; of a
    /// stream, only this shard's records.
    ///
    /// # Errors
    /// When the input file cannot be opened.
    pub fn input(&self, stream: Option<Box<dyn Source>>) -> std::io::Result<Workload> {
        let source = match (&self.mode, stream) {
            (RequestMode::Single(r), _) => return Ok(Workload::Repeat(r.clone())),
            (RequestMode::Stream, Some(s)) => s,
            (RequestMode::Stream, None) => {
                crate::input::open(self.input_format, self.input_file.as_deref(), self.max_line)?
            }
        };
        let source: Box<dyn Source> = if self.engine.shard == Share::WHOLE {
            source
        } else {
            Box::new(crate::input::reader::Sharded::new(
                source,
                self.engine.shard,
            ))
        };
        // Only this shard's records are checked.
        Ok(Workload::Stream(checked::Checked::wrap(
            source,
            &self.engine.endpoints,
        )))
    }
}

/// An endpoint is named, and `--concurrency`, `--timeout`, `--lead` and
/// `--judges` are not zero.
fn check_required(args: &RunArgs, given: &Given<'_>) -> Result<(), UsageError> {
    if given.endpoints.is_empty() {
        return Err(UsageError(
            "no endpoint given: name at least one URL, e.g. `versus http://127.0.0.1:8545/` (or try `versus demo`)".into(),
        ));
    }
    if args.concurrency == 0 {
        return Err(UsageError("--concurrency must be at least 1".into()));
    }
    if args.timeout.is_zero() {
        return Err(UsageError(
            "--timeout must be more than 0 (example: 30s)".into(),
        ));
    }
    if args.lead == 0 {
        return Err(UsageError("--lead must be at least 1".into()));
    }
    if args.judges == Some(0) {
        return Err(UsageError(
            "--judges must be at least 1 (answers that differ are judged off the timing cores)"
                .into(),
        ));
    }
    Ok(())
}

/// `--stop-after`; no limit when it is not given.
fn stop_after_of(given: &Given<'_>) -> Result<StopAfter, UsageError> {
    match given.stop_after {
        Some(s) => s.parse::<StopAfter>().map_err(UsageError),
        None => Ok(StopAfter::default()),
    }
}

/// Single-request mode: `--method` or `--body`, or nothing to read (stdin
/// a terminal and no input named; `--input-file -` names stdin).
fn is_single(args: &RunArgs, stdin_is_terminal: bool) -> bool {
    args.method.is_some()
        || args.body.is_some()
        || (stdin_is_terminal && args.input_file.is_none() && args.input_format.is_none())
}

/// `--warmup`: a request stream cannot be warmed up for a time when the
/// run stops after a count.
fn warmup_of(
    args: &RunArgs,
    stop_after: &StopAfter,
    single: bool,
) -> Result<StopAfter, UsageError> {
    let warmup = match &args.warmup {
        Some(w) => w
            .parse::<StopAfter>()
            .map_err(|e| UsageError(e.replace("--stop-after", "--warmup")))?,
        None => StopAfter::default(),
    };
    if warmup.duration.is_some() && stop_after.count.is_some() && !single {
        return Err(UsageError(
            "--warmup DURATION with --stop-after N on a request stream: the input cannot know which requests the warm-up takes; give --warmup as a count".into(),
        ));
    }
    Ok(warmup)
}

/// The load over time, the whole run's (before a shard takes its share):
/// the open model's rate (`--rate`, or `--stages` of rates), or the closed
/// model's virtual users (`--stages` of counts; without it `-c`).
#[derive(Default)]
struct Shaped {
    open: Option<Arc<dyn Shape>>,
    users: Option<Users>,
    sweep: Option<Sweep>,
    search: Option<Search>,
}

/// The load's shape from `--rate` and `--stages`; `--max-in-flight` must
/// not be zero. Stages end the run when they end, unless `--stop-after`
/// ends it first.
fn load_shape(
    args: &RunArgs,
    stages: Option<Said<'_>>,
    stop_after: &mut StopAfter,
) -> Result<Shaped, UsageError> {
    if args.max_in_flight == 0 {
        return Err(UsageError("--max-in-flight must be at least 1".into()));
    }
    if !args.find_capacity.is_empty() {
        return searched(args, stages.is_some(), stop_after);
    }
    if let Some(sweep) = args.sweep.as_deref() {
        return swept(args, sweep, stages.is_some(), stop_after);
    }
    let rate = args.rate.as_deref().map(str::parse::<Rate>).transpose();
    let shaped = match (rate.map_err(UsageError)?, stages) {
        (Some(_), Some(_)) => return Err(UsageError(
            "--rate with --stages: give one; a held stage is a constant rate (--stages 1m:500/s)"
                .into(),
        )),
        (Some(rate), None) => Shaped {
            open: Some(Arc::new(Constant(rate))),
            ..Shaped::default()
        },
        (None, None) => Shaped::default(),
        (None, Some(stages)) => {
            if args.warmup.is_some() {
                return Err(UsageError(
                    "--warmup with --stages: the stages start at the clock; make the first stage the warm-up (--stages 10s:0..100/s,...)".into(),
                ));
            }
            let staged = parse_stages(stages.text)
                .map_err(|e| UsageError(e.replacen("--stages", stages.by, 1)))?;
            let (open, users, length) = match staged {
                Staged::Open(s) => {
                    let length = s.length();
                    (Some(Arc::new(s) as Arc<dyn Shape>), None, length)
                }
                Staged::Closed(u) => {
                    let length = Some(u.length());
                    (None, Some(u), length)
                }
            };
            stop_after.duration = stop_after.duration.min(length).or(length);
            Shaped {
                open,
                users,
                ..Shaped::default()
            }
        }
    };
    Ok(shaped)
}

/// `--sweep`: the open model at each rate in turn; the run ends with the
/// last step unless `--stop-after` ends it first.
fn swept(
    args: &RunArgs,
    sweep: &str,
    staged: bool,
    stop_after: &mut StopAfter,
) -> Result<Shaped, UsageError> {
    let other = [
        (args.rate.is_some(), "--rate"),
        (staged, "--stages"),
        (args.warmup.is_some(), "--warmup"),
    ];
    if let Some((_, flag)) = other.iter().find(|(given, _)| *given) {
        return Err(UsageError(format!(
            "--sweep with {flag}: a sweep sets the rate of each step, and each step settles (--settle) before it counts; give one"
        )));
    }
    let interval = Duration::from_secs(1);
    let sweep =
        Sweep::parse(sweep, args.settle, args.step_duration, interval).map_err(UsageError)?;
    let shape = sweep.shape();
    let length = shape.length();
    stop_after.duration = stop_after.duration.min(length).or(length);
    Ok(Shaped {
        open: Some(Arc::new(shape)),
        sweep: Some(sweep),
        ..Shaped::default()
    })
}

/// The least lead window of a capacity search: an endpoint driven past
/// its capacity for a step leaves a backlog of this many units before the
/// others are held back (a few MB a core).
const SEARCH_LEAD: usize = 65_536;

/// `--find-capacity`: the open model from `--capacity-start`, each
/// endpoint's rate then set by the search step by step.
fn searched(
    args: &RunArgs,
    staged: bool,
    stop_after: &mut StopAfter,
) -> Result<Shaped, UsageError> {
    let other = [
        (args.rate.is_some(), "--rate"),
        (staged, "--stages"),
        (args.sweep.is_some(), "--sweep"),
        (args.warmup.is_some(), "--warmup"),
        (args.shard.is_some(), "--shard"),
    ];
    if let Some((_, flag)) = other.iter().find(|(given, _)| *given) {
        return Err(UsageError(format!(
            "--find-capacity with {flag}: the search sets each endpoint's rate step by step (from --capacity-start, each step settling first); give one"
        )));
    }
    crate::report::capacity::conditions(&args.find_capacity).map_err(UsageError)?;
    let rate = |flag: &str, s: &str| {
        s.parse::<Rate>()
            .map(|r| r.0)
            .map_err(|e| UsageError(e.replacen("--rate", flag, 1)))
    };
    let (start, max) = (
        rate("--capacity-start", &args.capacity_start)?,
        rate("--capacity-max", &args.capacity_max)?,
    );
    if max < start {
        return Err(UsageError(format!(
            "--capacity-max {} is below --capacity-start {}: the search climbs from the start to the highest rate",
            args.capacity_max, args.capacity_start
        )));
    }
    let resolution = args
        .resolution
        .trim()
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| *p > 0.0 && *p < 100.0)
        .ok_or_else(|| {
            UsageError(format!(
                "--resolution {:?}: give a percentage between 0 and 100, like 5%",
                args.resolution
            ))
        })?;
    // The steps' times, checked as a sweep's are.
    let clock = Sweep::parse("1", args.settle, args.step_duration, Duration::from_secs(1))
        .map_err(UsageError)?;
    let search = Search {
        conditions: args.find_capacity.clone(),
        start,
        max,
        resolution: resolution / 100.0,
        settle_ms: clock.settle_ms,
        hold_ms: clock.hold_ms,
        time_ms: u64::try_from(args.capacity_time.as_millis()).unwrap_or(u64::MAX),
    };
    if search.clock().count == 0 {
        return Err(UsageError(format!(
            "--capacity-time {}: shorter than one step (--settle plus --step-duration)",
            humantime::format_duration(args.capacity_time)
        )));
    }
    let length = Some(search.length());
    stop_after.duration = stop_after.duration.min(length).or(length);
    Ok(Shaped {
        open: Some(Arc::new(search.shape())),
        search: Some(search),
        ..Shaped::default()
    })
}

/// The endpoints in command-line order, each with every `--header` and
/// then its own `--endpoint-header`s; no two may share a label.
fn endpoints_of(args: &RunArgs, given: &Given<'_>) -> Result<Vec<EndpointSpec>, UsageError> {
    let global: Vec<(HeaderName, HeaderValue)> = args
        .headers
        .iter()
        .map(|h| parse_header(h).map_err(|e| UsageError(format!("--header {h:?}: {e}"))))
        .collect::<Result<_, _>>()?;
    let mut endpoints = Vec::with_capacity(given.endpoints.len());
    for arg in given.endpoints {
        let mut spec = EndpointSpec::parse(arg, args.show_secrets)
            .map_err(|e| UsageError(format!("{e}{}", did_you_mean(arg))))?;
        for (n, v) in &global {
            spec.set_header(n.clone(), v.clone());
        }
        endpoints.push(spec);
    }
    for (i, a) in endpoints.iter().enumerate() {
        if endpoints[..i].iter().any(|b| b.label == a.label) {
            return Err(UsageError(format!(
                "two endpoints are labelled {:?}: give them different names (NAME=URL)",
                a.label
            )));
        }
    }
    for eh in &given.endpoint_headers {
        add_endpoint_header(&mut endpoints, *eh)?;
    }
    Ok(endpoints)
}

/// One `--endpoint-header NAME=Header: value`, set on the endpoint it
/// names (a label, or a position from 0).
fn add_endpoint_header(endpoints: &mut [EndpointSpec], said: Said<'_>) -> Result<(), UsageError> {
    let (by, eh) = (said.by, said.text);
    let (who, header) = eh
        .split_once('=')
        .ok_or_else(|| UsageError(format!("{by} {eh:?}: expected NAME=Header: value")))?;
    let (n, v) = parse_header(header).map_err(|e| UsageError(format!("{by} {eh:?}: {e}")))?;
    let target = endpoint_index(endpoints, who).ok_or_else(|| {
        UsageError(format!(
            "{by} {eh:?}: no endpoint is named {who:?} (use a label given as NAME=URL, or a position from 0)"
        ))
    })?;
    endpoints[target].set_header(n, v);
    Ok(())
}

/// Where a request stream is read from.
struct StreamInput {
    /// `--input-file`; `None` (or `-`) is stdin.
    file: Option<PathBuf>,
    /// `--input`, or else what the file shows it is; `None` for stdin
    /// without `--input`.
    format: Option<Format>,
}

impl StreamInput {
    /// `--input` and `--input-file`, which must name a file there is.
    fn of(args: &RunArgs) -> Result<StreamInput, UsageError> {
        let file = args.input_file.clone().filter(|p| p.as_os_str() != "-");
        let format = match (&args.input_format, &file) {
            (Some(f), _) => Some(
                f.parse::<Format>()
                    .map_err(|e| UsageError(format!("--input: {e}")))?,
            ),
            (None, Some(path)) => Some(
                crate::input::detect_file(path)
                    .map_err(|e| UsageError(format!("--input-file {}: {e}", path.display())))?,
            ),
            (None, None) => None,
        };
        if let Some(path) = &file {
            std::fs::metadata(path)
                .map_err(|e| UsageError(format!("--input-file {}: {e}", path.display())))?;
        }
        Ok(StreamInput { file, format })
    }
}

/// A request stream, or in single-request mode the request `--method` and
/// `--body` make (they cannot go with a named input), sent for 10s unless
/// `--stop-after` says otherwise.
fn request_mode(
    args: &RunArgs,
    single: bool,
    stop_after: &mut StopAfter,
) -> Result<RequestMode, UsageError> {
    if (args.method.is_some() || args.body.is_some())
        && (args.input_file.is_some() || args.input_format.is_some())
    {
        return Err(UsageError(
            "--method/--body send one request repeatedly; they cannot be combined with --input or --input-file".into(),
        ));
    }
    if !single {
        return Ok(RequestMode::Stream);
    }
    let body = match &args.body {
        Some(b) => match b.strip_prefix('@') {
            Some(path) => Bytes::from(
                std::fs::read(path).map_err(|e| UsageError(format!("--body @{path}: {e}")))?,
            ),
            None => Bytes::from(b.clone()),
        },
        None => Bytes::new(),
    };
    let method = match &args.method {
        Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| UsageError(format!("--method {m:?}: not an HTTP method")))?,
        None if args.body.is_some() => Method::POST,
        None => Method::GET,
    };
    if *stop_after == StopAfter::default() {
        stop_after.duration = Some(Duration::from_secs(10));
    }
    Ok(RequestMode::Single(Request {
        seq: 0,
        method: Some(method),
        target: None,
        headers: Vec::new(),
        body,
    }))
}

/// How answers are compared.
struct Comparison {
    /// `--compare` with its rules, JSON-RPC awareness, headers and
    /// `--noise` twin.
    comparer: Comparer,
    /// `--compare-header`: the headers compared, which responses keep.
    headers: Vec<HeaderName>,
}

impl Comparison {
    /// The comparison in `mode` with the command line's rules; `--noise`
    /// needs one, and may add its twin to `endpoints`.
    fn of(
        args: &RunArgs,
        mode: CompareMode,
        endpoints: &mut Vec<EndpointSpec>,
    ) -> Result<Comparison, UsageError> {
        let twin = noise_twin(args, endpoints)?;
        let headers = args
            .compare_header
            .iter()
            .map(|h| {
                HeaderName::from_bytes(h.trim().as_bytes()).map_err(|_| {
                    UsageError(format!("--compare-header {h:?}: not a valid header name"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let comparer = Comparer::new(mode)
            .with_rules(rules(args).map_err(UsageError)?)
            .with_jsonrpc(!args.no_jsonrpc)
            .with_status_mapping(!args.no_status_mapping)
            .with_headers(headers.clone())
            .with_twin(twin);
        if twin.is_some() && !comparer.enabled() {
            return Err(UsageError(
                "--noise needs a comparison: not with --compare none".into(),
            ));
        }
        Ok(Comparison { comparer, headers })
    }
}

/// `--noise`: the endpoint that serves the same as the reference, to tell
/// its noise from differences. Alone, it adds a second copy of the
/// reference to `endpoints`; with a label, it names one given.
fn noise_twin(
    args: &RunArgs,
    endpoints: &mut Vec<EndpointSpec>,
) -> Result<Option<usize>, UsageError> {
    match args.noise.as_deref() {
        None => Ok(None),
        Some("") => {
            let mut again = endpoints[0].clone();
            again.label = format!("{} (again)", endpoints[0].label);
            again.named = true;
            endpoints.push(again);
            Ok(Some(endpoints.len() - 1))
        }
        Some(label) => match endpoints.iter().position(|e| e.label == label) {
            Some(0) => Err(UsageError(format!(
                "--noise={label}: that is the reference itself; name a second copy of it, or give --noise alone"
            ))),
            Some(i) => Ok(Some(i)),
            None if label.contains("://") => Err(UsageError(format!(
                "--noise took {label:?} as its label (it takes one, optionally): put the endpoints before --noise, or write --noise=LABEL"
            ))),
            None => Err(UsageError(format!(
                "--noise={label}: no endpoint is named {label:?}"
            ))),
        },
    }
}

/// What the run writes besides its report.
struct Outputs {
    /// `--mismatches`.
    mismatch_log: Option<Arc<MismatchLog>>,
    /// `--record`, with `--output`.
    record: Option<Record>,
    /// `--record mismatches`'s writer of request lines.
    problem_lines: Option<Arc<ProblemLines>>,
    /// What sees each request: the `-v` printer, the mismatch log, the
    /// writer of request lines.
    taps: Vec<Arc<dyn crate::engine::Tap>>,
}

impl Outputs {
    /// `--mismatches`, `-v` and `--record`.
    fn of(args: &RunArgs) -> Outputs {
        let mismatch_log = args.mismatches.as_ref().map(|path| {
            Arc::new(MismatchLog::new(
                path,
                args.mismatch_limit,
                args.show_secrets,
            ))
        });
        let mut taps: Vec<Arc<dyn crate::engine::Tap>> = Vec::new();
        if args.verbose > 0 {
            taps.push(Arc::new(crate::report::verbose::Printer {
                level: args.verbose,
            }));
        }
        if let Some(log) = &mismatch_log {
            taps.push(log.clone());
        }
        let record = args.output.as_ref().map(|_| match args.record {
            crate::cli::Record::Requests => Record::Requests,
            crate::cli::Record::Mismatches => Record::Mismatches,
            crate::cli::Record::None => Record::None,
        });
        let problem_lines = (record == Some(Record::Mismatches))
            .then(|| Arc::new(ProblemLines::new(args.record_limit)));
        if let Some(p) = &problem_lines {
            taps.push(p.clone());
        }
        Outputs {
            mismatch_log,
            record,
            problem_lines,
            taps,
        }
    }
}

/// How requests reach the endpoints.
struct Transport {
    /// `--http1`, `--http2`, or whichever the endpoint offers.
    version: HttpVersion,
    /// Each endpoint's `--fault`s.
    faults: Vec<Vec<Fault>>,
    /// `--io`.
    io: IoDriver,
    /// TLS, when an endpoint uses it.
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Transport {
    /// The HTTP version, the faults (which it may rule out), the I/O
    /// driver, and TLS (`src/plan/tls.rs`), which may give an endpoint a
    /// configuration of its own.
    fn of(
        args: &RunArgs,
        faults: &[Said<'_>],
        endpoints: &mut [EndpointSpec],
    ) -> Result<Transport, UsageError> {
        let version = match (args.http1, args.http2) {
            (true, _) => HttpVersion::Http1,
            (_, true) => HttpVersion::Http2,
            _ => HttpVersion::Auto,
        };
        let faults = faults_of(faults, endpoints, version)?;
        let io = io_driver(args.io).map_err(UsageError)?;
        let tls = tls::configs(args, endpoints, version)?;
        Ok(Transport {
            version,
            faults,
            io,
            tls,
        })
    }
}

impl GrpcPlan {
    /// `--proto` (with `--proto-path`) compiled, and `--grpc-json`.
    fn of(args: &RunArgs) -> Result<GrpcPlan, UsageError> {
        Ok(GrpcPlan {
            schema: if args.proto.is_empty() {
                if !args.proto_path.is_empty() {
                    return Err(UsageError(
                        "--proto-path needs --proto FILE: name the .proto file to compile".into(),
                    ));
                }
                None
            } else {
                Some(
                    crate::grpc::compile(&args.proto, &args.proto_path)
                        .map_err(|e| UsageError(e.to_string()))?,
                )
            },
            json: args
                .grpc_json
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| UsageError(format!("--grpc-json: {e}")))?
                .unwrap_or_default(),
            step_methods: Vec::new(),
        })
    }
}

/// The load this process makes: on `--threads` cores, its shard's share of
/// `--concurrency` (or the stages' most virtual users), `--max-connections`,
/// and of the counts of `--stop-after` and `--warmup`; and the whole run's
/// shape, which the schedule shares out.
struct Load {
    concurrency: usize,
    shaped: Shaped,
    max_connections: Option<usize>,
    threads: usize,
    stop_after: StopAfter,
    warmup: StopAfter,
    shard: Share,
}

impl Load {
    /// The shard's share of the load; `shaped` is the whole run's.
    fn share(
        args: &RunArgs,
        shard: Share,
        shaped: Shaped,
        stop_after: StopAfter,
        warmup: StopAfter,
    ) -> Load {
        let users = shaped.users.as_ref().map_or(args.concurrency, Users::peak);
        Load {
            concurrency: shard.share_of(users).max(1),
            shaped,
            max_connections: args
                .max_connections
                .map(|n| usize::try_from(shard.share(n).max(1)).unwrap_or(usize::MAX)),
            threads: args
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1),
            stop_after: StopAfter {
                count: stop_after.count.map(|n| shard.share(n)),
                ..stop_after
            },
            warmup: StopAfter {
                count: warmup.count.map(|n| shard.share(n)),
                ..warmup
            },
            shard,
        }
    }
}

/// The engine's settings, from the parts the command line made.
fn settings(
    args: &RunArgs,
    endpoints: Vec<EndpointSpec>,
    transport: Transport,
    comparison: Comparison,
    taps: Vec<Arc<dyn crate::engine::Tap>>,
    load: Load,
    start_at: Option<std::time::SystemTime>,
) -> Settings {
    Settings {
        endpoints: endpoints.into_iter().map(Arc::new).collect(),
        faults: transport.faults,
        transport: TransportOptions {
            timeout: args.timeout,
            max_body: args.max_body,
            keepalive: !args.no_keepalive,
            version: transport.version,
            keep_headers: comparison.headers,
            max_connections: load.max_connections,
            io: transport.io,
        },
        tls: transport.tls,
        concurrency: load.concurrency,
        open: load.shaped.open,
        users: load.shaped.users,
        max_in_flight: args.max_in_flight,
        threads: load.threads,
        stop_after: load.stop_after,
        warmup: load.warmup,
        drain: args.drain,
        comparer: comparison.comparer,
        verbose: args.verbose,
        // A search drives an endpoint past its capacity: the others must not
        // wait for its backlog in the lead window.
        window: match load.shaped.search {
            Some(_) => args.lead.max(SEARCH_LEAD),
            None => args.lead,
        },
        judge_memory: args.judge_memory,
        judges: args.judges.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            cores.saturating_sub(load.threads).max(1)
        }),
        strict: args.strict,
        interval: Duration::from_secs(1),
        taps,
        shard: load.shard,
        start_at,
    }
}

/// The comparison rules from the command line and `--rules`.
fn rules(args: &RunArgs) -> Result<Rules, String> {
    let path = |flag: &str, p: &str| {
        p.parse::<crate::compare::path::PathPattern>()
            .map_err(|e| format!("{flag} {p:?}: {e}"))
    };
    let mut base = RuleSet {
        subset: args.subset,
        hex_case_insensitive: args.ignore_hex_case,
        ignore_error_message: args.ignore_error_message,
        ..RuleSet::default()
    };
    for p in &args.ignore {
        base.ignore.push(path("--ignore", p)?);
    }
    for p in &args.unordered {
        base.unordered.push(path("--unordered", p)?);
    }
    for a in &args.array_key {
        base.array_keys
            .push(compare_rules::parse_array_key(a).map_err(|e| format!("--array-key: {e}"))?);
    }
    for t in &args.tolerance {
        base.tolerances
            .push(compare_rules::parse_tolerance(t).map_err(|e| format!("--tolerance: {e}"))?);
    }
    match &args.rules {
        None => Ok(Rules::new(base)),
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--rules {}: {e}", file.display()))?;
            Rules::from_toml(&text, base).map_err(|e| format!("--rules {}: {e}", file.display()))
        }
    }
}

/// Parse `Name: value`.
fn parse_header(h: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = h.split_once(':').ok_or("expected 'Name: value'")?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a valid header name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| "the value has characters not allowed in a header".to_string())?;
    Ok((name, value))
}

/// The endpoint that `who` names: its label, or its position from 0.
fn endpoint_index(endpoints: &[EndpointSpec], who: &str) -> Option<usize> {
    let index = who.parse::<usize>().ok().filter(|i| *i < endpoints.len());
    endpoints
        .iter()
        .enumerate()
        .position(|(i, s)| s.label == who || Some(i) == index)
}

/// Every `--fault NAME=SPEC`, per endpoint. The HTTP faults read HTTP/1.1
/// requests in the proxy, so they are refused where the proxy sees TLS,
/// HTTP/2 or a WebSocket.
fn faults_of(
    list: &[Said<'_>],
    endpoints: &[EndpointSpec],
    version: HttpVersion,
) -> Result<Vec<Vec<Fault>>, UsageError> {
    let mut faults = vec![Vec::new(); endpoints.len()];
    for &Said { text: arg, by } in list {
        let fail = |problem: String| UsageError(format!("{by} {arg:?}: {problem}"));
        let (who, spec) = arg
            .split_once('=')
            .ok_or_else(|| fail("expected NAME=FAULT, as in slow='latency 200ms'".into()))?;
        let i = endpoint_index(endpoints, who).ok_or_else(|| {
            fail(format!(
                "no endpoint is named {who:?} (use a label given as NAME=URL, or a position from 0)"
            ))
        })?;
        let fault: Fault = spec
            .parse()
            .map_err(|e: crate::fault::FaultError| fail(e.0))?;
        let e = &endpoints[i];
        if fault.action.is_http() {
            let hidden = if e.scheme == Scheme::Https {
                Some("TLS (https://, wss://)")
            } else if e.style == crate::model::Style::WebSocket {
                Some("a WebSocket")
            } else if version == HttpVersion::Http2 {
                Some("HTTP/2 (--http2)")
            } else {
                None
            };
            if let Some(what) = hidden {
                return Err(fail(format!(
                    "{} reads HTTP/1.1 requests, and the proxy sees only {what} bytes at {}: use a byte-stream fault (latency, reset, timeout, ...) there, or plain http://",
                    fault.action, e.label
                )));
            }
        }
        faults[i].push(fault);
    }
    Ok(faults)
}

/// `; did you mean `versus report`?` when `arg`, which is not a URL, is a
/// command's name mistyped (at most two letters off); else nothing.
fn did_you_mean(arg: &str) -> String {
    use clap::CommandFactory;
    if arg.contains("://") {
        return String::new();
    }
    let cli = crate::cli::Cli::command();
    let close = cli
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|name| name != "help")
        .find(|name| crate::display::edits(arg, name) <= 2);
    close.map_or_else(String::new, |name| {
        format!("; did you mean `versus {name}`?")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `versus reprot x` once said only `"reprot": not a URL`.
    #[test]
    fn a_mistyped_command_is_named() {
        assert_eq!(crate::display::edits("reprot", "report"), 2);
        assert_eq!(did_you_mean("reprot"), "; did you mean `versus report`?");
        assert_eq!(did_you_mean("mrege"), "; did you mean `versus merge`?");
        assert_eq!(did_you_mean("localhost:8080"), "");
        assert_eq!(did_you_mean("http://reprot/"), "");
    }

    fn args(list: &[&str]) -> RunArgs {
        use clap::Parser;
        let mut v = vec!["versus"];
        v.extend_from_slice(list);
        crate::cli::Cli::try_parse_from(v).unwrap().run
    }

    #[test]
    fn stop_after_takes_counts_and_durations() {
        assert_eq!("100".parse::<StopAfter>().unwrap().count, Some(100));
        assert_eq!(
            "2s".parse::<StopAfter>().unwrap().duration,
            Some(Duration::from_secs(2))
        );
        assert!("0".parse::<StopAfter>().is_err());
        assert!("soon".parse::<StopAfter>().is_err());
    }

    #[test]
    fn endpoint_headers_go_to_their_endpoint_only() {
        let p = Plan::from_args(
            &args(&[
                "-H",
                "X-All: 1",
                "--endpoint-header",
                "b=Authorization: Bearer k",
                "--endpoint-header",
                "0=X-First: yes",
                "a=http://127.0.0.1:1/",
                "b=http://127.0.0.1:2/",
            ]),
            false,
        )
        .unwrap();
        assert_eq!(p.engine.endpoints[0].headers["x-all"], "1");
        assert_eq!(p.engine.endpoints[1].headers["x-all"], "1");
        assert_eq!(p.engine.endpoints[1].headers["authorization"], "Bearer k");
        assert!(!p.engine.endpoints[0].headers.contains_key("authorization"));
        assert_eq!(p.engine.endpoints[0].headers["x-first"], "yes");
        assert_eq!(p.mode, RequestMode::Stream);
    }

    #[test]
    fn templates_go_to_their_endpoint_and_bad_ones_are_usage_errors() {
        let plan = |extra: &[&str]| {
            let mut list = extra.to_vec();
            list.extend([
                "a=http://127.0.0.1:1/",
                "g=grpc://127.0.0.1:2/p.S/M",
                "w=ws://127.0.0.1:3/",
            ]);
            Plan::from_args(&args(&list), false)
        };
        let p = plan(&[
            "--template",
            "a=GET /x/{{ id }}",
            "--template",
            "1={\"id\": \"{{ line }}\"}",
        ])
        .unwrap();
        assert!(p.engine.endpoints[0].template.is_some());
        assert!(p.engine.endpoints[1].template.is_some());
        assert!(p.engine.endpoints[2].template.is_none());
        let err = |extra: &[&str]| plan(extra).unwrap_err().0;
        assert!(err(&["--template", "b=GET /x"]).contains("no endpoint is named \"b\""));
        assert!(err(&["--template", "a"]).contains("expected NAME=SPEC"));
        assert!(err(&["--template", "w={}"]).contains("WebSocket"));
        assert!(err(&["--template", "g=GET /x"]).contains("proto3 JSON"));
        assert!(
            err(&["--template", "a=/x", "--template", "a=/y"]).contains("has a template already")
        );
        assert!(err(&["-d", "{}", "--template", "a=/x"]).contains("single-request mode"));
    }

    #[test]
    fn single_request_mode_when_a_method_or_body_is_given_or_stdin_is_a_terminal() {
        let p = Plan::from_args(&args(&["-d", "{}", "http://127.0.0.1:1/"]), false).unwrap();
        let RequestMode::Single(r) = &p.mode else {
            panic!("not single")
        };
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(p.engine.stop_after.duration, Some(Duration::from_secs(10)));
        let p = Plan::from_args(&args(&["http://127.0.0.1:1/"]), true).unwrap();
        assert!(matches!(&p.mode, RequestMode::Single(r) if r.method == Some(Method::GET)));
        // A named input is a stream even when it is the terminal's stdin.
        let file = std::env::temp_dir().join(format!("versus-plan-{}.txt", std::process::id()));
        std::fs::write(&file, "{}\n").unwrap();
        let file = file.to_str().unwrap();
        for named in [&["--input-file", "-"][..], &["--input-file", file][..]] {
            let mut list = named.to_vec();
            list.push("http://127.0.0.1:1/");
            let p = Plan::from_args(&args(&list), true).unwrap();
            assert_eq!(p.mode, RequestMode::Stream, "{named:?}");
            // ... so a warm-up by time cannot go with a count.
            list.extend(["--warmup", "2s", "--stop-after", "100"]);
            let err = Plan::from_args(&args(&list), true).unwrap_err().to_string();
            assert!(err.contains("--warmup DURATION"), "{named:?}: {err}");
        }
        let _ = std::fs::remove_file(file);
    }

    #[test]
    fn usage_errors_name_the_flag() {
        for (list, want) in [
            (vec![], "no endpoint"),
            (vec!["-c", "0", "http://h/"], "--concurrency"),
            (vec!["--stop-after", "x", "http://h/"], "--stop-after"),
            (vec!["--compare", "fuzzy", "http://h/"], "--compare"),
            (vec!["-H", "nocolon", "http://h/"], "--header"),
            (
                vec!["--endpoint-header", "zz=A: b", "http://h/"],
                "no endpoint is named",
            ),
            (vec!["a=http://h/", "a=http://i/"], "labelled"),
            (vec!["--body", "@/nonexistent/file", "http://h/"], "--body"),
            (vec!["--shard", "4/4", "http://h/"], "0 <= I < N"),
            (vec!["--shard", "1", "http://h/"], "--shard"),
            (vec!["--shard", "0/0", "http://h/"], "--shard"),
            (vec!["--start-at", "noon", "http://h/"], "--start-at"),
        ] {
            let err = Plan::from_args(&args(&list), false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{list:?}: {err}");
        }
    }

    /// For N in 1..8: the shards' records (and a core's instance numbers
    /// within each shard) are disjoint and together all of them; counts
    /// and concurrency shares add up.
    #[test]
    fn shards_split_without_overlap() {
        for n in 1..8u64 {
            let shards: Vec<Share> = (0..n).map(|i| Share { index: i, count: n }).collect();
            for k in 0..100u64 {
                assert_eq!(
                    shards.iter().filter(|s| s.owns(k)).count(),
                    1,
                    "n={n} k={k}"
                );
            }
            for total in [0u64, 1, 5, 7, 100, 1001] {
                assert_eq!(shards.iter().map(|s| s.share(total)).sum::<u64>(), total);
                // The first `total` records: each shard owns its share of them.
                for s in &shards {
                    assert_eq!(
                        (0..total).filter(|k| s.owns(*k)).count() as u64,
                        s.share(total)
                    );
                }
            }
            for cores in 1..4 {
                let mut numbers: Vec<u64> = shards
                    .iter()
                    .flat_map(|s| (0..cores).map(move |c| s.part(c, cores)))
                    .flat_map(|p| (0..50).map(move |k| p.index + k * p.count))
                    .collect();
                numbers.sort_unstable();
                let want: Vec<u64> = (0..numbers.len() as u64).collect();
                assert_eq!(numbers, want, "n={n} cores={cores}");
            }
        }
    }

    #[test]
    fn a_shard_takes_its_share_of_the_flags() {
        let p = Plan::from_args(
            &args(&[
                "--shard",
                "1/3",
                "-c",
                "4",
                "--rate",
                "900",
                "--stop-after",
                "10",
                "--warmup",
                "5",
                "http://h/",
            ]),
            false,
        )
        .unwrap();
        assert_eq!(p.engine.shard, Share { index: 1, count: 3 });
        assert_eq!(p.engine.concurrency, 1);
        assert_eq!(p.engine.rate(), Some(crate::engine::pace::Rate(300.0)));
        assert_eq!(p.engine.stop_after.count, Some(3));
        assert_eq!(p.engine.warmup.count, Some(2));
        // Fewer connections than shards: each shard still has one.
        let p = Plan::from_args(&args(&["--shard", "5/6", "-c", "2", "http://h/"]), false).unwrap();
        assert_eq!(p.engine.concurrency, 1);
        let p = Plan::from_args(
            &args(&["--start-at", "2030-01-01T12:00:00Z", "http://h/"]),
            false,
        )
        .unwrap();
        assert_eq!(
            p.engine.start_at,
            Some(std::time::UNIX_EPOCH + Duration::from_secs(1_893_499_200))
        );
    }
}
