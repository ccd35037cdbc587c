//! The command-line contract (clap derive). Flags are checked for form
//! here; meaning and combinations are checked by [`crate::plan::Plan`].
//! Every flag's help text lives here, once.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// versus: send one request stream to several endpoints at once; report how
/// fast each answered and whether the answers agree.
#[derive(Debug, Parser)]
#[command(
    name = "versus",
    version,
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  ethspam | versus --stop-after=100 --concurrency=5 https://node.example/\n  versus demo\n  versus --stop-after=10s -c 50 http://127.0.0.1:8080/health\n\n-h shows the common options; --help shows every one, in full (docs/cli.md).",
    after_long_help = "Examples:\n  ethspam | versus --stop-after=100 --concurrency=5 https://node.example/\n  versus demo\n  versus --stop-after=10s -c 50 http://127.0.0.1:8080/health"
)]
pub struct Cli {
    /// A subcommand; without one, versus runs against the ENDPOINTs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of a run.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a self-contained demonstration.
    ///
    /// Two JSON-RPC endpoints inside the process, realistic Ethereum
    /// traffic, the full report. No network.
    Demo(DemoArgs),
    /// Write generated requests to stdout.
    ///
    /// One per line, for piping into versus: `versus gen ethereum | versus
    /// URL...`.
    Gen(GenArgs),
    /// Report saved runs (files written with --output) again.
    ///
    /// The text report, or JSON, Markdown, CSV or HTML. Several files of
    /// the same endpoints (shards of one run) are merged first.
    Report(ReportArgs),
    /// Merge shards of one run into one saved run.
    ///
    /// Shards are parts of one run made on several machines: histograms add
    /// exactly, counters sum, intervals align by wall clock.
    Merge(MergeArgs),
    /// Compare saved runs side by side.
    ///
    /// Per endpoint label (or, given one file, its endpoints): rates,
    /// latency, size, errors, mismatches, the change against the first, and
    /// whether it is significant.
    Compare(CompareArgs),
    /// Run a scenario file.
    ///
    /// Named sequences of dependent calls (log in, take the token, create,
    /// read back), every step compared across the endpoints. Every run
    /// option applies.
    Run(Box<ScenarioArgs>),
}

/// Options of `versus run FILE`.
#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// The scenario file (TOML; see docs/scenarios.md).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Run only the scenarios whose name matches (a glob with `*`, else a
    /// part of the name; repeatable).
    #[arg(long = "match", value_name = "PATTERN")]
    pub patterns: Vec<String>,
    /// Print the scenarios (name, weight, steps) and exit.
    #[arg(long)]
    pub list: bool,
    /// Options of the run; ENDPOINTs given here replace the file's.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options of `versus report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Saved runs (written with --output); several are merged.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Report format: text, json, markdown, csv, html or vegeta.
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    pub format: String,
    /// Check a condition such as 'p99 < 200ms' (repeatable); exit 3 if any
    /// fails.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Write the verdicts (thresholds, endpoints, flow steps) as JUnit XML
    /// to FILE, for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Options of `versus merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Saved runs of the same endpoints (shards of one run).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the merged run.
    #[arg(short = 'o', long = "output", value_name = "OUT", required = true)]
    pub output: PathBuf,
}

/// Options of `versus compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Saved runs: the first is the baseline. With one file, its endpoints
    /// are compared with its first endpoint.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Table format: text or markdown.
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    pub format: String,
}

/// Options of `versus gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// What to generate.
    #[arg(value_enum)]
    pub generator: Generator,
    /// Method weight as METHOD:WEIGHT (repeatable); when given, these
    /// methods alone make the mix, in exactly these proportions.
    #[arg(short = 'm', long = "method", value_name = "METHOD:WEIGHT")]
    pub methods: Vec<String>,
    /// Lines per second (default: as fast as they are read).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Stop after this many lines (default: never).
    #[arg(short = 'n', long)]
    pub count: Option<u64>,
    /// Seed: the same seed gives the same lines.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Follow the chain head of this JSON-RPC node (polled with
    /// eth_blockNumber); if it cannot be reached, a warning, not an error.
    #[arg(long, value_name = "URL")]
    pub rpc: Option<String>,
}

/// `--io`: the I/O driver of plain-TCP HTTP/1.1 connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IoMode {
    /// io_uring where this process can have it, else epoll.
    Auto,
    /// io_uring; an error where it is unavailable.
    Uring,
    /// tokio's reactor (epoll).
    Epoll,
}

/// `--record`: which request lines a saved run keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Record {
    /// Every request read.
    Requests,
    /// Those of requests that mismatched or met an error.
    Mismatches,
    /// None: the statistics alone.
    None,
}

/// Built-in generators.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Generator {
    /// Ethereum JSON-RPC with the method mix of mainnet traffic.
    Ethereum,
}

/// Options of `versus demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Which demo: `rpc` (JSON-RPC traffic against two nodes), `shop` (a
    /// scenario walking two shop APIs: login, cart, checkout) or `pages`
    /// (one catalog paged through three ways, items compared).
    #[arg(value_enum, default_value = "rpc", value_name = "WHICH")]
    pub which: DemoKind,
    /// How long the demo sends requests.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Requests in flight (or virtual users) per endpoint: 8, or 1 for
    /// `pages` (one traversal at a time, as latency by depth reads best).
    #[arg(short = 'c', long)]
    pub concurrency: Option<usize>,
    /// Print each mismatched request (-v).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Save the demo's run to FILE as it goes (JSON Lines), for `versus
    /// report` and `versus compare`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the demo's HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Format of the report on stdout: text, json, markdown, csv or vegeta.
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    pub format: String,
}

impl DemoArgs {
    /// The concurrency given, else the demo's own default.
    pub fn concurrency(&self) -> usize {
        self.concurrency.unwrap_or(match self.which {
            DemoKind::Pages => 1,
            DemoKind::Rpc | DemoKind::Shop => 8,
        })
    }
}

/// The demos.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoKind {
    /// Ethereum JSON-RPC traffic against a reference and a candidate node.
    Rpc,
    /// The shop scenario (examples/shop.toml) against two shop APIs.
    Shop,
    /// The pagination comparison (examples/pages.toml): one catalog paged
    /// through three ways (HATEOAS offset, keyset, page tokens).
    Pages,
}

/// Options of a run.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// Endpoints to send every request to, as URL or NAME=URL; the first is
    /// the reference.
    ///
    /// The others are compared with the reference. Schemes: http:// and
    /// https:// POST each input line as the body; http+get:// and
    /// https+get:// send a GET to the URL joined with the line;
    /// http+post:// and https+post:// POST explicitly; ws:// and wss://
    /// send each line as a JSON-RPC message on a WebSocket; grpc:// and
    /// grpcs:// call the gRPC method named by the URL's path
    /// (grpc://host:port/package.Service/Method) with each line as its
    /// request message in proto3 JSON.
    #[arg(value_name = "ENDPOINT")]
    pub endpoints: Vec<String>,

    /// Give up on a request after this long (connect, send, answer).
    #[arg(long, default_value = "30s", value_parser = parse_duration, help_heading = "Load")]
    pub timeout: Duration,

    /// Stop after N requests per endpoint, or after a duration (10s, 2m).
    #[arg(long, value_name = "N|DURATION", help_heading = "Load")]
    pub stop_after: Option<String>,

    /// Send this many requests (or for this long) first, uncounted.
    ///
    /// Warm caches, JITs and connection pools; --stop-after counts after it.
    #[arg(long, value_name = "N|DURATION", help_heading = "Load")]
    pub warmup: Option<String>,

    /// Requests in flight per endpoint.
    #[arg(short = 'c', long, default_value_t = 1, help_heading = "Load")]
    pub concurrency: usize,

    /// Open model: start this many requests a second per endpoint.
    ///
    /// On a schedule; written `500`, `500/s` or `30000/m`. Latency counts
    /// from the time each request was due.
    #[arg(long, value_name = "RATE", help_heading = "Load")]
    pub rate: Option<String>,

    /// Load over time: DURATION:VALUE stages, ramped (A..B) or held.
    ///
    /// Rates are the open model (30s:0..500/s,2m:500/s,30s:500..0/s); bare
    /// numbers are the closed model's virtual users (30s:1..50,2m:50). The
    /// run ends with the last stage.
    #[arg(long, value_name = "STAGES", help_heading = "Load")]
    pub stages: Option<String>,

    /// Load curves: each rate in turn, every step's figures reported.
    ///
    /// Each step holds for --step-duration after --settle.
    ///
    /// Rates as 500,1000,2000,4000/s or a range 1000..8000/s+1000 (from,
    /// to, step).
    #[arg(long, value_name = "RATES", help_heading = "Load")]
    pub sweep: Option<String>,

    /// Each endpoint's highest rate at which every EXPR ('p99<100ms') holds.
    ///
    /// EXPR is in the threshold syntax ('p99 < 100ms', 'errors < 1%');
    /// repeatable.
    /// Each endpoint starts at --capacity-start and doubles its rate while
    /// every step holds, then bisects to --resolution; steps last
    /// --step-duration after --settle, and the search at most
    /// --capacity-time.
    #[arg(long, value_name = "EXPR", help_heading = "Load")]
    pub find_capacity: Vec<String>,

    /// --find-capacity: the first rate tried.
    #[arg(
        long,
        default_value = "100/s",
        value_name = "RATE",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub capacity_start: String,

    /// --find-capacity: the highest rate tried.
    #[arg(
        long,
        default_value = "100000/s",
        value_name = "RATE",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub capacity_max: String,

    /// --find-capacity: the most time the search takes.
    #[arg(long, default_value = "5m", value_parser = parse_duration, help_heading = "Load", hide_short_help = true)]
    pub capacity_time: Duration,

    /// --find-capacity: the search ends when the rate that held and the
    /// one that broke are this close.
    #[arg(
        long,
        default_value = "5%",
        value_name = "PERCENT",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub resolution: String,

    /// --sweep: how long each step's figures count (whole seconds).
    #[arg(long, default_value = "10s", value_parser = parse_duration, help_heading = "Load", hide_short_help = true)]
    pub step_duration: Duration,

    /// --sweep: how long each step runs before its figures count (whole
    /// seconds).
    #[arg(long, default_value = "2s", value_parser = parse_duration, help_heading = "Load", hide_short_help = true)]
    pub settle: Duration,

    /// Open model: most requests in flight per endpoint; a request due when
    /// none is free starts late and is counted.
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "N",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub max_in_flight: usize,

    /// Show more: -v each mismatch, -vv a timing line per request.
    ///
    /// -v prints each mismatched request with every endpoint's answer; -vv
    /// also prints a timing line per request on stderr.
    #[arg(short, long, action = clap::ArgAction::Count, help_heading = "Output")]
    pub verbose: u8,

    /// A header for every endpoint, as 'Name: value' (repeatable).
    #[arg(
        short = 'H',
        long = "header",
        value_name = "HEADER",
        help_heading = "Requests"
    )]
    pub headers: Vec<String>,

    /// A header for one endpoint, as 'NAME=Name: value' where NAME is the
    /// endpoint's label or its position from 0 (repeatable).
    #[arg(
        long = "endpoint-header",
        value_name = "NAME=HEADER",
        help_heading = "Requests",
        hide_short_help = true
    )]
    pub endpoint_headers: Vec<String>,

    /// How one endpoint makes its request of each line, as 'NAME=SPEC'
    /// (see docs/input-formats.md).
    ///
    /// NAME is the endpoint's label or its position from 0 (repeatable, one
    /// per endpoint). SPEC is, for an HTTP endpoint '[METHOD]
    /// /PATH[?QUERY] [BODY]', e.g. 'GET /items/{{ id }}'; for a gRPC
    /// endpoint the request message, e.g. '{"id": "{{ line }}"}'. {{ line }}
    /// is the whole line, {{ seq }} its number in the stream (as -v and
    /// --mismatches number it), {{ NAME }} a field of a JSON line; a line
    /// without a field the template reads is malformed.
    #[arg(
        long = "template",
        value_name = "NAME=SPEC",
        help_heading = "Requests",
        hide_short_help = true
    )]
    pub templates: Vec<String>,

    /// A network fault on one endpoint, as 'NAME=FAULT' (see
    /// docs/faults.md).
    ///
    /// NAME is the endpoint's label or its position from 0, e.g. "slow=latency
    /// 200ms jitter 20ms" or "1=status 503 prob 10% after 10s for 5s"
    /// (repeatable).
    #[arg(long = "fault", value_name = "NAME=FAULT", help_heading = "Faults")]
    pub faults: Vec<String>,

    /// Single-request mode: send this method repeatedly, no stream.
    ///
    /// Every endpoint gets the same request again and again; no request
    /// stream is read.
    #[arg(short = 'm', long, help_heading = "Requests")]
    pub method: Option<String>,

    /// Single-request mode: send this body (or @FILE) repeatedly; the
    /// method defaults to POST.
    #[arg(short = 'd', long, help_heading = "Requests")]
    pub body: Option<String>,

    /// Input format: lines, jsonl, har, curl, vegeta, pcap or run.
    ///
    /// `lines` is one body per line (the default), `run` a saved run. Without
    /// it, a --input-file's format is detected from its name and first bytes;
    /// stdin is read as lines.
    #[arg(long = "input", value_name = "FORMAT", help_heading = "Requests")]
    pub input_format: Option<String>,

    /// Read requests from this file instead of stdin (`-` is stdin).
    #[arg(long, value_name = "PATH", help_heading = "Requests")]
    pub input_file: Option<PathBuf>,

    /// What counts as the same answer: auto, bytes, json, status or none.
    ///
    /// `auto` compares bytes, then JSON structure; `none` compares nothing.
    #[arg(
        long,
        default_value = "auto",
        value_name = "MODE",
        help_heading = "Comparison"
    )]
    pub compare: String,

    /// Leave this JSON path out of the comparison (repeatable), with wildcards.
    ///
    /// `$.result.timestamp`, `$..blockHash`, `$.result[*].nonce`.
    #[arg(long = "ignore", value_name = "PATH", help_heading = "Comparison")]
    pub ignore: Vec<String>,

    /// Later endpoints may add object fields the first one lacks.
    #[arg(long, help_heading = "Comparison", hide_short_help = true)]
    pub subset: bool,

    /// Compare the array at this path as a multiset: order does not count
    /// (repeatable).
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub unordered: Vec<String>,

    /// Match the elements of the array at PATH by their FIELD instead of
    /// by position (repeatable): `$.result.logs=logIndex`.
    #[arg(
        long,
        value_name = "PATH=FIELD",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub array_key: Vec<String>,

    /// Numbers at PATH may differ by VALUE (absolute) or VALUE% (relative)
    /// (repeatable): `$.result.gasPrice=5%`.
    #[arg(
        long,
        value_name = "PATH=VALUE",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub tolerance: Vec<String>,

    /// `0xAB` and `0xab` are equal: hex strings compared without case.
    #[arg(long, help_heading = "Comparison", hide_short_help = true)]
    pub ignore_hex_case: bool,

    /// Comparison rules from a TOML file, with sections per JSON-RPC method
    /// or per HTTP method and path (see docs/comparison.md, "Rules file").
    #[arg(long, value_name = "FILE", help_heading = "Comparison")]
    pub rules: Option<PathBuf>,

    /// JSON-RPC: a different `error.message` does not count when the
    /// `error.code`s match.
    #[arg(long, help_heading = "Comparison", hide_short_help = true)]
    pub ignore_error_message: bool,

    /// Do not treat JSON-RPC requests specially (no error classes, no
    /// batches matched by id, no result-vs-error kind).
    #[arg(long, help_heading = "Comparison", hide_short_help = true)]
    pub no_jsonrpc: bool,

    /// Compare a REST answer's HTTP status with a gRPC answer's code
    /// strictly (only 200 and OK agree), not by gRPC's HTTP mapping (404 is
    /// NOT_FOUND, 400 INVALID_ARGUMENT, 503 UNAVAILABLE, ...).
    #[arg(long, help_heading = "Comparison", hide_short_help = true)]
    pub no_status_mapping: bool,

    /// Compare this response header too (repeatable); other headers never
    /// count.
    #[arg(
        long,
        value_name = "NAME",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub compare_header: Vec<String>,

    /// Noise cancellation: send every request twice to the reference (or,
    /// with a label, treat that endpoint as a second copy of the
    /// reference); differences the two reference answers also show are
    /// noise, not mismatches.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, default_missing_value = "", help_heading = "Comparison", hide_short_help = true)]
    pub noise: Option<String>,

    /// Write every mismatched request as a JSON line to this file.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub mismatches: Option<PathBuf>,

    /// Most lines written to --mismatches.
    #[arg(
        long,
        default_value_t = 10_000,
        value_name = "N",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub mismatch_limit: u64,

    /// gRPC: compile the schema from this .proto file (repeatable), in
    /// versus itself (no protoc needed). Without it, the schema comes
    /// from each gRPC endpoint's reflection service (v1, then v1alpha).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "gRPC",
        hide_short_help = true
    )]
    pub proto: Vec<PathBuf>,

    /// gRPC: a folder that imports in --proto files are relative to
    /// (repeatable; each file's own folder is searched too).
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "gRPC",
        hide_short_help = true
    )]
    pub proto_path: Vec<PathBuf>,

    /// gRPC: how answers are written as JSON for comparison, a
    /// comma-separated list: proto-names (field names as in the .proto,
    /// not lowerCamelCase), int64-numbers (64-bit integers as numbers,
    /// not strings), defaults (fields at their default value written
    /// out), enum-numbers; rest is the first three, to line gRPC answers
    /// up with a REST API's.
    #[arg(
        long,
        value_name = "OPTIONS",
        help_heading = "gRPC",
        hide_short_help = true
    )]
    pub grpc_json: Option<String>,

    /// Speak HTTP/1.1 only (no h2 via ALPN on https://).
    #[arg(
        long,
        conflicts_with = "http2",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub http1: bool,

    /// The I/O driver of plain-TCP HTTP/1.1 connections: uring (a ring per
    /// core with DEFER_TASKRUN; an error where io_uring is unavailable),
    /// epoll (tokio's reactor) or auto (uring where this process can have
    /// it, else epoll). The report says which ran.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        env = "VERSUS_IO",
        value_name = "DRIVER",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub io: IoMode,

    /// Speak HTTP/2 only: ALPN h2 on https://, prior knowledge (h2c) on
    /// http://.
    #[arg(long, help_heading = "Transport", hide_short_help = true)]
    pub http2: bool,

    /// Do not verify TLS certificates.
    #[arg(short = 'k', long, help_heading = "Transport")]
    pub insecure: bool,

    /// Trust the certificates in this PEM file too.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub cacert: Option<PathBuf>,

    /// Mutual TLS: show this client certificate (PEM, the chain with the
    /// client's own first) to every TLS endpoint that asks for one.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub cert: Option<PathBuf>,

    /// The private key of --cert (PEM); without it, the key is read from
    /// --cert's file.
    #[arg(
        long,
        value_name = "FILE",
        requires = "cert",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub key: Option<PathBuf>,

    /// A client certificate for one endpoint, as 'NAME=FILE' where NAME is
    /// the endpoint's label or its position from 0, in place of --cert
    /// there (repeatable).
    #[arg(
        long = "endpoint-cert",
        value_name = "NAME=FILE",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub endpoint_certs: Vec<String>,

    /// The private key of one endpoint's --endpoint-cert, as 'NAME=FILE'
    /// (repeatable).
    #[arg(
        long = "endpoint-key",
        value_name = "NAME=FILE",
        help_heading = "Transport",
        hide_short_help = true
    )]
    pub endpoint_keys: Vec<String>,

    /// Open a new connection for every request; its connect time is then
    /// part of the request's latency.
    #[arg(long, help_heading = "Transport", hide_short_help = true)]
    pub no_keepalive: bool,

    /// Most HTTP/1.1 connections open to each endpoint at once (all cores
    /// together, at least one per core); a request that finds none free
    /// waits for one (in the open model, the wait is in its latency).
    /// Default: no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Transport", hide_short_help = true)]
    pub max_connections: Option<u64>,

    /// Longest input line, in bytes (K, M, G suffixes: 16M). Longer lines
    /// are skipped and reported.
    #[arg(long, default_value = "16M", value_parser = crate::model::parse_size, value_name = "SIZE", help_heading = "Requests", hide_short_help = true)]
    pub max_line: u64,

    /// Largest response body accepted; larger ones fail as "body too large".
    #[arg(long, default_value = "64M", value_parser = crate::model::parse_size, value_name = "SIZE", help_heading = "Transport", hide_short_help = true)]
    pub max_body: u64,

    /// Stop at the first malformed input record instead of skipping it.
    #[arg(long, help_heading = "Requests", hide_short_help = true)]
    pub strict: bool,

    /// Exit 0 even when an endpoint failed every request (by default such
    /// a run exits 4: its figures are errors, not a benchmark).
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub allow_failures: bool,

    /// Show secrets (API keys in URLs, credential headers) in reports
    /// instead of masking them.
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub show_secrets: bool,

    /// After the run is stopped, wait this long for requests in flight
    /// and for the differing answers waiting to be judged (those left
    /// are counted as not judged).
    #[arg(long, default_value = "1s", value_parser = parse_duration, help_heading = "Load", hide_short_help = true)]
    pub drain: Duration,

    /// Run shard I of N (0 <= I < N): every Nth record of the request
    /// stream (or flow instance) from the Ith, and the Nth part of --rate,
    /// -c and --stop-after N. N shards together send what one run would;
    /// `versus merge` joins their saved runs.
    #[arg(
        long,
        value_name = "I/N",
        help_heading = "Across machines",
        hide_short_help = true
    )]
    pub shard: Option<String>,

    /// Start sending at this time (RFC 3339 in UTC, like
    /// 2030-01-01T12:00:00Z), after the connections are open, so that
    /// shards start together; a time already past starts at once and is
    /// recorded as late.
    #[arg(
        long,
        value_name = "TIME",
        help_heading = "Across machines",
        hide_short_help = true
    )]
    pub start_at: Option<String>,

    /// Cores to use (default: all).
    #[arg(long, help_heading = "Load", hide_short_help = true)]
    pub threads: Option<usize>,

    /// How far (in requests) the fastest endpoint may run ahead of the
    /// slowest on each core; bounds the requests and answers held open
    /// per core (not those waiting to be judged: see --judge-memory).
    #[arg(
        long,
        default_value_t = 1024,
        value_name = "N",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub lead: usize,

    /// Most memory the differing answers waiting to be judged may hold
    /// (K, M, G suffixes); past it a timing core judges the request
    /// itself, and the report counts it.
    #[arg(long, default_value = "256M", value_parser = crate::model::parse_size, value_name = "SIZE", help_heading = "Comparison", hide_short_help = true)]
    pub judge_memory: u64,

    /// Threads that judge answers that differ, off the timing cores
    /// (default: the cores --threads leaves free, at least 1).
    #[arg(
        long,
        value_name = "N",
        help_heading = "Comparison",
        hide_short_help = true
    )]
    pub judges: Option<usize>,

    /// Save the run to FILE as it goes (JSON Lines, for `versus report`).
    ///
    /// Flushed every interval; read it with `versus report`, `merge` or
    /// `compare`.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        help_heading = "Output"
    )]
    pub output: Option<PathBuf>,

    /// Which request lines --output keeps: requests (every one, to replay
    /// the whole run), mismatches (those that mismatched or met an error:
    /// a long run's file stays small) or none (the statistics alone).
    #[arg(
        long,
        value_enum,
        default_value = "mismatches",
        value_name = "LINES",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub record: Record,

    /// --record mismatches: most request lines kept; the requests past it
    /// are counted, not kept.
    #[arg(
        long,
        default_value_t = 1_000_000,
        value_name = "N",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub record_limit: u64,

    /// Stream each interval's figures while the run goes, to KIND=URL
    /// (repeatable). KIND: prometheus (remote write, like
    /// prometheus=http://127.0.0.1:9090/api/v1/write) or otlp
    /// (OTLP/HTTP metrics, like otlp=http://127.0.0.1:4318/v1/metrics);
    /// docs/metrics.md.
    #[arg(
        long = "out",
        value_name = "KIND=URL",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub out: Vec<String>,

    /// The run's id, kept in the saved run's header and named in --out's
    /// series (label run_id); default a random id, said in the report.
    #[arg(
        long,
        value_name = "ID",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub run_id: Option<String>,

    /// Format of the report on stdout: text, json, markdown, csv or vegeta
    /// (vegeta's text report, per endpoint).
    #[arg(
        long,
        default_value = "text",
        value_name = "FORMAT",
        help_heading = "Output"
    )]
    pub format: String,

    /// Also write a self-contained HTML report (charts, mismatches) to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,

    /// Check a condition at the end, such as 'p99 < 200ms' (exit 3 if it
    /// fails; repeatable).
    ///
    /// Others: 'errors < 1%', 'mismatches == 0', 'rps > 500', 'LABEL: p95 <=
    /// 50ms' (one endpoint's).
    #[arg(long = "threshold", value_name = "EXPR", help_heading = "Output")]
    pub thresholds: Vec<String>,

    /// Write the verdicts as JUnit XML to FILE, for CI: each threshold,
    /// each endpoint (failed when it failed every request) and each flow
    /// step at each endpoint is a test case.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub junit: Option<PathBuf>,

    /// Full-screen live dashboard (q ends the run, p pauses).
    ///
    /// It shows per endpoint rates, latency percentiles, errors and mismatches
    /// as the run goes. Keys: q ends the run and reports, p pauses and resumes,
    /// s shows the latest mismatch.
    #[arg(short = 'i', long, conflicts_with = "quiet", help_heading = "Output")]
    pub interactive: bool,

    /// No progress line on stderr (it is shown only when stderr is a
    /// terminal).
    #[arg(short = 'q', long, help_heading = "Output")]
    pub quiet: bool,
}

/// Parse a duration such as `30s`, `500ms`, `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 30s, 500ms, 2m)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
