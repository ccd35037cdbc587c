//! Scenario files (`versus run FILE`): named sequences of dependent HTTP
//! calls in TOML, turned into [`Flow`]s before the run. A file has
//! endpoints, constant variables, data rows (one per instance), and one or
//! more scenarios of steps; a step's method, path, query, headers and body
//! are templates (`template.rs`), it takes values from its answer
//! (`extract.rs`) and checks it, and an endpoint may have its own version
//! of a step. Everything is checked when the file is read: a template
//! that does not parse, a variable nothing defines, a JSON path that is
//! not valid, a step name used twice, a data file without a column that a
//! step uses; each error names the file and line and says how to fix it.
//! The format is documented in docs/scenarios.md. The same templates make
//! a stream's records into an endpoint's own requests (`line.rs`,
//! `--template`).

mod data;
mod extract;
mod line;
mod template;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use self::data::{Data, Order};
use self::extract::{Check, Checks, ExtractFrom, JsonPath, Takes};
pub use self::line::LineTemplate;
use self::template::{Escape, Template};
use crate::flow::paginate::{NextPage, Pages, Paging};
use crate::flow::{Call, Context, Flow, Mix, StepError};

/// Built-in variables every template can read.
const BUILTINS: [&str; 2] = ["instance", "endpoint"];

/// A scenario file, read and checked.
pub struct Suite {
    /// The endpoints the file names, as `NAME=URL`.
    pub endpoints: Vec<String>,
    /// Headers the file gives an endpoint, as `NAME=Name: value`.
    pub endpoint_headers: Vec<String>,
    /// Network faults the file gives an endpoint, as `NAME=FAULT`.
    pub faults: Vec<String>,
    /// The scenarios, in file order.
    pub scenarios: Vec<Scenario>,
    /// Response headers some step takes a value from (the transport must
    /// keep them).
    pub headers_taken: Vec<String>,
    /// The file's endpoints marked `optional = true`, by name: a
    /// pre-flight failure skips them instead of stopping the run.
    pub optional: Vec<String>,
    /// What the run notes in its report (optional endpoints skipped).
    pub notes: Vec<String>,
    /// gRPC methods steps call, by endpoint position: resolved in each
    /// endpoint's schema before the run.
    pub grpc_methods: Vec<(usize, String)>,
    /// `stages = "..."`: the load over time, as `--stages` writes it
    /// (checked with the run's other options).
    pub stages: Option<String>,
}

/// One named scenario.
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// Its weight in a mix.
    pub weight: u32,
    /// Its steps' names.
    pub steps: Vec<String>,
    /// Per step name, the step's own comparison rules (`rules = ...`).
    pub rules: Vec<(String, toml::Table)>,
    flow: Flow,
}

/// Why a scenario file cannot be run: the place and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

// ---- the file as written ------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    endpoint: Vec<EndpointDoc>,
    #[serde(default)]
    vars: BTreeMap<String, toml::Value>,
    data: Option<DataDoc>,
    #[serde(default)]
    scenario: Vec<ScenarioDoc>,
    /// One scenario without a `[[scenario]]` table: its steps.
    #[serde(default)]
    step: Vec<StepDoc>,
    /// The load over time, as `--stages` writes it.
    stages: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointDoc {
    name: Spanned<String>,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Skipped, with a note, when the pre-flight check cannot reach it.
    #[serde(default)]
    optional: bool,
    /// Network faults (`--fault`), each in the command line's words.
    #[serde(default)]
    faults: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataDoc {
    file: Option<Spanned<String>>,
    #[serde(default)]
    rows: Vec<toml::Table>,
    #[serde(default)]
    order: Order,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioDoc {
    name: Spanned<String>,
    #[serde(default = "one")]
    weight: u32,
    #[serde(default)]
    step: Vec<StepDoc>,
}

fn one() -> u32 {
    1
}

/// What a step sends; an endpoint's override replaces the fields it gives.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallDoc {
    method: Option<String>,
    path: Option<String>,
    /// A gRPC method (`package.Service/Method`): at a gRPC endpoint the
    /// step calls it with the body (`json`) as its request message.
    grpc: Option<String>,
    query: Option<BTreeMap<String, String>>,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
    json: Option<toml::Value>,
    paginate: Option<PaginateDoc>,
}

/// `paginate = { items = "$.data", key = "id", next = "link" }`: how a
/// step follows pages (see [`crate::flow::paginate`]); an endpoint's own
/// replaces the step's but for the key, which is the same everywhere.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PaginateDoc {
    items: Option<String>,
    key: Option<String>,
    /// `link` (the Link header) or a JSON path to the next page's URL.
    next: Option<String>,
    cursor: Option<String>,
    param: Option<String>,
    more: Option<String>,
    token: Option<String>,
    field: Option<String>,
    offset: Option<String>,
    limit: Option<u64>,
    page: Option<String>,
    size: Option<u64>,
    max_pages: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepDoc {
    name: Spanned<String>,
    #[serde(flatten)]
    call: CallDoc,
    #[serde(default, with = "humantime_serde_opt")]
    think: Option<Duration>,
    #[serde(default)]
    extract: BTreeMap<String, String>,
    #[serde(default)]
    check: BTreeMap<String, toml::Value>,
    rules: Option<toml::Table>,
    #[serde(default)]
    endpoint: BTreeMap<String, CallDoc>,
}

/// The keys of a `[[step]]` table, its call's among them.
const STEP_KEYS: [&str; 14] = [
    "name", "method", "path", "grpc", "query", "headers", "body", "json", "paginate", "think",
    "extract", "check", "rules", "endpoint",
];

/// `think = "100ms"` as a humantime duration.
mod humantime_serde_opt {
    use serde::Deserialize;
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        s.map(|s| {
            humantime::parse_duration(&s).map_err(|_| {
                serde::de::Error::custom(format!(
                    "think = {s:?} is not a duration (examples: \"100ms\", \"2s\", \"1m 30s\")"
                ))
            })
        })
        .transpose()
    }
}

// ---- compiled ----------------------------------------------------------

/// A step's call at one endpoint, compiled.
struct CallPlan {
    method: http::Method,
    path: Template,
    headers: Vec<(http::HeaderName, Template)>,
    body: Option<Template>,
    json: bool,
    /// A gRPC call: its method (`package.Service/Method`).
    grpc: Option<String>,
}

/// Everything a step's code needs at run time, shared by its instances.
struct StepPlan {
    /// The step's place in its scenario (with the instance, the seed of
    /// its random values).
    index: u64,
    /// Per endpoint (by position), the call.
    calls: Vec<Arc<CallPlan>>,
    think: Option<Duration>,
    constants: Arc<BTreeMap<String, String>>,
    data: Arc<Data>,
    labels: Arc<Vec<String>>,
}

impl Suite {
    /// Read and check the scenario file at `path`. `endpoints`, when not
    /// empty, replaces the file's (`NAME=URL` or URL, as on the command
    /// line): per-endpoint step versions then refer to these names.
    ///
    /// # Errors
    /// Anything that keeps the file from running, naming the file, the
    /// line and the fix.
    pub fn load(path: &Path, endpoints: &[String]) -> Result<Suite, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        Suite::parse(&text, path, endpoints)
    }

    /// [`Suite::load`] without the file's endpoints named in `skip` (and
    /// their own versions of steps), noting `notes` for the report.
    ///
    /// # Errors
    /// As [`Suite::load`], and when no endpoint is left.
    pub fn load_without(
        path: &Path,
        skip: &[String],
        notes: Vec<String>,
    ) -> Result<Suite, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        let mut suite = Suite::parse_without(&text, path, &[], skip, true)?;
        suite.notes = notes;
        Ok(suite)
    }

    /// [`Suite::load`] of the text of a file at `path` (whose folder data
    /// file names are relative to).
    ///
    /// # Errors
    /// As [`Suite::load`].
    pub fn parse(text: &str, path: &Path, endpoints: &[String]) -> Result<Suite, ScenarioError> {
        Suite::parse_without(text, path, endpoints, &[], true)
    }

    /// [`Suite::load`] for listing the file's scenarios: a file with no
    /// endpoints (they are to be named on the command line) lists too,
    /// its steps' own versions for named endpoints unchecked.
    ///
    /// # Errors
    /// As [`Suite::load`], but for a missing endpoint.
    pub fn load_to_list(path: &Path, endpoints: &[String]) -> Result<Suite, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        Suite::parse_without(&text, path, endpoints, &[], false)
    }

    /// [`Suite::parse`] without the file's endpoints named in `skip`: the
    /// file read, then its endpoints (at least one when `need_endpoints`),
    /// values and scenarios in turn, each checked as it is compiled.
    fn parse_without(
        text: &str,
        path: &Path,
        endpoints: &[String],
        skip: &[String],
        need_endpoints: bool,
    ) -> Result<Suite, ScenarioError> {
        let file = File {
            text,
            shown: path.display().to_string(),
        };
        let doc = file.doc()?;
        // Endpoints: the command line's, else the file's.
        let run = if endpoints.is_empty() {
            file.endpoints(&doc.endpoint, skip, need_endpoints)?
        } else {
            Endpoints::given(endpoints)
        };
        let constants = file.constants(&doc.vars)?;
        let data = file.data(doc.data.as_ref(), path)?;
        let docs = file.scenario_docs(&doc, path)?;
        let mut compiler = Compiler {
            file: &file,
            names: &run.names,
            skip,
            constants: Arc::new(constants),
            data: Arc::new(data),
            labels: Arc::new(run.names.clone()),
            headers_taken: Vec::new(),
            grpc_methods: Vec::new(),
        };
        let mut scenarios = Vec::new();
        for given in &docs {
            let scenario = compiler.scenario(&scenarios, given)?;
            scenarios.push(scenario);
        }
        let Compiler {
            headers_taken,
            grpc_methods,
            ..
        } = compiler;
        if run.names.is_empty() && need_endpoints {
            return Err(ScenarioError(format!(
                "{}: no endpoint is left to run",
                file.shown
            )));
        }
        let optional = if endpoints.is_empty() {
            doc.endpoint
                .iter()
                .filter(|e| e.optional)
                .map(|e| e.name.get_ref().clone())
                .collect()
        } else {
            Vec::new()
        };
        Ok(Suite {
            endpoints: run.specs,
            endpoint_headers: run.headers,
            faults: run.faults,
            scenarios,
            headers_taken,
            optional,
            notes: Vec::new(),
            grpc_methods,
            stages: doc.stages.clone(),
        })
    }

    /// Keep only the scenarios whose name matches one of `patterns` (a
    /// glob with `*`, or else a part of the name); all when there are
    /// none.
    ///
    /// # Errors
    /// When no scenario matches.
    pub fn select(&mut self, patterns: &[String]) -> Result<(), ScenarioError> {
        if patterns.is_empty() {
            return Ok(());
        }
        let all: Vec<String> = self.scenarios.iter().map(|s| s.name.clone()).collect();
        self.scenarios
            .retain(|s| patterns.iter().any(|p| name_matches(p, &s.name)));
        if self.scenarios.is_empty() {
            return Err(ScenarioError(format!(
                "--match {}: no scenario matches (there are {})",
                patterns.join(" --match "),
                all.join(", ")
            )));
        }
        Ok(())
    }

    /// The list `--list` prints: each scenario with its weight and steps.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for s in &self.scenarios {
            out.push_str(&format!(
                "{}  (weight {})  {}\n",
                s.name,
                s.weight,
                s.steps.join(" -> ")
            ));
        }
        out
    }

    /// The scenarios as flows mixed by weight.
    ///
    /// # Errors
    /// Weights whose cycle is too long.
    pub fn mix(self) -> Result<Mix, ScenarioError> {
        Mix::new(
            self.scenarios
                .into_iter()
                .map(|s| (s.flow, s.weight))
                .collect(),
        )
        .map_err(ScenarioError)
    }
}

/// A scenario file's text, and its name as errors show it.
struct File<'a> {
    text: &'a str,
    shown: String,
}

/// The run's endpoints as a scenario file gives them (or the command
/// line overrides them).
#[derive(Default)]
struct Endpoints {
    /// Their names, which per-endpoint step versions refer to.
    names: Vec<String>,
    /// As `NAME=URL`.
    specs: Vec<String>,
    /// Their headers, as `NAME=Name: value`.
    headers: Vec<String>,
    /// Their faults, as `NAME=FAULT`.
    faults: Vec<String>,
}

impl Endpoints {
    /// The command line's endpoints (`NAME=URL` or URL, named by their
    /// position then), without headers or faults of the file's.
    fn given(endpoints: &[String]) -> Endpoints {
        let names = endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| match e.split_once('=') {
                Some((n, _)) if !n.contains("://") => n.to_string(),
                _ => i.to_string(),
            })
            .collect();
        Endpoints {
            names,
            specs: endpoints.to_vec(),
            headers: Vec::new(),
            faults: Vec::new(),
        }
    }
}

impl File<'_> {
    /// Where `span` is, as errors name it: `FILE:LINE`.
    fn at(&self, span: std::ops::Range<usize>) -> String {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        format!("{}:{line}", self.shown)
    }

    /// Where the table holding `offset` (a step's name) uses `{{ var }}`:
    /// the first use between the table's `[[` header and the next one; the
    /// place of `offset` itself when none is found (a use in an endpoint's
    /// own version of the step, under a header of its own).
    fn use_of(&self, offset: usize, var: &str) -> String {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind("[[").unwrap_or(0);
        let end = self.text[offset..]
            .find("[[")
            .map_or(self.text.len(), |i| offset + i);
        let table = &self.text[start..end];
        let used = table.match_indices("{{").find(|(i, _)| {
            let rest = table[i + 2..].trim_start();
            rest.strip_prefix(var)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        match used {
            Some((i, _)) => self.at(start + i..start + i),
            None => self.at(offset..offset),
        }
    }

    /// The file as written; a syntax error names its place. A key no table
    /// has is named at its own line (the parser names the table's) with
    /// the nearest key it may have meant.
    fn doc(&self) -> Result<FileDoc, ScenarioError> {
        toml::from_str(self.text).map_err(|e| {
            let message = e.message().trim_end();
            if let Some(unknown) = self.unknown_key(message, e.span()) {
                return ScenarioError(unknown);
            }
            let place = e.span().map_or(self.shown.clone(), |s| self.at(s));
            ScenarioError(format!("{place}: {message}"))
        })
    }

    /// `message` as the parser words an unknown key (``unknown field
    /// `methd`, expected one of `a`, `b` ``) in the table at `span`: the
    /// key's own place and the nearest known key.
    fn unknown_key(&self, message: &str, span: Option<std::ops::Range<usize>>) -> Option<String> {
        let rest = message.strip_prefix("unknown field `")?;
        let (key, expected) = rest.split_once('`')?;
        // A step's own keys and its call's, which serde flattens into it
        // and then names no others.
        let mut known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        if known.is_empty() {
            known = STEP_KEYS.to_vec();
        }
        let start = span.map_or(0, |s| s.start).min(self.text.len());
        let table = &self.text[start..];
        let at = table.match_indices(key).find_map(|(i, _)| {
            let before = table[..i].trim_end_matches([' ', '\t', '"']);
            let after = table[i + key.len()..].trim_start_matches([' ', '\t', '"']);
            let starts = before.is_empty() || before.ends_with(['\n', '{', ',']);
            (starts && after.starts_with('=')).then_some(start + i)
        });
        let place = self.at(at.unwrap_or(start)..at.unwrap_or(start));
        let nearest = known
            .iter()
            .map(|k| (crate::display::edits(key, k), *k))
            .min()
            .filter(|(d, _)| *d <= 2)
            .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"));
        Some(format!(
            "{place}: unknown key `{key}`{nearest} (keys here: {})",
            known.join(", ")
        ))
    }

    /// The file's `[[endpoint]]` tables but those named in `skip`: at
    /// least one table, and no name twice.
    fn endpoints(
        &self,
        docs: &[EndpointDoc],
        skip: &[String],
        need: bool,
    ) -> Result<Endpoints, ScenarioError> {
        if docs.is_empty() && !need {
            return Ok(Endpoints::default());
        }
        if docs.is_empty() {
            return Err(ScenarioError(format!(
                "{}: no endpoint: add [[endpoint]] tables (name, url) or name NAME=URL on the command line",
                self.shown
            )));
        }
        let mut run = Endpoints::default();
        for e in docs {
            let name = e.name.get_ref();
            if skip.contains(name) {
                continue;
            }
            if run.names.contains(name) {
                return Err(ScenarioError(format!(
                    "{}: endpoint {name:?} is named twice",
                    self.at(e.name.span())
                )));
            }
            run.names.push(name.clone());
            run.specs.push(format!("{name}={}", e.url));
            for (k, v) in &e.headers {
                run.headers.push(format!("{name}={k}: {v}"));
            }
            run.faults
                .extend(e.faults.iter().map(|f| format!("{name}={f}")));
        }
        Ok(run)
    }

    /// `[vars]`: constants every template can read, each a string, number
    /// or boolean.
    fn constants(
        &self,
        vars: &BTreeMap<String, toml::Value>,
    ) -> Result<BTreeMap<String, String>, ScenarioError> {
        vars.iter()
            .map(|(k, v)| {
                data::scalar(v).map(|v| (k.clone(), v)).ok_or_else(|| {
                    ScenarioError(format!(
                        "{}: [vars] {k}: a string, number or boolean",
                        self.shown
                    ))
                })
            })
            .collect()
    }

    /// `[data]`: the rows instances take values from, from a file
    /// (relative to the folder of the scenario file at `path`) or inline;
    /// none without the table.
    fn data(&self, doc: Option<&DataDoc>, path: &Path) -> Result<Data, ScenarioError> {
        Ok(match doc {
            None => Data::default(),
            Some(d) => match &d.file {
                Some(file) => {
                    let p = resolve(path, file.get_ref());
                    Data::file(&p, d.order).map_err(|e| {
                        ScenarioError(format!("{}: [data] {e}", self.at(file.span())))
                    })?
                }
                None => Data::inline(&d.rows, d.order)
                    .map_err(|e| ScenarioError(format!("{}: [data] {e}", self.shown)))?,
            },
        })
    }

    /// Each scenario's name, weight and steps: the `[[scenario]]` tables,
    /// or else one scenario named after the file (at `path`) of the
    /// top-level `[[step]]` tables; not both, and not neither.
    fn scenario_docs<'d>(
        &self,
        doc: &'d FileDoc,
        path: &Path,
    ) -> Result<Vec<ScenarioSteps<'d>>, ScenarioError> {
        if doc.scenario.is_empty() {
            if doc.step.is_empty() {
                return Err(ScenarioError(format!(
                    "{}: no steps: add [[step]] tables, or [[scenario]] tables with [[scenario.step]]",
                    self.shown
                )));
            }
            let stem = path
                .file_stem()
                .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
            return Ok(vec![ScenarioSteps {
                name: Spanned::new(0..0, stem),
                weight: 1,
                steps: &doc.step,
            }]);
        }
        if !doc.step.is_empty() {
            return Err(ScenarioError(format!(
                "{}: top-level [[step]] tables and [[scenario]] tables together: put the steps in a [[scenario]]",
                self.shown
            )));
        }
        Ok(doc
            .scenario
            .iter()
            .map(|s| ScenarioSteps {
                name: s.name.clone(),
                weight: s.weight,
                steps: &s.step,
            })
            .collect())
    }
}

/// A scenario as the file gives it: its name (and where it is), its
/// weight and its steps.
struct ScenarioSteps<'d> {
    name: Spanned<String>,
    weight: u32,
    steps: &'d [StepDoc],
}

/// What compiling a file's scenarios shares: the file (for the places
/// errors name), the run's endpoints and those skipped, the values
/// templates read, and what the steps need of the run.
struct Compiler<'a> {
    file: &'a File<'a>,
    /// The run's endpoints' names, in order.
    names: &'a [String],
    /// The file's endpoints left out of the run.
    skip: &'a [String],
    constants: Arc<BTreeMap<String, String>>,
    data: Arc<Data>,
    labels: Arc<Vec<String>>,
    /// Response headers some step takes a value from.
    headers_taken: Vec<String>,
    /// gRPC methods steps call, by endpoint position.
    grpc_methods: Vec<(usize, String)>,
}

/// A step's call at every endpoint, in endpoint order, and each
/// endpoint's pagination as written.
struct Calls {
    plans: Vec<Arc<CallPlan>>,
    paged: Vec<Option<PaginateDoc>>,
}

/// A step compiled: its call per endpoint, what it takes from the answer,
/// how it pages and what it checks.
struct CompiledStep {
    calls: Vec<Arc<CallPlan>>,
    takes: Takes,
    paging: Option<Paging>,
    checks: Checks,
}

impl Compiler<'_> {
    /// One scenario, checked (a name no scenario in `earlier` has, some
    /// steps, a weight of at least 1), its steps compiled in order into a
    /// flow: each step may use what the steps before it take.
    fn scenario(
        &mut self,
        earlier: &[Scenario],
        doc: &ScenarioSteps<'_>,
    ) -> Result<Scenario, ScenarioError> {
        let (name, weight, steps) = (&doc.name, doc.weight, doc.steps);
        if earlier.iter().any(|s| &s.name == name.get_ref()) {
            return Err(ScenarioError(format!(
                "{}: scenario {:?} is named twice",
                self.file.at(name.span()),
                name.get_ref()
            )));
        }
        if steps.is_empty() {
            return Err(ScenarioError(format!(
                "{}: scenario {:?} has no [[scenario.step]]",
                self.file.at(name.span()),
                name.get_ref()
            )));
        }
        if weight == 0 {
            return Err(ScenarioError(format!(
                "{}: scenario {:?}: a weight must be at least 1",
                self.file.at(name.span()),
                name.get_ref()
            )));
        }
        let mut flow = Flow::new(name.get_ref());
        let mut known: HashSet<String> = self.constants.keys().cloned().collect();
        known.extend(self.data.columns().iter().cloned());
        known.extend(BUILTINS.iter().map(|s| s.to_string()));
        let mut step_names: Vec<String> = Vec::new();
        let mut rules = Vec::new();
        for step in steps {
            let sname = step.name.get_ref().clone();
            let CompiledStep {
                calls,
                takes,
                paging,
                checks,
            } = self.step(step, &known, &step_names)?;
            if let Some(r) = &step.rules {
                rules.push((sname.clone(), r.clone()));
            }
            known.extend(takes.0.iter().map(|(v, _)| v.clone()));
            step_names.push(sname.clone());
            let plan = Arc::new(StepPlan {
                index: step_names.len() as u64 - 1,
                calls,
                think: step.think,
                constants: self.constants.clone(),
                data: self.data.clone(),
                labels: self.labels.clone(),
            });
            flow = flow
                .step(&sname, move |ctx| run_step(plan.clone(), ctx))
                .check(move |r| checks.apply(r))
                .take(move |r, vars| takes.apply(r, vars));
            if let Some(p) = paging {
                flow = flow.paginate(p);
            }
        }
        Ok(Scenario {
            name: name.get_ref().clone(),
            weight,
            steps: step_names,
            rules,
            flow,
        })
    }

    /// A step, compiled and checked: a name no step in `earlier` has,
    /// versions only for endpoints of the file, its calls (with the
    /// variables `known` before it), what it takes, how it pages and what
    /// it checks. Notes the response headers it takes.
    fn step(
        &mut self,
        step: &StepDoc,
        known: &HashSet<String>,
        earlier: &[String],
    ) -> Result<CompiledStep, ScenarioError> {
        let sname = step.name.get_ref().clone();
        let here = self.file.at(step.name.span());
        let fail = |m: String| ScenarioError(format!("{here}: step {sname:?}: {m}"));
        if earlier.contains(&sname) {
            return Err(fail(
                "this step name is used twice in the scenario; names must differ".into(),
            ));
        }
        for e in step.endpoint.keys() {
            // With no endpoints yet (a listing), the names cannot be checked.
            let known = self.names.is_empty() || self.names.contains(e) || self.skip.contains(e);
            if !known {
                return Err(fail(format!(
                    "[endpoint.{e}] names no endpoint of this run (they are {})",
                    self.names.join(", ")
                )));
            }
        }
        let Calls {
            plans: calls,
            paged,
        } = self.calls(step, known, &fail)?;
        let takes = Takes(
            step.extract
                .iter()
                .map(|(var, src)| {
                    ExtractFrom::parse(src)
                        .map(|s| (var.clone(), s))
                        .map_err(|e| fail(format!("extract {var}: {e}")))
                })
                .collect::<Result<_, _>>()?,
        );
        for (_, s) in &takes.0 {
            if let Some(h) = s.header() {
                if !self.headers_taken.iter().any(|k: &String| k == h) {
                    self.headers_taken.push(h.to_string());
                }
            }
        }
        let paging = paging(step.call.paginate.as_ref(), &paged).map_err(&fail)?;
        if paged
            .iter()
            .flatten()
            .any(|p| p.next.as_deref() == Some("link"))
            && !self.headers_taken.iter().any(|h| h == "link")
        {
            self.headers_taken.push("link".to_string());
        }
        let checks = parse_checks(&step.check).map_err(&fail)?;
        Ok(CompiledStep {
            calls,
            takes,
            paging,
            checks,
        })
    }

    /// The step's call at every endpoint (an endpoint's own version over
    /// the step's), compiled and checked against the variables `known`
    /// before it, and each endpoint's pagination. Notes the gRPC methods
    /// called.
    fn calls(
        &mut self,
        step: &StepDoc,
        known: &HashSet<String>,
        fail: &dyn Fn(String) -> ScenarioError,
    ) -> Result<Calls, ScenarioError> {
        let names = self.names;
        let mut calls = Vec::with_capacity(names.len());
        let mut paged = Vec::with_capacity(names.len());
        for (e, endpoint) in names.iter().enumerate() {
            let call = overlay(&step.call, step.endpoint.get(endpoint));
            paged.push(call.paginate.clone());
            let compiled = compile(&call).map_err(fail)?;
            if let Some(g) = &compiled.grpc {
                if !self.grpc_methods.iter().any(|(x, m)| *x == e && m == g) {
                    self.grpc_methods.push((e, g.clone()));
                }
            }
            for v in compiled.vars() {
                if !known.contains(v) {
                    // Named at the line that uses it, not the step's name.
                    let at = self.file.use_of(step.name.span().start, v);
                    let why = undefined(v, &self.data, names, endpoint);
                    return Err(ScenarioError(format!(
                        "{at}: step {:?}: {why}",
                        step.name.get_ref()
                    )));
                }
            }
            calls.push(Arc::new(compiled));
        }
        Ok(Calls {
            plans: calls,
            paged,
        })
    }
}

/// A path in the file, relative to the file's folder.
fn resolve(file: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    file.parent().unwrap_or(Path::new(".")).join(p)
}

fn name_matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return name.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

/// The message for a variable nothing defines.
fn undefined(v: &str, data: &Data, names: &[String], endpoint: &str) -> String {
    let columns = if data.columns().is_empty() {
        String::new()
    } else {
        format!("; the data has the columns {}", data.columns().join(", "))
    };
    let at = if names.len() > 1 {
        format!(" (at endpoint {endpoint})")
    } else {
        String::new()
    };
    format!(
        "{{{{ {v} }}}}{at} is not defined: no earlier step takes it (extract = {{ {v} = \"$.{v}\" }}), and it is not in [vars]{columns}"
    )
}

/// An endpoint's version of a call: its fields replace the step's.
fn overlay(base: &CallDoc, own: Option<&CallDoc>) -> CallDoc {
    let Some(own) = own else {
        return base.clone();
    };
    CallDoc {
        method: own.method.clone().or_else(|| base.method.clone()),
        // An endpoint's own path or gRPC method replaces either of the
        // step's.
        grpc: match (&own.grpc, &own.path) {
            (Some(g), _) => Some(g.clone()),
            (None, Some(_)) => None,
            (None, None) => base.grpc.clone(),
        },
        path: own.path.clone().or_else(|| base.path.clone()),
        query: own.query.clone().or_else(|| base.query.clone()),
        headers: own.headers.clone().or_else(|| base.headers.clone()),
        body: own.body.clone().or_else(|| base.body.clone()),
        json: own.json.clone().or_else(|| base.json.clone()),
        paginate: own.paginate.clone().or_else(|| base.paginate.clone()),
    }
}

/// A step's pagination at every endpoint (`docs`, in endpoint order),
/// when it pages: the same key everywhere, every endpoint with a way to
/// its next page.
fn paging(
    step: Option<&PaginateDoc>,
    docs: &[Option<PaginateDoc>],
) -> Result<Option<Paging>, String> {
    if docs.iter().all(Option::is_none) {
        return Ok(None);
    }
    let key = step.and_then(|p| p.key.clone());
    let mut keys = docs.iter().flatten().filter_map(|p| p.key.clone());
    let key = match key.or_else(|| keys.next()) {
        Some(k) => k,
        None => return Err("paginate: give the items' key (key = \"id\")".into()),
    };
    if let Some(other) = docs
        .iter()
        .flatten()
        .filter_map(|p| p.key.as_ref())
        .find(|k| **k != key)
    {
        return Err(format!(
            "paginate: key {other:?} differs from {key:?}: items are matched by one key at every endpoint"
        ));
    }
    let pages = docs
        .iter()
        .map(|p| match p {
            Some(p) => pages(p),
            None => Err("paginate: every endpoint of a paged step needs a way to its pages (give paginate at the step)".into()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Paging::per_endpoint(&key, pages)
        .map_err(|e| format!("paginate: {e}"))
        .map(Some)
}

/// One endpoint's pages from its `paginate` table.
fn pages(p: &PaginateDoc) -> Result<Pages, String> {
    let path =
        |what: &str, text: &str| JsonPath::parse(text).map_err(|e| format!("paginate {what}: {e}"));
    let styles = [
        p.next.is_some(),
        p.cursor.is_some(),
        p.token.is_some(),
        p.offset.is_some(),
        p.page.is_some(),
    ];
    let next = match (styles.iter().filter(|s| **s).count(), p) {
        (1, PaginateDoc { next: Some(n), .. }) if n == "link" => NextPage::Link,
        (1, PaginateDoc { next: Some(n), .. }) => NextPage::Url(path("next", n)?),
        (1, PaginateDoc { cursor: Some(c), .. }) => NextPage::Cursor {
            at: path("cursor", c)?,
            param: p.param.clone().ok_or("paginate: a cursor needs the query parameter that carries it (param = \"cursor\")")?,
            more: p.more.as_deref().map(|m| path("more", m)).transpose()?,
        },
        (1, PaginateDoc { token: Some(t), .. }) => NextPage::Token {
            at: path("token", t)?,
            field: p.field.clone().ok_or("paginate: a token needs the request body field that carries it (field = \"page_token\")")?,
        },
        (1, PaginateDoc { offset: Some(o), .. }) => NextPage::Offset {
            param: o.clone(),
            limit: p.limit.ok_or("paginate: offset needs the page size (limit = 100)")?,
        },
        (1, PaginateDoc { page: Some(n), .. }) => NextPage::Page {
            param: n.clone(),
            size: p.size.ok_or("paginate: page needs the page size (size = 100)")?,
        },
        _ => {
            return Err("paginate: give one way to the next page: next = \"link\" or a JSON path to its URL, cursor (with param), token (with field), offset (with limit) or page (with size)".into())
        }
    };
    let items = p
        .items
        .as_deref()
        .ok_or("paginate: give where the items are (items = \"$.data\")")?;
    let mut pages = Pages::new(items, next).map_err(|e| format!("paginate {e}"))?;
    if let Some(n) = p.max_pages {
        pages = pages.max_pages(n);
    }
    Ok(pages)
}

impl CallPlan {
    fn vars(&self) -> Vec<&str> {
        let mut v = self.path.vars();
        for (_, t) in &self.headers {
            v.extend(t.vars());
        }
        if let Some(b) = &self.body {
            v.extend(b.vars());
        }
        v
    }
}

/// Compile a step's call.
fn compile(call: &CallDoc) -> Result<CallPlan, String> {
    if call.body.is_some() && call.json.is_some() {
        return Err("give `body` or `json`, not both".into());
    }
    let has_body = call.body.is_some() || call.json.is_some();
    let (body, json) = match (&call.body, &call.json) {
        (Some(b), _) => (
            Some(Template::parse(b, Escape::None).map_err(|e| format!("body: {e}"))?),
            false,
        ),
        (None, Some(j)) => (Some(json_template(j)?), true),
        (None, None) => (None, false),
    };
    let mut headers = Vec::new();
    for (k, v) in call.headers.iter().flatten() {
        let name = http::HeaderName::try_from(k.as_str())
            .map_err(|_| format!("{k:?} is not a header name"))?;
        headers.push((
            name,
            Template::parse(v, Escape::None).map_err(|e| format!("header {k}: {e}"))?,
        ));
    }
    if let Some(g) = &call.grpc {
        if crate::grpc::split_method(g).is_none() || g.contains("{{") {
            return Err(format!(
                "grpc = {g:?}: name a method as package.Service/Method"
            ));
        }
        if call.method.is_some() || call.query.is_some() {
            return Err("a gRPC call (grpc = ...) takes no method or query".into());
        }
        let (service, method) = crate::grpc::split_method(g).unwrap_or_default();
        return Ok(CallPlan {
            method: http::Method::POST,
            path: Template::literal(&format!("/{service}/{method}")),
            headers,
            body,
            json,
            grpc: Some(format!("{service}/{method}")),
        });
    }
    let method = match &call.method {
        Some(m) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| format!("method {m:?} is not an HTTP method"))?,
        None if has_body => http::Method::POST,
        None => http::Method::GET,
    };
    let raw_path = call.path.as_deref().unwrap_or("/");
    let mut path = Template::parse(raw_path, Escape::None).map_err(|e| format!("path: {e}"))?;
    if let Some(q) = &call.query {
        for (i, (k, v)) in q.iter().enumerate() {
            let sep = if i == 0 && !raw_path.contains('?') {
                "?"
            } else {
                "&"
            };
            path.push(Template::literal(&format!(
                "{sep}{}=",
                urlencode_literal(k)
            )));
            // Query values are URL-encoded, holes as they are rendered.
            path.push(encoded(v).map_err(|e| format!("query {k}: {e}"))?);
        }
    }
    Ok(CallPlan {
        method,
        path,
        headers,
        body,
        json,
        grpc: None,
    })
}

/// A query value template whose holes are URL-encoded: `a {{x}}` becomes
/// `a%20` then urlencode(x).
fn encoded(v: &str) -> Result<Template, String> {
    let mut out = Template::literal("");
    let mut rest = v;
    while let Some(open) = rest.find("{{") {
        out.push(Template::literal(&urlencode_literal(&rest[..open])));
        let close = rest[open..]
            .find("}}")
            .ok_or_else(|| format!("`{{{{` without `}}}}` in {v:?}"))?;
        let inner = rest[open + 2..open + close].trim();
        out.push(Template::parse(
            &format!("{{{{ urlencode({inner}) }}}}"),
            Escape::None,
        )?);
        rest = &rest[open + close + 2..];
    }
    out.push(Template::literal(&urlencode_literal(rest)));
    Ok(out)
}

fn urlencode_literal(s: &str) -> String {
    Template::parse("{{ urlencode(x) }}", Escape::None)
        .map(|t| t.render(&|_| Some(s.to_string()), &mut fastrand::Rng::with_seed(0)))
        .unwrap_or_default()
}

/// A JSON body from a TOML value: strings are templates whose values are
/// written as JSON string content; everything else is literal JSON.
fn json_template(v: &toml::Value) -> Result<Template, String> {
    let mut t = Template::literal("");
    json_into(v, &mut t)?;
    Ok(t)
}

fn json_into(v: &toml::Value, t: &mut Template) -> Result<(), String> {
    match v {
        toml::Value::String(s) => {
            t.push(Template::literal("\""));
            // Literal text escaped now; holes escaped as they are rendered.
            let mut rest = s.as_str();
            while let Some(open) = rest.find("{{") {
                t.push(Template::literal(&json_escape(&rest[..open])));
                let close = rest[open..]
                    .find("}}")
                    .ok_or_else(|| format!("json: `{{{{` without `}}}}` in {s:?}"))?;
                t.push(
                    Template::parse(&rest[open..open + close + 2], Escape::JsonString)
                        .map_err(|e| format!("json: {e}"))?,
                );
                rest = &rest[open + close + 2..];
            }
            t.push(Template::literal(&json_escape(rest)));
            t.push(Template::literal("\""));
        }
        toml::Value::Array(items) => {
            t.push(Template::literal("["));
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    t.push(Template::literal(","));
                }
                json_into(item, t)?;
            }
            t.push(Template::literal("]"));
        }
        toml::Value::Table(map) => {
            t.push(Template::literal("{"));
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    t.push(Template::literal(","));
                }
                t.push(Template::literal(&format!(
                    "{}:",
                    serde_json::Value::String(k.clone())
                )));
                json_into(item, t)?;
            }
            t.push(Template::literal("}"));
        }
        toml::Value::Integer(n) => t.push(Template::literal(&n.to_string())),
        toml::Value::Float(f) => t.push(Template::literal(&f.to_string())),
        toml::Value::Boolean(b) => t.push(Template::literal(&b.to_string())),
        toml::Value::Datetime(d) => t.push(Template::literal(&format!("\"{d}\""))),
    }
    Ok(())
}

/// `s` as the content of a JSON string literal.
fn json_escape(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// The checks of `check = { status = 200, "$.a" = 1, "$.b" = { exists = true } }`.
fn parse_checks(table: &BTreeMap<String, toml::Value>) -> Result<Checks, String> {
    let mut checks = Vec::new();
    for (key, value) in table {
        if key == "status" {
            let codes = match value {
                toml::Value::Integer(n) => vec![*n],
                toml::Value::Array(a) => a
                    .iter()
                    .map(|v| v.as_integer().ok_or("check status: a list of numbers"))
                    .collect::<Result<_, _>>()?,
                _ => return Err("check status: a number or a list of numbers".into()),
            };
            let codes = codes
                .into_iter()
                .map(|c| u16::try_from(c).ok().filter(|c| (100..1000).contains(c)))
                .collect::<Option<Vec<u16>>>()
                .ok_or("check status: codes from 100 to 999")?;
            checks.push(Check::Status(codes));
            continue;
        }
        if key == "grpc-status" {
            let names: Vec<&toml::Value> = match value {
                toml::Value::Array(a) => a.iter().collect(),
                v => vec![v],
            };
            let codes = names
                .into_iter()
                .map(|v| match v {
                    toml::Value::String(s) => crate::grpc::code_by_name(s),
                    toml::Value::Integer(n) => u32::try_from(*n).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u32>>>()
                .ok_or(
                    "check grpc-status: a code name (\"OK\", \"NOT_FOUND\") or a list of them",
                )?;
            checks.push(Check::GrpcStatus(codes));
            continue;
        }
        let path = JsonPath::parse(key).map_err(|e| format!("check: {e}"))?;
        let check = match value {
            toml::Value::Table(t) if t.len() == 1 && t.contains_key("exists") => {
                let want = t["exists"].as_bool().ok_or("check: exists = true or false")?;
                Check::Exists(path, want)
            }
            toml::Value::Table(t) if t.len() == 1 && t.contains_key("matches") => {
                let re = t["matches"].as_str().ok_or("check: matches = \"REGEX\"")?;
                let re = regex::Regex::new(re).map_err(|e| format!("check {key}: {e}"))?;
                Check::Matches(path, re)
            }
            toml::Value::Table(t) if t.len() == 1 && t.contains_key("equals") => {
                Check::Equals(path, to_json(&t["equals"]))
            }
            toml::Value::Table(_) => {
                return Err(format!(
                    "check {key}: a value, or one of {{ exists = true }}, {{ matches = \"REGEX\" }}, {{ equals = VALUE }}"
                ))
            }
            v => Check::Equals(path, to_json(v)),
        };
        checks.push(check);
    }
    Ok(Checks(checks))
}

fn to_json(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Build a step's request at one endpoint.
async fn run_step(plan: Arc<StepPlan>, ctx: Context) -> Result<Call, StepError> {
    if let Some(think) = plan.think {
        tokio::time::sleep(think).await;
    }
    let call = plan
        .calls
        .get(ctx.endpoint)
        .ok_or_else(|| StepError("no such endpoint".into()))?;
    let lookup = |name: &str| -> Option<String> {
        if let Some(v) = ctx.vars.get(name) {
            return Some(v.clone());
        }
        if let Some(v) = plan.data.value(ctx.instance, name) {
            return Some(v.to_string());
        }
        if let Some(v) = plan.constants.get(name) {
            return Some(v.clone());
        }
        match name {
            "instance" => Some(ctx.instance.to_string()),
            "endpoint" => plan.labels.get(ctx.endpoint).cloned(),
            _ => None,
        }
    };
    // The same seed at every endpoint: the same random values.
    let mut rng =
        fastrand::Rng::with_seed(ctx.instance.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ plan.index);
    let mut out = Call::new(call.method.clone(), call.path.render(&lookup, &mut rng));
    for (name, value) in &call.headers {
        out = out.header(name.as_str(), &value.render(&lookup, &mut rng))?;
    }
    if let Some(body) = &call.body {
        let typed = call
            .headers
            .iter()
            .any(|(n, _)| n == http::header::CONTENT_TYPE);
        if call.json && !typed {
            out = out.header("content-type", "application/json")?;
        }
        out = out.body(body.render(&lookup, &mut rng));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
