//! The commands around saved runs: what a live run saves and reports
//! (`--output`, `--format`, `--html`, `--threshold`), `versus report`,
//! `versus merge` and `versus compare`. Each returns how it ended
//! ([`Exit`]): a file that cannot be read is [`Exit::Usage`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::cli::{CompareArgs, MergeArgs, ReportArgs, RunArgs};
use crate::engine::{Observer, RunOutput, Workload};
use crate::exit::Exit;
use crate::input::{Next, Source};
use crate::plan::Plan;
use crate::report::info::Report;
use crate::report::outputs::{self, ReportFormat};
use crate::report::remote_write::{self, RemoteWrite, RunLabels};
use crate::report::threshold::{self, Threshold};
use crate::results::format::Header;
use crate::results::info::{Record, RunInfo};
use crate::results::series::SeriesObserver;
use crate::results::writer::{self, Recorder, Recording, RunFile, RunWriter, Tee};

/// What a live run writes, prepared before it starts.
pub struct OutputFiles {
    info: RunInfo,
    header: Header,
    format: ReportFormat,
    thresholds: Vec<Threshold>,
    html: Option<PathBuf>,
    /// The `--output` file's writer (its file created by `files`).
    writer: Option<RunWriter>,
    series: Option<SeriesObserver>,
    /// A sweep's steps, as the run goes (a search's are its steering's).
    steps: Option<crate::results::steps::Steps>,
    /// A capacity search steering the run.
    steering: Option<crate::search::Steering>,
    /// Creates the output files, once.
    files: Arc<Files>,
    /// Record requests unmasked (`--show-secrets`).
    show_secrets: bool,
    /// `--record mismatches`: the tap to hand the stream's recorder to.
    problem_lines: Option<Arc<crate::results::writer::ProblemLines>>,
    /// `--out`: the intervals streamed while the run goes.
    metrics: Option<RemoteWrite>,
}

/// A live run's output files, created together and once: before the run,
/// or at a stream's first request (an input that turns out to hold none
/// leaves an earlier run's files alone), or at the end of a run
/// interrupted before it.
struct Files {
    output: Option<RunFile>,
    log: Option<Arc<crate::report::mismatch_log::MismatchLog>>,
    html: Option<PathBuf>,
    junit: Option<PathBuf>,
    created: Mutex<bool>,
}

impl Files {
    /// Check that every file can be written, changing none.
    fn check(&self) -> Result<(), String> {
        let paths = [
            ("--output", self.output.as_ref().map(RunFile::path)),
            ("--mismatches", self.log.as_ref().map(|l| l.path())),
            ("--html", self.html.as_deref()),
            ("--junit", self.junit.as_deref()),
        ];
        for (flag, path) in paths {
            if let Some(path) = path {
                writable(flag, path)?;
            }
        }
        Ok(())
    }

    /// Create the files (replacing earlier ones) unless done already: the
    /// `--output` file with the lines kept for it, the `--mismatches`
    /// file, and the `--html` and `--junit` files (written at the end;
    /// created now so that they are replaced with the others or not at
    /// all).
    fn create(&self) -> Result<(), String> {
        let mut created = self
            .created
            .lock()
            .map_err(|_| "output files: lock poisoned".to_string())?;
        if *created {
            return Ok(());
        }
        if let Some(file) = &self.output {
            file.create()
                .map_err(|e| format!("--output {}: {e}", file.path().display()))?;
        }
        if let Some(log) = &self.log {
            log.open()?;
        }
        for (flag, path) in [("--html", &self.html), ("--junit", &self.junit)] {
            if let Some(path) = path {
                std::fs::File::create(path)
                    .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
            }
        }
        *created = true;
        Ok(())
    }

    /// Whether [`Files::create`] has created the files.
    fn created(&self) -> bool {
        self.created.lock().is_ok_and(|c| *c)
    }
}

/// A stream that creates the output files as it hands on its first
/// request; then it is spent, and hands on its source.
struct Creating {
    /// `None` once taken by [`Source::spent`].
    source: Option<Box<dyn Source>>,
    files: Arc<Files>,
    created: bool,
}

impl Source for Creating {
    fn next(&mut self) -> std::io::Result<Next> {
        let Some(source) = self.source.as_mut() else {
            return Ok(Next::End);
        };
        let next = source.next()?;
        if !self.created && matches!(next, Next::Request(_)) {
            self.files.create().map_err(std::io::Error::other)?;
            self.created = true;
        }
        Ok(next)
    }

    fn buffered(&self) -> bool {
        self.source.as_ref().is_some_and(|s| s.buffered())
    }

    fn summary(&self) -> Option<String> {
        self.source.as_ref()?.summary()
    }

    fn location(&self) -> Option<String> {
        self.source.as_ref()?.location()
    }

    fn spent(&mut self) -> Option<Box<dyn Source>> {
        self.source.take_if(|_| self.created)
    }
}

/// A report whose reader stopped reading (`versus report ... | head`) is
/// not a failure: what was wanted was read.
fn reader_gone(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(e)
    }
}

/// Check that `path` can be written without changing it (a file the check
/// creates is removed again).
fn writable(flag: &str, path: &std::path::Path) -> Result<(), String> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

impl OutputFiles {
    /// Check the output flags (no file is touched yet: see
    /// [`OutputFiles::open`]). `argv` is the command line as given.
    ///
    /// # Errors
    /// A usage message naming the flag (exit 2).
    pub fn prepare(args: &RunArgs, plan: &Plan, argv: &[String]) -> Result<OutputFiles, String> {
        let format = ReportFormat::parse(
            &args.format,
            &[
                ReportFormat::Text,
                ReportFormat::Json,
                ReportFormat::Markdown,
                ReportFormat::Csv,
                ReportFormat::Vegeta,
            ],
        )?;
        let thresholds = outputs::thresholds(&args.thresholds)?;
        let info = plan.run_info();
        for t in &thresholds {
            t.targets(&info, &plan.steps)?;
        }
        let command = if plan.show_secrets {
            argv.to_vec()
        } else {
            writer::mask_command(argv)
        };
        let interval_ms = u64::try_from(plan.engine.interval.as_millis())
            .unwrap_or(1000)
            .max(1);
        let mut header = writer::header(
            &info,
            command,
            interval_ms,
            plan.engine.concurrency,
            plan.engine.start_at,
        );
        header.shard =
            (plan.engine.shard != crate::model::Share::WHOLE).then_some(plan.engine.shard);
        let run_id = match &args.run_id {
            Some(id) if id.trim().is_empty() => return Err("--run-id: give a name".into()),
            Some(id) => id.clone(),
            None => remote_write::random_run_id(),
        };
        header.run_id = Some(run_id.clone());
        let writer = args
            .output
            .as_ref()
            .map(|path| RunWriter::pending(path, &header));
        let metrics = metrics(args, plan, &info, run_id)?;
        Ok(OutputFiles {
            steps: info.steps(plan.engine.interval),
            steering: None,
            series: args
                .html
                .as_ref()
                .map(|_| SeriesObserver::new(plan.engine.interval.as_secs_f64())),
            files: Arc::new(Files {
                output: writer.as_ref().map(RunWriter::file),
                log: plan.mismatch_log.clone(),
                html: args.html.clone(),
                junit: args.junit.clone(),
                created: Mutex::new(false),
            }),
            writer,
            info,
            header,
            format,
            thresholds,
            html: args.html.clone(),
            show_secrets: plan.show_secrets,
            problem_lines: plan.problem_lines.clone(),
            metrics,
        })
    }

    /// How long `--start-at` had passed when the run was set up.
    pub fn late(&self) -> Option<std::time::Duration> {
        self.header.late_ms.map(std::time::Duration::from_millis)
    }

    /// Check that every output file can be written, changing none.
    ///
    /// # Errors
    /// A message naming the flag (exit 2).
    pub fn check(&self) -> Result<(), String> {
        self.files.check()
    }

    /// The run's input, its requests recorded into the `--output` file as
    /// `--record` says (every one, or those that mismatched or met an
    /// error, or none), so that the saved run can be replayed, and the
    /// output files created
    /// (every one [`OutputFiles::check`]ed first): a stream's at its first
    /// request, so that an input without one leaves an earlier run's
    /// files alone; any other input's now. A flow's requests are built at
    /// each endpoint: nothing to replay.
    ///
    /// # Errors
    /// A message naming the flag (exit 2).
    pub fn attach(&self, input: Workload) -> Result<Workload, String> {
        let record = self.info.record.unwrap_or_default();
        let mut recorder = (self.writer.as_ref())
            .filter(|_| record != Record::None)
            .map(|w| w.recorder(self.show_secrets));
        match input {
            Workload::Stream(source) => {
                let source = match (recorder, &self.problem_lines) {
                    (Some(r), Some(problems)) if record == Record::Mismatches => {
                        problems.attach(r);
                        source
                    }
                    (Some(r), _) => Box::new(Recording::new(source, r)),
                    (None, _) => source,
                };
                Ok(Workload::Stream(Box::new(Creating {
                    source: Some(source),
                    files: self.files.clone(),
                    created: false,
                })))
            }
            other => {
                self.files.create()?;
                if let (Workload::Repeat(r), Some(recorder)) = (&other, recorder.as_mut()) {
                    recorder.record(r, true);
                }
                Ok(other)
            }
        }
    }

    /// A capacity search (`--find-capacity`) steers the run through `stop`.
    ///
    /// # Errors
    /// Conditions that do not parse.
    pub fn steer(
        &mut self,
        interval: std::time::Duration,
        stop: &crate::engine::Stop,
    ) -> Result<(), String> {
        self.steering = crate::search::Steering::new(&self.info, interval, stop)?;
        if self.steering.is_some() {
            // The steering gathers the steps it judges: once is enough.
            self.steps = None;
        }
        Ok(())
    }

    /// Run `f` with the observer that saves intervals (and keeps the series
    /// for `--html`), and shows them to `view` too.
    pub fn observe<T>(
        &mut self,
        view: &mut dyn Observer,
        f: impl FnOnce(&mut dyn Observer) -> T,
    ) -> T {
        let mut list: Vec<&mut dyn Observer> = vec![view];
        let mut recorder = self.writer.as_mut().map(|w| Recorder { writer: w });
        if let Some(r) = recorder.as_mut() {
            list.push(r);
        }
        if let Some(s) = self.series.as_mut() {
            list.push(s);
        }
        if let Some(s) = self.steps.as_mut() {
            list.push(s);
        }
        if let Some(s) = self.steering.as_mut() {
            list.push(s);
        }
        if let Some(m) = self.metrics.as_mut() {
            list.push(m);
        }
        f(&mut Tee(list))
    }

    /// After the run: write the totals line, the report on `out`, the HTML
    /// file; returns [`Exit::Threshold`] when a threshold failed, else
    /// [`Exit::Done`].
    ///
    /// # Errors
    /// When the report or a file cannot be written.
    pub fn finish(mut self, out: &mut dyn Write, run: &RunOutput) -> Result<Exit, String> {
        // A run interrupted before its first request is reported, in its
        // files too; one whose input failed before it (`--strict` at the
        // first record) leaves earlier files alone, as an input without a
        // request does.
        if run.interrupted {
            self.files.create()?;
        }
        // What --mismatches wrote is known only now.
        if let Some(log) = &self.files.log {
            self.info.logged = Some(log.counts());
        }
        self.info.recorded = self.problem_lines.as_ref().and_then(|p| p.counts());
        if let Some(m) = self.metrics.take() {
            self.info.notes.extend(m.finish());
        }
        if let Some(w) = self.writer.as_mut() {
            w.totals(run, &self.info);
            w.check()
                .map_err(|e| format!("--output {}: {e}", w.path().display()))?;
        }
        let checks = threshold::check(&self.thresholds, &self.info, &run.stats)?;
        let mut series = self.series.take().map(|s| s.series);
        if let Some(s) = series.as_mut() {
            s.close(run.elapsed.as_secs_f64());
        }
        let steps = (self.steering.as_ref())
            .map(crate::search::Steering::steps)
            .or(self.steps.as_ref());
        let capacity = crate::report::capacity::of_run(&self.info, steps)?;
        let report = Report {
            capacity: capacity.as_deref(),
            info: &self.info,
            run,
            header: &self.header,
            checks: &checks,
            series: series.as_ref(),
            steps,
        };
        outputs::render(out, self.format, &report)
            .and_then(|()| out.flush())
            .or_else(reader_gone)
            .map_err(|e| format!("cannot write the report: {e}"))?;
        if self.files.created() {
            if let Some(path) = self.html.as_ref() {
                let mut page = Vec::new();
                crate::report::html::write(&mut page, &report)
                    .and_then(|()| std::fs::write(path, page))
                    .map_err(|e| format!("--html {}: {e}", path.display()))?;
            }
            for_ci(&report, self.files.junit.as_deref())?;
        }
        Ok(threshold::exit(&checks))
    }
}

/// `--out`: the targets checked and their threads started, or `None`
/// without one. The run is named `run_id` (the saved run's id).
///
/// # Errors
/// A message naming `--out` (exit 2).
fn metrics(
    args: &RunArgs,
    plan: &Plan,
    info: &RunInfo,
    run_id: String,
) -> Result<Option<RemoteWrite>, String> {
    let targets = remote_write::targets(&args.out)?;
    if targets.is_empty() {
        return Ok(None);
    }
    let labels = RunLabels {
        run_id,
        shard: plan.engine.shard.to_string(),
        endpoints: info.endpoints.iter().map(|e| e.label.clone()).collect(),
    };
    RemoteWrite::start(targets, labels).map(Some)
}

/// What a report writes for CI besides itself: the `--junit` file, and
/// the Markdown report appended to the file `GITHUB_STEP_SUMMARY` names,
/// when that is set (GitHub Actions shows it on the job's page).
///
/// # Errors
/// A message naming the file that could not be written.
fn for_ci(report: &Report<'_>, junit: Option<&std::path::Path>) -> Result<(), String> {
    if let Some(path) = junit {
        let mut xml = Vec::new();
        crate::report::junit::write(&mut xml, report)
            .and_then(|()| std::fs::write(path, xml))
            .map_err(|e| format!("--junit {}: {e}", path.display()))?;
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let mut md = Vec::new();
        crate::report::markdown::write(&mut md, report)
            .and_then(|()| {
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)?;
                file.write_all(&md)
            })
            .map_err(|e| {
                format!(
                    "GITHUB_STEP_SUMMARY {}: {e}",
                    std::path::Path::new(&path).display()
                )
            })?;
    }
    Ok(())
}

/// `versus report FILE...`.
pub fn report(args: &ReportArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let prepared = ReportFormat::parse(
        &args.format,
        &[
            ReportFormat::Text,
            ReportFormat::Json,
            ReportFormat::Markdown,
            ReportFormat::Csv,
            ReportFormat::Html,
            ReportFormat::Vegeta,
        ],
    )
    .and_then(|f| Ok((f, outputs::thresholds(&args.thresholds)?)));
    let checked = prepared.and_then(|p| match &args.junit {
        Some(path) => writable("--junit", path).map(|()| p),
        None => Ok(p),
    });
    let (format, thresholds) = match checked {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    let run = match crate::results::load(&args.files) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    for w in &run.warnings {
        let _ = writeln!(err, "versus: warning: {w}");
    }
    let checks = match threshold::check(&thresholds, &run.info, &run.output.stats) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    let capacity = match crate::report::capacity::of_run(&run.info, run.steps.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    let report = Report {
        capacity: capacity.as_deref(),
        info: &run.info,
        run: &run.output,
        header: &run.header,
        checks: &checks,
        series: Some(&run.series),
        steps: run.steps.as_ref(),
    };
    let written = outputs::render(out, format, &report).and_then(|()| out.flush());
    if let Err(e) = written.or_else(reader_gone) {
        let _ = writeln!(err, "versus: cannot write the report: {e}");
        return Exit::Failed;
    }
    if let Err(e) = for_ci(&report, args.junit.as_deref()) {
        let _ = writeln!(err, "versus: {e}");
        return Exit::Failed;
    }
    threshold::exit(&checks)
}

/// `versus merge FILE... -o OUT`.
pub fn merge(args: &MergeArgs, err: &mut dyn Write) -> Exit {
    if args.files.iter().any(|f| f == &args.output) {
        let _ = writeln!(
            err,
            "versus: --output {} is also an input file; write the merge to a new file",
            args.output.display()
        );
        return Exit::Usage;
    }
    let mut shards = match crate::results::merge::Shards::open(&args.files) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    // A merge writes the statistics; the request lines stay in the shards.
    shards.header.record = Record::None;
    let mut w = match RunWriter::create(&args.output, &shards.header) {
        Ok(w) => w,
        Err(e) => {
            let _ = writeln!(err, "versus: --output {}: {e}", args.output.display());
            return Exit::Failed;
        }
    };
    let finished = shards.merge(&mut |index, stats| w.interval(index, stats));
    let f = match finished {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            let _ = std::fs::remove_file(&args.output);
            return Exit::Usage;
        }
    };
    for warning in &f.warnings {
        let _ = writeln!(err, "versus: warning: {warning}");
    }
    let run = RunOutput {
        stats: f.stats,
        input: f.input,
        input_error: f.input_error.map(crate::input::reader::InputError::Saved),
        elapsed: f.elapsed,
        interrupted: f.interrupted,
    };
    // The request lines stay in the shards: so do their counts.
    let kept = RunInfo {
        logged: f.logged,
        ..RunInfo::default()
    };
    w.totals(&run, &kept);
    if let Err(e) = w.check() {
        let _ = writeln!(err, "versus: --output {}: {e}", args.output.display());
        return Exit::Failed;
    }
    Exit::Done
}

/// `versus compare A [B ...]`.
pub fn compare(args: &CompareArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let format =
        match ReportFormat::parse(&args.format, &[ReportFormat::Text, ReportFormat::Markdown]) {
            Ok(f) => f,
            Err(e) => {
                let _ = writeln!(err, "versus: {e}");
                return Exit::Usage;
            }
        };
    // Columns are named by file name, or by path when names repeat.
    let name = |f: &std::path::PathBuf| -> String {
        let short = f.file_name().map(|n| n.to_string_lossy().into_owned());
        match short {
            Some(s)
                if args
                    .files
                    .iter()
                    .filter(|g| {
                        g.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .as_ref()
                            == Some(&s)
                    })
                    .count()
                    == 1 =>
            {
                s
            }
            _ => f.display().to_string(),
        }
    };
    let mut runs = Vec::with_capacity(args.files.len());
    for f in &args.files {
        match crate::results::load(std::slice::from_ref(f)) {
            Ok(r) => {
                for w in &r.warnings {
                    let _ = writeln!(err, "versus: warning: {w}");
                }
                runs.push((name(f), r));
            }
            Err(e) => {
                let _ = writeln!(err, "versus: {e}");
                return Exit::Usage;
            }
        }
    }
    let (columns, notes) = crate::report::compare::columns(&runs);
    let result = match format {
        ReportFormat::Markdown => crate::report::compare::write_markdown(out, &columns),
        _ => crate::report::compare::write_text(out, &columns),
    }
    .and_then(|()| {
        // What could not be paired, and pairings by position, said after
        // the tables (and on stderr, where a script looks for warnings).
        for n in &notes {
            let _ = writeln!(err, "versus: note: {n}");
            match format {
                ReportFormat::Markdown => {
                    writeln!(out, "\n- Note: {}", crate::report::markdown::cell(n))?
                }
                _ => writeln!(out, "\nNote: {n}")?,
            }
        }
        Ok(())
    });
    if let Err(e) = result.and_then(|()| out.flush()).or_else(reader_gone) {
        let _ = writeln!(err, "versus: cannot write the comparison: {e}");
        return Exit::Failed;
    }
    Exit::Done
}
