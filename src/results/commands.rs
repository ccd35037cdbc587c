//! The commands around saved runs: what a live run saves and reports
//! (`--output`, `--format`, `--html`, `--threshold`), `versus report`,
//! `versus merge` and `versus compare`. Each returns how it ended
//! ([`Exit`]): a file that cannot be read is [`Exit::Usage`].

use std::io::Write;
use std::path::PathBuf;

use super::format::Header;
use super::series::SeriesObserver;
use super::writer::{self, Recorder, Recording, RunWriter, Tee};
use crate::cli::{CompareArgs, MergeArgs, ReportArgs, RunArgs};
use crate::engine::{Input, Observer, RunOutput};
use crate::exit::Exit;
use crate::plan::Plan;
use crate::report::info::{Report, RunInfo};
use crate::report::outputs::{self, Format};
use crate::report::threshold::{self, Threshold};

/// What a live run writes, prepared before it starts.
pub struct Live {
    info: RunInfo,
    header: Header,
    format: Format,
    thresholds: Vec<Threshold>,
    html: Option<PathBuf>,
    output: Option<PathBuf>,
    /// The `--output` file, once [`Live::open`] has created it.
    writer: Option<RunWriter>,
    series: Option<SeriesObserver>,
    log: Option<std::sync::Arc<crate::report::mismatch_log::MismatchLog>>,
    /// Record requests unmasked (`--show-secrets`).
    show_secrets: bool,
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

impl Live {
    /// Check the output flags (no file is touched yet: see
    /// [`Live::open`]). `argv` is the command line as given.
    ///
    /// # Errors
    /// A usage message naming the flag (exit 2).
    pub fn prepare(args: &RunArgs, plan: &Plan, argv: &[String]) -> Result<Live, String> {
        let format = Format::parse(
            &args.format,
            &[Format::Text, Format::Json, Format::Markdown, Format::Vegeta],
        )?;
        let thresholds = outputs::thresholds(&args.thresholds)?;
        let info = RunInfo::from_plan(plan);
        for t in &thresholds {
            t.targets(&info, &plan.steps)?;
        }
        let command = if plan.show_secrets {
            argv.to_vec()
        } else {
            writer::mask_command(argv)
        };
        let interval_ms = u64::try_from(plan.interval.as_millis())
            .unwrap_or(1000)
            .max(1);
        let mut header =
            writer::header(&info, command, interval_ms, plan.concurrency, plan.start_at);
        header.shard = (plan.shard != crate::plan::Shard::WHOLE).then_some(plan.shard);
        Ok(Live {
            series: args
                .html
                .as_ref()
                .map(|_| SeriesObserver::new(plan.interval.as_secs_f64())),
            info,
            header,
            format,
            thresholds,
            html: args.html.clone(),
            output: args.output.clone(),
            writer: None,
            log: plan.mismatch_log.clone(),
            show_secrets: plan.show_secrets,
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
        let paths = [
            ("--output", self.output.as_deref()),
            ("--mismatches", self.log.as_ref().map(|l| l.path())),
            ("--html", self.html.as_deref()),
        ];
        for (flag, path) in paths {
            if let Some(path) = path {
                writable(flag, path)?;
            }
        }
        Ok(())
    }

    /// Create the output files (every one [`Live::check`]ed first, so
    /// that none is replaced unless all can be): the `--output` file (its header written),
    /// the `--mismatches` file, and the `--html` file (written at the end;
    /// created now so that a path it cannot be written to fails before
    /// the run). Called when nothing else can stop the run from starting:
    /// a run that never starts leaves earlier files alone.
    ///
    /// # Errors
    /// A message naming the flag (exit 2).
    pub fn open(&mut self) -> Result<(), String> {
        self.check()?;
        if let Some(path) = &self.output {
            self.writer = Some(
                RunWriter::create(path, &self.header)
                    .map_err(|e| format!("--output {}: {e}", path.display()))?,
            );
        }
        if let Some(log) = &self.log {
            log.open()?;
        }
        if let Some(path) = &self.html {
            std::fs::File::create(path).map_err(|e| format!("--html {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// The run's input, its requests recorded into the `--output` file
    /// (once [`Live::open`] created it) so that the saved run can be
    /// replayed. A flow's requests are built at each endpoint: nothing to
    /// replay.
    pub fn record(&self, input: Input) -> Input {
        let Some(mut recorder) = self.writer.as_ref().map(|w| w.recorder(self.show_secrets)) else {
            return input;
        };
        match input {
            Input::Stream(source) => Input::Stream(Box::new(Recording::new(source, recorder))),
            Input::Repeat(r) => {
                recorder.record(&r, true);
                Input::Repeat(r)
            }
            flows @ (Input::Flow(_) | Input::Mix(_)) => flows,
        }
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
        f(&mut Tee(list))
    }

    /// After the run: write the totals line, the report on `out`, the HTML
    /// file; returns [`Exit::Threshold`] when a threshold failed, else
    /// [`Exit::Done`].
    ///
    /// # Errors
    /// When the report or a file cannot be written.
    pub fn finish(mut self, out: &mut dyn Write, run: &RunOutput) -> Result<Exit, String> {
        // What --mismatches wrote is known only now.
        if let Some(log) = &self.log {
            self.info.logged = Some(log.counts());
        }
        if let Some(w) = self.writer.as_mut() {
            w.totals(run);
            w.check()
                .map_err(|e| format!("--output {}: {e}", w.path().display()))?;
        }
        let checks = threshold::check(&self.thresholds, &self.info, &run.stats)?;
        let mut series = self.series.take().map(|s| s.series);
        if let Some(s) = series.as_mut() {
            s.close(run.elapsed.as_secs_f64());
        }
        let report = Report {
            info: &self.info,
            run,
            header: &self.header,
            checks: &checks,
            series: series.as_ref(),
        };
        outputs::render(out, self.format, &report)
            .and_then(|()| out.flush())
            .or_else(reader_gone)
            .map_err(|e| format!("cannot write the report: {e}"))?;
        if let Some(path) = &self.html {
            let mut page = Vec::new();
            crate::report::html::write(&mut page, &report)
                .and_then(|()| std::fs::write(path, page))
                .map_err(|e| format!("--html {}: {e}", path.display()))?;
        }
        Ok(threshold::exit(&checks))
    }
}

/// `versus report FILE...`.
pub fn report(args: &ReportArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let prepared = Format::parse(
        &args.format,
        &[
            Format::Text,
            Format::Json,
            Format::Markdown,
            Format::Csv,
            Format::Html,
            Format::Vegeta,
        ],
    )
    .and_then(|f| Ok((f, outputs::thresholds(&args.thresholds)?)));
    let (format, thresholds) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    let run = match super::load(&args.files) {
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
    let report = Report {
        info: &run.info,
        run: &run.output,
        header: &run.header,
        checks: &checks,
        series: Some(&run.series),
    };
    let written = outputs::render(out, format, &report).and_then(|()| out.flush());
    if let Err(e) = written.or_else(reader_gone) {
        let _ = writeln!(err, "versus: cannot write the report: {e}");
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
    let shards = match super::merge::Shards::open(&args.files) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
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
    w.totals(&RunOutput {
        stats: f.stats,
        input: f.input,
        input_error: f.input_error.map(crate::input::reader::InputError::Saved),
        elapsed: f.elapsed,
        interrupted: f.interrupted,
    });
    if let Err(e) = w.check() {
        let _ = writeln!(err, "versus: --output {}: {e}", args.output.display());
        return Exit::Failed;
    }
    Exit::Done
}

/// `versus compare A [B ...]`.
pub fn compare(args: &CompareArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let format = match Format::parse(&args.format, &[Format::Text, Format::Markdown]) {
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
        match super::load(std::slice::from_ref(f)) {
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
        Format::Markdown => crate::report::compare::write_markdown(out, &columns),
        _ => crate::report::compare::write_text(out, &columns),
    }
    .and_then(|()| {
        // What could not be paired, and pairings by position, said after
        // the tables (and on stderr, where a script looks for warnings).
        for n in &notes {
            let _ = writeln!(err, "versus: note: {n}");
            match format {
                Format::Markdown => {
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
