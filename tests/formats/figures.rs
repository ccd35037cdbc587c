//! Every figure of the text report, read from the text and found with the
//! same value in the JSON, Markdown, CSV and HTML reports of the same
//! saved run: per endpoint (rate, latency, errors by kind, statuses,
//! bytes, first byte, connections, TLS, failed connects, held back,
//! abandoned, flows, steps, methods), each paged step's table and
//! improvements, and the summary (totals, run time, I/O driver, mismatch
//! and error groups, incomplete, and the lines only some runs have:
//! warm-up, as bytes, judged on a timing core, judge queue peak, not
//! judged, logged, input, source, stopped, noise). A line of the text report this check does not know
//! fails it, so a figure added to the text report is added here, and to
//! every format, too.

use std::collections::BTreeMap;

use serde_json::Value;

/// One saved run in every format.
pub struct Reports {
    /// The text report, whose figures are looked for in the others.
    pub text: String,
    json: Value,
    md: String,
    /// The CSV report's rows of fields, the header first.
    csv: Vec<Vec<String>>,
    html: String,
}

impl Reports {
    /// Every format of a run `render` renders.
    pub fn of(render: impl Fn(&str) -> String) -> Reports {
        Reports {
            text: render("text"),
            json: serde_json::from_str(&render("json")).unwrap(),
            md: render("markdown"),
            csv: render("csv").lines().map(csv_fields).collect(),
            html: render("html"),
        }
    }

    /// Check every figure the text report shows in each other format.
    pub fn check_every_figure(&self) {
        self.knows_every_line();
        let blocks = endpoint_blocks(&self.text);
        let eps = self.json["endpoints"].as_array().unwrap();
        assert_eq!(blocks.len(), eps.len(), "{}", self.text);
        for (i, block) in blocks.iter().enumerate() {
            let e = Endpoint { r: self, i, block };
            e.rate_and_latency();
            e.schedule();
            e.load();
            e.errors();
            e.responses();
            e.connections();
            e.waits();
            e.flows();
            e.parts("Steps:", "steps", "step", true);
            e.parts("By method:", "methods", "method", false);
        }
        self.pages();
        self.summary();
        self.load_curve();
    }

    /// Every line of the text report's endpoint blocks and summary heads
    /// a figure this check looks for: a figure added to the text report
    /// fails here until it is checked in every format.
    fn knows_every_line(&self) {
        const ENDPOINT: [&str; 22] = [
            "Requests:",
            "Rate:",
            "Offered:",
            "Users:",
            "Uncorrected:",
            "Send lag:",
            "Connect attempts:",
            "Timing:",
            "Percentiles:",
            "Errors:",
            "Status:",
            "Bytes:",
            "First byte:",
            "Connects:",
            "TLS:",
            "Conn. wait:",
            "Spare:",
            "Held back:",
            "Abandoned:",
            "Flows:",
            "Steps:",
            "By method:",
        ];
        const SUMMARY: [&str; 23] = [
            "Completed:",
            "Timing:",
            "Errors:",
            "I/O:",
            "Warm-up:",
            "Stages:",
            "Sweep:",
            "Mismatched:",
            "by method and field",
            "Errors by method",
            "Incomplete:",
            "As bytes:",
            "Judged on a timing core:",
            "Judge queue peak:",
            "Not judged:",
            "Logged:",
            "Saved:",
            "Input:",
            "Source:",
            "Stopped:",
            "Noise:",
            "noisy fields",
            "fields that are noisy and also really differ",
        ];
        let summary = self.summary_text();
        let heads = |text: &str, indent: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with(indent) && !l[indent.len()..].starts_with(' '))
                .map(|l| l.trim().to_string())
                .collect()
        };
        for block in endpoint_blocks(&self.text) {
            for head in heads(&block.join("\n"), "   ") {
                assert!(
                    ENDPOINT.iter().any(|k| head.starts_with(k)),
                    "unchecked: {head}"
                );
            }
        }
        for head in heads(summary, "   ")
            .into_iter()
            .chain(heads(summary, "     "))
        {
            assert!(
                SUMMARY.iter().any(|k| head.starts_with(k)),
                "unchecked: {head}"
            );
        }
    }

    /// The text report's summary, without a sweep's load curve after it.
    fn summary_text(&self) -> &str {
        let summary = self.text.split("\n** Summary for ").nth(1).unwrap();
        summary.split("\n** Load curve").next().unwrap()
    }

    /// A sweep's load curve: each row of the text's table is a row of the
    /// Markdown table and a `load step` row of the CSV, and the JSON
    /// `steps` hold its achieved rate.
    fn load_curve(&self) {
        let Some(curve) = self.text.split("\n** Load curve (--sweep):\n").nth(1) else {
            assert!(self.json["steps"].is_null(), "json steps");
            return;
        };
        let rows: Vec<Vec<&str>> = curve
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("   "))
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .collect();
        let steps = self.json["steps"].as_array().unwrap();
        let labels: Vec<&str> = self.json["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["label"].as_str().unwrap())
            .collect();
        let wholes = rows.iter().filter(|r| r[2] != "-").count();
        assert_eq!(wholes, steps.len() * labels.len(), "{curve}");
        let mut label = "";
        for row in &rows {
            // A method's row (no offered rate) follows its endpoint's.
            let (step, cells) = (row[0], &row[2..]);
            let part = match cells[0] {
                "-" => row[1],
                _ => {
                    label = row[1];
                    ""
                }
            };
            let cell = versus::report::markdown::cell;
            let md = format!(
                "| {step} | {} | {} | {} |",
                cell(label),
                cell(part),
                cells.join(" | ")
            );
            assert!(self.md.contains(&md), "markdown {md}\n{}", self.md);
            let name = match part {
                "" => step.to_string(),
                p => format!("{step} {p}"),
            };
            let csv = self.csv_row(label, "load step", &name);
            assert_eq!(
                csv[self.col("rps")],
                cells[1],
                "csv achieved {name} {label}"
            );
            let offered = csv[self.col("offered")].as_str();
            assert_eq!(
                offered,
                cells[0].replace('-', ""),
                "csv offered {name} {label}"
            );
            let s = steps
                .iter()
                .find(|s| {
                    format!("{}/s", versus::report::rate(s["rate"].as_f64().unwrap())) == step
                })
                .unwrap();
            let e = &s["endpoints"][labels.iter().position(|l| *l == label).unwrap()];
            let figures = match part {
                "" => e,
                p => e["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["name"] == p)
                    .unwrap(),
            };
            let achieved = figures["achieved_rps"].as_f64().unwrap();
            assert_eq!(
                versus::report::rate(achieved),
                cells[1],
                "json achieved {name} {label}"
            );
        }
        assert!(self.html.contains("<h2>Load curve</h2>"), "html load curve");
    }

    fn col(&self, name: &str) -> usize {
        self.csv[0]
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no CSV column {name}: {:?}", self.csv[0]))
    }

    /// The CSV rows of `part` at the endpoint `label`.
    fn csv_rows(&self, label: &str, part: &str) -> Vec<&Vec<String>> {
        let (l, p) = (self.col("label"), self.col("part"));
        self.csv[1..]
            .iter()
            .filter(|r| r[l] == label && r[p] == part)
            .collect()
    }

    /// The CSV row of `part` named `name` at the endpoint `label`.
    fn csv_row(&self, label: &str, part: &str, name: &str) -> &Vec<String> {
        let n = self.col("name");
        self.csv_rows(label, part)
            .into_iter()
            .find(|r| r[n] == name)
            .unwrap_or_else(|| panic!("no CSV {part} row {name:?} of {label}: {:?}", self.csv))
    }

    /// Cell `i` of the row `name` of the endpoints' table, in Markdown
    /// and in HTML, each checked by `check`.
    fn table_cell(&self, name: &str, i: usize, check: impl Fn(&str, &str)) {
        check(&md_row(&self.md, name)[i], &format!("markdown {name}"));
        check(&html_row(&self.html, name)[i], &format!("html {name}"));
    }

    /// The same latency as `text` in cell `i` of the table row `name`.
    fn table_latency(&self, name: &str, i: usize, text: f64) {
        self.table_cell(name, i, |c, what| same_latency(micros(c), text, what));
    }

    /// The same text as `text` in cell `i` of the table row `name`.
    fn table_text(&self, name: &str, i: usize, text: &str) {
        self.table_cell(name, i, |c, what| assert_eq!(c, text, "{what}"));
    }

    /// Each paged step's table and improvements, cell for cell.
    fn pages(&self) {
        let json_pages = self.json["pagination"].as_array().unwrap();
        let sections: Vec<&str> = self.text.split("\n** Pages of step ").skip(1).collect();
        assert_eq!(sections.len(), json_pages.len(), "{}", self.text);
        for section in sections {
            let mut lines = section.lines();
            let step = lines.next().unwrap().trim_end_matches(':');
            let labels = cells(lines.next().unwrap());
            let mut heading = String::new();
            let mut improvements = false;
            for line in lines.take_while(|l| l.starts_with("   ")) {
                if line == "   Improvements:" {
                    improvements = true;
                } else if improvements {
                    self.improvement(step, line.trim());
                } else {
                    let row = cells(line);
                    let name = if line.starts_with("     ") {
                        format!("{heading}: {}", row[0])
                    } else {
                        heading = row[0].clone();
                        row[0].clone()
                    };
                    self.page_row(step, &labels, &row[0], &name, &row[1..]);
                }
            }
        }
    }

    /// One row of a paged step's table (`short` its name in the text,
    /// `name` with its heading), at every endpoint.
    fn page_row(&self, step: &str, labels: &[String], short: &str, name: &str, row: &[String]) {
        // A heading has a cell per endpoint, empty; its name and any row's
        // that is not below a heading are bold.
        let empty = vec![String::new(); labels.len()];
        let cells = if row.is_empty() { &empty[..] } else { row };
        let top = short == name;
        let md_name = if top {
            format!("**{short}**")
        } else {
            short.to_string()
        };
        let md = format!("| {md_name} | {} |", cells.join(" | "));
        let html_name = if top {
            format!("<b>{short}</b>")
        } else {
            format!("&nbsp;&nbsp;{short}")
        };
        let html: String = cells.iter().map(|c| format!("<td>{c}</td>")).collect();
        self.shown(&md, &format!("<tr><td>{html_name}</td>{html}</tr>"));
        for (label, cell) in labels.iter().zip(row) {
            let csv = self.csv_row(label, "page", &format!("{step}: {name}"));
            assert_eq!(&csv[self.col("value")], cell, "csv page {name} of {label}");
            self.page_figure(self.json_step(label, step), short, name, cell);
        }
    }

    /// A paged step's `cell` in the row `short` (`name` with its heading)
    /// against the step's JSON `json` at that endpoint.
    fn page_figure(&self, json: &Value, short: &str, name: &str, cell: &str) {
        let (latency, t) = (&json["latency_ms"], &json["traversal"]);
        let depth = |pages: &str| {
            t["latency_by_depth"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["pages"] == pages)
                .map(|d| d["latency_ms"]["p50"].clone())
        };
        let figure = match short {
            "Average" => Some(latency["mean"].clone()),
            "p50" | "p95" | "p99" if name.starts_with("Page latency") => {
                Some(latency[short].clone())
            }
            "Min" => Some(latency["min"].clone()),
            "Max" => Some(latency["max"].clone()),
            "Time (avg)" => Some(t["time_ms"]["mean"].clone()),
            "Time (p95)" => Some(t["time_ms"]["p95"].clone()),
            _ => short.strip_prefix("page ").and_then(depth),
        };
        if let Some(ms) = figure {
            same_latency(micros(cell), ms.as_f64().unwrap() * 1e3, name);
        }
        let per_traversal = |key: &str| t[key].as_f64().map(|v| format!("{v:.0}"));
        match short {
            "Pages" => assert_eq!(Some(cell.to_string()), per_traversal("pages_per_traversal")),
            "Items" => assert_eq!(Some(cell.to_string()), per_traversal("items_per_traversal")),
            "Size per page" => {
                let size = t["bytes_per_page"]
                    .as_f64()
                    .map(versus::report::pages::bytes);
                assert_eq!(Some(cell.to_string()), size, "json size per page");
            }
            "Completed" => {
                let (done, stopped) = (
                    t["completed"].as_u64().unwrap(),
                    t["stopped"].as_u64().unwrap(),
                );
                assert_eq!(cell, format!("{done} of {}", done + stopped));
            }
            _ => {}
        }
    }

    /// One improvement line of a paged step, in every format.
    fn improvement(&self, step: &str, line: &str) {
        let md = versus::report::markdown::cell(line);
        self.shown(&format!("- {md}\n"), &format!("<li>{line}</li>"));
        let (this, against) = line.split_once(": ").unwrap().0.split_once(" vs ").unwrap();
        let csv = self.csv_row(this, "improvement", &format!("{step} against {against}"));
        assert_eq!(csv[self.col("value")], line, "csv improvement");
        let json = self.json["pagination"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["step"] == step)
            .unwrap()["improvements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["endpoint"] == this && g["against"] == against)
            .unwrap_or_else(|| panic!("json improvement {line}"))
            .clone();
        let latency = line.split("latency ").nth(1).unwrap();
        let latency = latency.split(';').next().unwrap().trim_start_matches("~ ");
        if latency.starts_with('-') {
            assert!(
                json["latency_faster_pct"].is_null(),
                "json improvement {line}"
            );
            return;
        }
        let pct: f64 = latency.split('%').next().unwrap().parse().unwrap();
        let gain = json["latency_faster_pct"].as_f64().unwrap();
        let signed = if latency.contains("slower") {
            -pct
        } else {
            pct
        };
        assert!(
            (gain - signed).abs() <= 0.051,
            "json improvement {line}: {gain}"
        );
    }

    /// Step `name` of the endpoint `label` in the JSON report.
    fn json_step(&self, label: &str, name: &str) -> &Value {
        self.json["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["label"] == label)
            .unwrap()["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
    }

    /// `md` in the Markdown report and `html` in the HTML report.
    fn shown(&self, md: &str, html: &str) {
        assert!(self.md.contains(md), "markdown {md:?}\n{}", self.md);
        assert!(self.html.contains(html), "html {html:?}");
    }

    /// The summary's totals: results compared, requests, their average
    /// latency and errors over every endpoint, the run time, the I/O
    /// driver; then [`Reports::comparison`].
    fn summary(&self) {
        let summary = self.summary_text();
        let eps = self.json["endpoints"].as_array().unwrap();
        let endpoint_rows = &self.csv[1..=eps.len()];
        let total_row = self.csv_row("", "total", "");
        let csv = |column: &str| total_row[self.col(column)].as_str();
        let totals = &self.json["totals"];
        let completed = line_after(summary, "Completed:  ").unwrap();
        let (results, total) = completed.split_once(" results with ").unwrap();
        let total = total.trim_end_matches(" total requests");
        assert_eq!(self.json["comparison"]["compared"].to_string(), results);
        let compared = self.col("compared");
        assert!(endpoint_rows.iter().all(|r| r[compared] == results));
        self.shown(
            &format!("- Compared: {results}\n"),
            &format!("Compared: {results} requests"),
        );
        assert_eq!(totals["requests"].to_string(), total, "json total");
        assert_eq!(csv("completed"), total, "csv total");
        self.shown(
            &format!("- Requests: {total}\n"),
            &format!("Requests: {total} over all endpoints"),
        );
        let timing = line_after(summary, "Timing:     ").unwrap();
        let (avg, run_time) = timing.split_once(" request avg, ").unwrap();
        if avg != "-" {
            let (avg, json) = (micros(avg), totals["latency_ms"]["mean"].as_f64().unwrap());
            same_latency(avg, json * 1e3, "json latency avg");
            same_latency(csv_ms(csv("mean_ms")), avg, "csv latency avg");
            let md = md_lines(&self.md, "- Latency avg: ");
            same_latency(micros(md), avg, "markdown latency avg");
            let html = self.html.split("latency avg ").nth(1).unwrap();
            same_latency(
                micros(html.split(';').next().unwrap()),
                avg,
                "html latency avg",
            );
        }
        let run_time = format!(", {} long", run_time.trim_end_matches(" total run time"));
        self.shown(&run_time, &run_time);
        let errors = line_after(summary, "Errors:     ").unwrap();
        assert!(
            errors.starts_with(&format!("{} (", totals["errors"])),
            "json errors"
        );
        assert!(
            errors.starts_with(&format!("{} (", csv("errors"))),
            "csv errors"
        );
        self.shown(
            &format!("- Errors: {errors}\n"),
            &format!("errors: {errors}"),
        );
        match line_after(summary, "I/O:        ") {
            Some(io) => {
                assert!(
                    io.starts_with(self.json["run"]["io"].as_str().unwrap()),
                    "json io"
                );
                let html = format!("<td>I/O</td><td class=\"text\">{io}</td>");
                let md = versus::report::markdown::cell(io);
                self.shown(&format!("- I/O: {md}\n"), &html);
            }
            None => {
                assert!(self.json["run"]["io"].is_null(), "json io");
                assert!(!self.md.contains("- I/O:") && !self.html.contains("<td>I/O</td>"));
            }
        }
        self.comparison(summary, endpoint_rows);
    }

    /// The summary's comparison: mismatched, incomplete, the mismatch and
    /// error groups.
    fn comparison(&self, summary: &str, endpoint_rows: &[Vec<String>]) {
        let v = &self.json["comparison"];
        let mismatched = line_after(summary, "Mismatched: ").unwrap();
        assert_eq!(v["mismatched"].to_string(), mismatched, "json mismatched");
        self.shown(
            &format!("- Mismatched: {mismatched} ("),
            &format!("mismatched: {mismatched}"),
        );
        let incomplete = line_after(summary, "Incomplete: ")
            .map_or("0".into(), |l| l.split(' ').next().unwrap().to_string());
        assert_eq!(v["incomplete"].to_string(), incomplete, "json incomplete");
        let column = self.col("incomplete");
        assert!(endpoint_rows.iter().all(|r| r[column] == incomplete));
        // Markdown lists it only when some request was left incomplete.
        let md = if incomplete == "0" {
            String::new()
        } else {
            format!("- Incomplete: {incomplete}\n")
        };
        self.shown(&md, &format!("incomplete: {incomplete}"));
        self.groups(summary);
        self.notes(summary, endpoint_rows);
        self.stopped(summary, endpoint_rows);
        self.noise(summary, endpoint_rows);
    }

    /// `Noise:` and its tables of fields, in every format.
    fn noise(&self, summary: &str, endpoint_rows: &[Vec<String>]) {
        let json = &self.json["comparison"]["noise"];
        let column = self.col("noise_only");
        let Some(sentence) = line_after(summary, "Noise:") else {
            assert!(json.is_null(), "json noise");
            assert!(endpoint_rows.iter().all(|r| r[column] == "0"));
            assert!(!self.md.contains("- Noise:") && !self.html.contains("<p>Noise:"));
            return;
        };
        let sentence = sentence.trim_start();
        let (twin, noise_only) = (json["twin"].as_str().unwrap(), &json["noise_only"]);
        assert_eq!(
            sentence,
            format!("{twin} is a second copy of the reference; {noise_only} requests differed only where the two reference answers differ"),
            "json noise"
        );
        let n = noise_only.to_string();
        assert!(
            endpoint_rows.iter().all(|r| r[column] == n),
            "csv noise_only"
        );
        let md = versus::report::markdown::cell(sentence);
        self.shown(
            &format!("- Noise: {md}\n"),
            &format!("<p>Noise: {sentence}.</p>"),
        );
        let compared = self.json["comparison"]["compared"].as_u64().unwrap();
        let mut lines = summary.lines().peekable();
        while let Some(line) = lines.next() {
            let only_noise = match line.trim_start() {
                l if l.starts_with("noisy fields") => "yes",
                l if l.starts_with("fields that are noisy and also really differ") => "no",
                _ => continue,
            };
            while let Some(row) = lines.next_if(|l| l.starts_with("       ")) {
                let [field, pair, candidate]: [String; 3] =
                    cells(row).try_into().unwrap_or_else(|r| panic!("{r:?}"));
                let f = json["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["field"] == field.as_str())
                    .unwrap_or_else(|| panic!("json noise field {field}"));
                let share = |key: &str| versus::report::percent(f[key].as_u64().unwrap(), compared);
                assert_eq!(share("reference_pair"), pair, "json noise {field}");
                assert_eq!(share("candidate"), candidate, "json noise {field}");
                assert_eq!(f["only_noise"], only_noise == "yes", "json noise {field}");
                let cell = versus::report::markdown::cell(&field);
                self.shown(
                    &format!("| {cell} | {pair} | {candidate} | {only_noise} |"),
                    &format!("<tr><td class=\"text\">{field}</td><td>{pair}</td><td>{candidate}</td><td>{only_noise}</td></tr>"),
                );
                let csv = self.csv_row(twin, "noise", &field);
                for key in ["reference_pair", "candidate", "cancelled"] {
                    assert_eq!(
                        csv[self.col(&format!("noise_{key}"))],
                        f[key].to_string(),
                        "csv noise {field} {key}"
                    );
                }
            }
        }
    }

    /// The summary's lines only some runs have, each in every format, or
    /// in none: a count of requests, or (`Judge queue peak:`, `Input:`,
    /// `Source:`) a figure of its own.
    fn notes(&self, summary: &str, endpoint_rows: &[Vec<String>]) {
        let v = &self.json["comparison"];
        let notes = [
            ("Warm-up", &self.json["run"]["warmup"], "warmup"),
            ("Stages", &self.json["run"]["stages"], "stages"),
            ("Sweep", &self.json["run"]["sweep"], "sweep"),
            ("As bytes", &v["compared_as_bytes"], "compared_as_bytes"),
            (
                "Judged on a timing core",
                &v["judged_on_core"],
                "judged_on_core",
            ),
            (
                "Judge queue peak",
                &v["judge_queue_peak_bytes"],
                "judge_queue_peak_bytes",
            ),
            ("Not judged", &v["not_judged"], "not_judged"),
            ("Logged", &v["logged"], "mismatches_logged"),
            ("Saved", &self.json["run"]["record"], "record"),
            ("Input", &self.json["input"]["malformed"], "malformed"),
            ("Source", &self.json["input"]["summary"], ""),
        ];
        for (name, json, column) in notes {
            let csv: Vec<&str> = match column {
                "" => Vec::new(),
                c => endpoint_rows
                    .iter()
                    .map(|r| r[self.col(c)].as_str())
                    .collect(),
            };
            let Some(line) = line_after(summary, &format!("{name}: ")) else {
                // A saved run that keeps every request line says nothing.
                let every = name == "Saved" && json == "requests";
                assert!(
                    json.is_null() || json == 0 || every,
                    "json {name} without a text line: {json}"
                );
                assert!(
                    csv.iter()
                        .all(|c| *c == "0" || c.is_empty() || every && *c == "requests"),
                    "csv {column}: {csv:?}"
                );
                assert!(
                    !self.md.contains(&format!("\n- {name}: ")),
                    "markdown {name}"
                );
                assert!(!self.html.contains(&format!("<p>{name}: ")), "html {name}");
                continue;
            };
            let line = line.trim_start();
            let value = match name {
                "Judge queue peak" => {
                    let peak = line.split(" (").next().unwrap();
                    let bytes = json.as_u64().unwrap();
                    assert_eq!(versus::report::size(bytes), peak, "json {name}");
                    peak.to_string()
                }
                "Input" => {
                    assert!(line.contains(&format!(" {json} malformed")), "json {name}");
                    line.to_string()
                }
                "Source" => {
                    assert_eq!(json, line, "json {name}");
                    line.to_string()
                }
                "Saved" => self.saved(line, json, &csv, endpoint_rows),
                "Logged" => {
                    let (written, seen) = (json["written"].to_string(), json["seen"].to_string());
                    let start = format!("{written} of {seen} mismatched requests written");
                    assert!(line.starts_with(&start), "json {name}: {json}");
                    let seen_column = self.col("mismatches_seen");
                    assert!(
                        csv.iter().all(|c| *c == written)
                            && endpoint_rows.iter().all(|r| r[seen_column] == seen),
                        "csv {column}: {csv:?}"
                    );
                    line.to_string()
                }
                "Sweep" => {
                    let rates = json["rates"].as_array().unwrap();
                    let last = rates.last().unwrap().as_f64().unwrap();
                    assert!(
                        line.contains(&format!("{last}/s, each ")),
                        "json {name}: {json}"
                    );
                    assert!(csv.iter().all(|c| *c == line), "csv {column}: {csv:?}");
                    line.to_string()
                }
                "Warm-up" | "Stages" => {
                    let w = line.split(" sent first").next().unwrap();
                    assert_eq!(json, w, "json {name}");
                    assert!(csv.iter().all(|c| *c == w), "csv {column}: {csv:?}");
                    w.to_string()
                }
                _ => {
                    let n = line.split(' ').next().unwrap();
                    assert_eq!(json.to_string(), n, "json {name}");
                    format!("{n} requests")
                }
            };
            if !matches!(
                name,
                "Source" | "Warm-up" | "Stages" | "Sweep" | "Logged" | "Saved"
            ) {
                let n = json.to_string();
                assert!(csv.iter().all(|c| *c == n), "csv {column}: {csv:?}");
            }
            let md = versus::report::markdown::cell(&value);
            self.shown(
                &format!("- {name}: {md}\n"),
                &format!("<p>{name}: {value}.</p>"),
            );
        }
    }

    /// The summary's `Saved:` line (`line`), the saved run's `record`
    /// (`json`, and `csv` of each endpoint row) and, with `--record
    /// mismatches`, how many requests were seen and kept, in JSON and CSV.
    fn saved(
        &self,
        line: &str,
        json: &Value,
        csv: &[&str],
        endpoint_rows: &[Vec<String>],
    ) -> String {
        let mode = json.as_str().unwrap();
        assert!(line.contains(&format!("(--record {mode}")), "json Saved");
        assert!(csv.iter().all(|c| *c == mode), "csv record: {csv:?}");
        let recorded = &self.json["run"]["recorded"];
        let (seen, written) = (&recorded["seen"], &recorded["written"]);
        if !recorded.is_null() {
            let kept = match seen == written {
                true => format!(" for the {seen} requests"),
                false => format!(" for {written} of the {seen} requests"),
            };
            assert!(line.contains(&kept), "json recorded {recorded}: {line}");
        }
        for (key, n) in [("recorded_seen", seen), ("recorded_written", written)] {
            let c = self.col(key);
            let n = if n.is_null() {
                "0".into()
            } else {
                n.to_string()
            };
            assert!(endpoint_rows.iter().all(|r| r[c] == n), "csv {key}");
        }
        line.to_string()
    }

    /// `Stopped:`, when Ctrl-C stopped the run, in every format.
    fn stopped(&self, summary: &str, endpoint_rows: &[Vec<String>]) {
        let stopped = line_after(summary, "Stopped:").is_some();
        assert_eq!(self.json["run"]["interrupted"], stopped, "json interrupted");
        let column = self.col("interrupted");
        assert!(
            endpoint_rows
                .iter()
                .all(|r| r[column] == stopped.to_string()),
            "csv interrupted"
        );
        let (md, html) = (
            self.md.contains(" long, interrupted."),
            self.html.contains(" long, interrupted, started"),
        );
        assert_eq!((md, html), (stopped, stopped), "markdown, html interrupted");
    }

    /// The mismatch groups and the errors by method, row for row.
    fn groups(&self, summary: &str) {
        let mut lines = summary.lines().peekable();
        while let Some(line) = lines.next() {
            let mismatches = line.starts_with("     by method and field");
            let errors = line.starts_with("   Errors by method");
            if !(mismatches || errors) {
                continue;
            }
            while let Some(row) = lines.next_if(|l| l.starts_with("       ")) {
                // Samples below a row are indented further.
                if row.starts_with("        ") || row.trim_start().starts_with("...") {
                    continue;
                }
                let [count, _share, endpoint, method, what]: [String; 5] =
                    cells(row).try_into().unwrap_or_else(|r| panic!("{r:?}"));
                if mismatches {
                    self.mismatch_group(&count, &endpoint, &method, &what);
                } else {
                    self.error_group(&count, &endpoint, &method, &what);
                }
            }
        }
    }

    fn mismatch_group(&self, count: &str, endpoint: &str, method: &str, what: &str) {
        let group = self.json["comparison"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| {
                g["endpoint"] == endpoint
                    && g["method"] == method
                    && format!(
                        "{} {}",
                        g["field"].as_str().unwrap(),
                        g["kind"].as_str().unwrap()
                    ) == what
            })
            .unwrap_or_else(|| panic!("json group {method} {what}"));
        assert_eq!(
            group["count"].to_string(),
            count,
            "json group {method} {what}"
        );
        let (field, kind) = (
            group["field"].as_str().unwrap(),
            group["kind"].as_str().unwrap(),
        );
        let cell = versus::report::markdown::cell;
        let md = format!(
            "| {} | {} | {} | {} | {count} |",
            cell(method),
            cell(field),
            cell(kind),
            cell(endpoint)
        );
        assert!(self.md.contains(&md), "markdown group {md}\n{}", self.md);
        let html = format!(
            "<td class=\"text\">{method}</td><td class=\"text\">{field}</td><td class=\"text\">{kind}</td><td class=\"text\">{endpoint}</td><td>{count}</td>"
        );
        assert!(self.html.contains(&html), "html group {method} {what}");
        let csv = self.csv_row(endpoint, "mismatch", &format!("{method}: {what}"));
        assert_eq!(
            csv[self.col("mismatched")],
            count,
            "csv group {method} {what}"
        );
        assert_eq!(
            csv[self.col("url")],
            self.url_of(endpoint),
            "csv group url {method} {what}"
        );
    }

    /// The URL of the endpoint labelled `label`, as the JSON report has it.
    fn url_of(&self, label: &str) -> String {
        let eps = self.json["endpoints"].as_array().unwrap();
        let e = eps.iter().find(|e| e["label"] == label).unwrap();
        e["url"].as_str().unwrap().to_string()
    }

    fn error_group(&self, count: &str, endpoint: &str, method: &str, kind: &str) {
        let found = self.json["errors_by_method"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| {
                g["count"].as_u64() == count.parse().ok()
                    && g["endpoint"] == endpoint
                    && g["method"] == method
                    && g["kind"] == kind
            });
        assert!(found, "json errors by method {method} {kind}");
        let cell = versus::report::markdown::cell;
        let md = format!(
            "| {} | {} | {} | {count} |",
            cell(method),
            cell(endpoint),
            cell(kind)
        );
        assert!(self.md.contains(&md), "markdown errors by method {md}");
        let html = format!(
            "<td class=\"text\">{method}</td><td class=\"text\">{endpoint}</td><td class=\"text\">{kind}</td><td>{count}</td>"
        );
        assert!(
            self.html.contains(&html),
            "html errors by method {method} {kind}"
        );
        let csv = self.csv_row(endpoint, "error by method", &format!("{method}: {kind}"));
        assert_eq!(
            csv[self.col("errors")],
            count,
            "csv errors by method {method} {kind}"
        );
        assert_eq!(
            csv[self.col("url")],
            self.url_of(endpoint),
            "csv errors by method url {method}"
        );
    }
}

/// One endpoint's block of the text report, and where to find its
/// figures in the other formats.
struct Endpoint<'a> {
    r: &'a Reports,
    i: usize,
    block: &'a [&'a str],
}

impl Endpoint<'_> {
    fn json(&self) -> &Value {
        &self.r.json["endpoints"][self.i]
    }

    fn label(&self) -> &str {
        self.json()["label"].as_str().unwrap()
    }

    fn csv(&self) -> &Vec<String> {
        &self.r.csv[1 + self.i]
    }

    fn csv_cell(&self, column: &str) -> &str {
        &self.csv()[self.r.col(column)]
    }

    /// What follows `prefix` on the block's line that starts with it.
    fn after(&self, prefix: &str) -> Option<&str> {
        self.block.iter().find_map(|l| l.strip_prefix(prefix))
    }

    /// A latency `text` (µs) against the JSON field `key` of `histogram`
    /// (ms), the CSV column and the table row of every other format.
    fn latency(&self, text: f64, histogram: &str, key: &str, column: &str, row: &str) {
        let json = self.json()[histogram][key].as_f64().unwrap() * 1e3;
        same_latency(text, json, &format!("json {histogram} {key}"));
        same_latency(
            csv_ms(self.csv_cell(column)),
            text,
            &format!("csv {column}"),
        );
        self.r.table_latency(row, self.i, text);
    }

    /// A count `text` against the JSON field, the CSV column and the
    /// table row `row`.
    fn count(&self, text: &str, json: &str, column: &str, row: &str) {
        assert_eq!(self.json()[json].to_string(), text, "json {json}");
        assert_eq!(self.csv_cell(column), text, "csv {column}");
        self.r.table_text(row, self.i, text);
    }

    /// With `--stages`: `Offered:` (open model) or `Users:` (closed).
    fn load(&self) {
        if let Some(offered) = self.after("   Offered:    ") {
            let (rate, due) = offered.split_once(" per second").unwrap();
            let due = due.split('(').nth(1).unwrap().split(' ').next().unwrap();
            self.r.table_text("Offered per second", self.i, rate);
            assert_eq!(self.json()["offered"].to_string(), due, "json offered");
            assert_eq!(self.csv_cell("offered"), due, "csv offered");
        }
        if let Some(users) = self.after("   Users:      ") {
            let users = users.split(' ').next().unwrap();
            self.r.table_text("Users (mean)", self.i, users);
            let seconds = self.json()["user_seconds"].to_string();
            assert!(seconds.parse::<f64>().unwrap() > 0.0, "json user_seconds");
            assert_eq!(self.csv_cell("user_seconds"), seconds, "csv user_seconds");
        }
    }

    /// Open model: `Rate:`, `Uncorrected:` and `Send lag:`.
    fn schedule(&self) {
        let run = &self.r.json["run"];
        let Some(rate) = self.after("   Rate:       ") else {
            assert!(run["rate"].is_null(), "json run rate");
            return;
        };
        // Stages name their peak.
        let (scheduled, sent, row) = match rate.split_once(" per second scheduled, ") {
            Some((scheduled, sent)) => (scheduled, sent, "Rate scheduled"),
            None => {
                let (peak, sent) = rate.split_once(" per second at the peak, ").unwrap();
                (peak, sent, "Rate at the peak")
            }
        };
        // A scenario names its units: instances scheduled, requests sent.
        let scheduled = scheduled.trim_end_matches(" instances");
        let sent = sent.trim_end_matches(" per second sent");
        let sent = sent.trim_end_matches(" requests");
        let json_rate = |v: &Value| versus::report::rate(v.as_f64().unwrap());
        assert_eq!(json_rate(&run["rate"]), scheduled, "json run rate");
        self.r.table_text(row, self.i, scheduled);
        assert_eq!(json_rate(&self.json()["sent_rps"]), sent, "json sent_rps");
        assert_eq!(self.csv_cell("sent_rps"), sent, "csv sent_rps");
        self.r.table_text("Rate sent", self.i, sent);
        if let Some(u) = self.after("   Uncorrected: ") {
            let [p50, p99, max]: [f64; 3] = figures(u).try_into().unwrap();
            let at = |q: &str| (format!("uncorrected_{q}_ms"), format!("Uncorrected {q}"));
            for (value, q) in [(p50, "p50"), (p99, "p99"), (max, "max")] {
                let (column, row) = at(q);
                self.latency(value, "uncorrected_ms", q, &column, &row);
            }
        }
        if let Some(lag) = self.after("   Send lag:   ") {
            let (times, late) = lag.split_once("; ").unwrap();
            let [p50, p99]: [f64; 2] = figures(times).try_into().unwrap();
            self.latency(p50, "send_lag_ms", "p50", "lag_p50_ms", "Send lag p50");
            self.latency(p99, "send_lag_ms", "p99", "lag_p99_ms", "Send lag p99");
            let late_n = late.split(' ').next().unwrap();
            self.count(late_n, "late", "late", "Late (max in flight)");
            let on_time = late.rsplit("; ").next().unwrap().split('%').next().unwrap();
            let json = self.json()["on_time_percent"].as_f64().unwrap();
            assert_eq!(format!("{json:.2}"), on_time, "json on_time_percent");
            assert_eq!(
                self.csv_cell("on_time_percent"),
                on_time,
                "csv on_time_percent"
            );
            self.r
                .table_text("Sent within 1ms", self.i, &format!("{on_time}%"));
        }
        let unsent = self
            .after("   Unsent:     ")
            .map_or("0", |u| u.split(' ').next().unwrap());
        self.count(unsent, "unsent", "unsent", "Unsent (stopped)");
    }

    /// `Requests:`, `Timing:` and `Percentiles:`.
    fn rate_and_latency(&self) {
        let rate = self
            .after("   Requests:   ")
            .unwrap()
            .trim_end_matches(" per second");
        let json = versus::report::rate(self.json()["rps"].as_f64().unwrap());
        assert_eq!(rate, json, "json rps");
        assert_eq!(self.csv_cell("rps"), rate, "csv rps");
        self.r.table_text("Requests per second", self.i, rate);
        let timing = self.after("   Timing:     ").unwrap();
        if timing.starts_with('-') {
            assert!(self.json()["latency_ms"].is_null());
            return;
        }
        let [avg, min, max]: [f64; 3] = figures(timing).try_into().unwrap();
        self.latency(avg, "latency_ms", "mean", "mean_ms", "Latency avg");
        self.latency(min, "latency_ms", "min", "min_ms", "Latency min");
        self.latency(max, "latency_ms", "max", "max_ms", "Latency max");
        let stdev = self
            .block
            .iter()
            .find_map(|l| l.trim().strip_suffix(" standard deviation"))
            .unwrap();
        self.latency(
            micros(stdev),
            "latency_ms",
            "stdev",
            "stdev_ms",
            "Latency stdev",
        );
        for p in ["25", "50", "75", "90", "95", "99"] {
            let text = self.after(&format!("     {p}% in ")).unwrap();
            let (key, row) = (format!("p{p}"), format!("Latency p{p}"));
            self.latency(micros(text), "latency_ms", &key, &format!("p{p}_ms"), &row);
        }
    }

    /// `Errors:`, its kinds (a gRPC endpoint's failures with the code
    /// name in brackets) and the failed connects.
    fn errors(&self) {
        let share = self.after("   Errors: ").unwrap();
        self.r.table_text("Errors", self.i, share);
        let e = &self.json()["errors"];
        if let Some(rate) = e["rate"].as_f64() {
            assert_eq!(share, format!("{:.2}%", rate * 100.0), "json error rate");
            let csv: f64 = self.csv_cell("error_rate").parse().unwrap();
            assert_eq!(share, format!("{:.2}%", csv * 100.0), "csv error rate");
        }
        let at = self
            .block
            .iter()
            .position(|l| l.starts_with("   Errors: "))
            .unwrap();
        let kinds: BTreeMap<String, u64> = self.block[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("     "))
            .filter(|l| !l.starts_with("       "))
            .map(|l| kind_count(l.trim()))
            .collect();
        let json: BTreeMap<String, u64> = e["kinds"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .collect();
        assert_eq!(kinds, json, "json error kinds of {}", self.label());
        let (name, errors) = (self.r.col("name"), self.r.col("errors"));
        let csv: BTreeMap<String, u64> = self
            .r
            .csv_rows(self.label(), "error")
            .into_iter()
            .map(|r| (r[name].clone(), r[errors].parse().unwrap()))
            .collect();
        assert_eq!(kinds, csv, "csv error kinds");
        for (kind, n) in &kinds {
            let shown = versus::report::markdown::cell(kind);
            assert_eq!(
                md_row(&self.r.md, &shown)[self.i],
                n.to_string(),
                "markdown {kind}"
            );
            assert_eq!(
                html_row(&self.r.html, kind)[self.i],
                n.to_string(),
                "html {kind}"
            );
        }
        let failed = self
            .after("   Connect attempts: ")
            .map_or("0", |l| l.split(' ').next().unwrap());
        self.count(
            failed,
            "failed_connects",
            "failed_connects",
            "Failed connects",
        );
    }

    /// `Status:`, `Bytes:` and `First byte:`.
    fn responses(&self) {
        let status = self.after("   Status:     ").unwrap_or("");
        self.r.table_text("Status", self.i, status);
        let codes: BTreeMap<String, String> = status
            .split(", ")
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (code, n) = s.split_once(": ").unwrap();
                (code.to_string(), n.to_string())
            })
            .collect();
        let json: BTreeMap<String, String> = self.json()["status"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(c, n)| (c.clone(), n.to_string()))
            .collect();
        assert_eq!(codes, json, "json status");
        let (name, responses) = (self.r.col("name"), self.r.col("responses"));
        let csv: BTreeMap<String, String> = self
            .r
            .csv_rows(self.label(), "status")
            .into_iter()
            .map(|r| (r[name].clone(), r[responses].clone()))
            .collect();
        assert_eq!(codes, csv, "csv status");
        let bytes = self.after("   Bytes:      ").unwrap();
        let numbers: Vec<&str> = bytes
            .split(|c: char| !c.is_ascii_digit())
            .filter(|n| !n.is_empty())
            .collect();
        let [bytes_in, per_response, bytes_out]: [&str; 3] = numbers.try_into().unwrap();
        let b = &self.json()["bytes"];
        assert_eq!(b["in"].to_string(), bytes_in, "json bytes in");
        assert_eq!(b["out"].to_string(), bytes_out, "json bytes out");
        for (text, column, row) in [
            (bytes_in, "bytes_in", "Bytes in"),
            (per_response, "bytes_per_response", "Bytes per response"),
            (bytes_out, "bytes_out", "Bytes out"),
        ] {
            assert_eq!(self.csv_cell(column), text, "csv {column}");
            self.r.table_text(row, self.i, text);
        }
        match self.after("   First byte: ") {
            Some(l) => {
                let [avg, p99]: [f64; 2] = figures(l).try_into().unwrap();
                self.latency(avg, "ttfb_ms", "mean", "ttfb_mean_ms", "First byte avg");
                self.latency(p99, "ttfb_ms", "p99", "ttfb_p99_ms", "First byte p99");
            }
            None => assert!(self.json()["ttfb_ms"].is_null()),
        }
    }

    /// `Connects:` and `TLS:`.
    fn connections(&self) {
        let connects = self
            .after("   Connects:   ")
            .unwrap_or_else(|| panic!("no Connects: line at {}:\n{}", self.label(), self.r.text));
        let n = connects.split(' ').next().unwrap();
        self.count(n, "connects", "connects", "Connections");
        let during = connects
            .split("; ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        self.count(
            during,
            "connects_during_run",
            "connects_during_run",
            "Connections during the run",
        );
        let times = connects.split_once(", ").unwrap().1;
        let [avg, max]: [f64; 2] = figures(times).try_into().unwrap();
        self.latency(avg, "connect_ms", "mean", "connect_mean_ms", "Connect avg");
        self.latency(max, "connect_ms", "max", "connect_max_ms", "Connect max");
        match self.after("   TLS:        ") {
            Some(tls) => {
                let n = tls.split(' ').next().unwrap();
                self.count(n, "tls_handshakes", "tls_handshakes", "TLS handshakes");
                let [avg, max]: [f64; 2] =
                    figures(tls.split_once(", ").unwrap().1).try_into().unwrap();
                self.latency(avg, "tls_ms", "mean", "tls_mean_ms", "TLS avg");
                self.latency(max, "tls_ms", "max", "tls_max_ms", "TLS max");
            }
            None => {
                assert_eq!(self.json()["tls_handshakes"], 0, "json tls_handshakes");
                assert_eq!(self.csv_cell("tls_handshakes"), "0", "csv tls_handshakes");
            }
        }
        match self
            .after("   Conn. wait: ")
            .filter(|l| !l.starts_with("no "))
        {
            Some(wait) => {
                let n = wait.split(' ').next().unwrap();
                self.count(n, "connect_waits", "connect_waits", "Connection waits");
                let times = wait.split_once(", ").unwrap().1;
                let [avg, max]: [f64; 2] = figures(times).try_into().unwrap();
                let avg_at = ("connect_wait_mean_ms", "Connection wait avg");
                self.latency(avg, "connect_wait_ms", "mean", avg_at.0, avg_at.1);
                let max_at = ("connect_wait_max_ms", "Connection wait max");
                self.latency(max, "connect_wait_ms", "max", max_at.0, max_at.1);
            }
            None => {
                assert_eq!(self.json()["connect_waits"], 0, "json connect_waits");
                assert_eq!(self.csv_cell("connect_waits"), "0", "csv connect_waits");
            }
        }
        let spare = self
            .after("   Spare:      ")
            .map_or("0", |l| l.split(' ').next().unwrap());
        let (json, row) = ("spare_connects_failed", "Spare connects failed");
        match spare {
            "0" => assert_eq!(self.json()[json], 0, "json {json}"),
            n => self.count(n, json, json, row),
        }
        assert_eq!(self.csv_cell(json), spare, "csv {json}");
    }

    /// `Held back:` and `Abandoned:`.
    fn waits(&self) {
        let held = self
            .after("   Held back:  ")
            .map_or("-", |l| l.split(" with ").next().unwrap());
        self.r.table_text("Held back", self.i, held);
        let abandoned = self
            .after("   Abandoned:  ")
            .map_or("0", |l| l.split(' ').next().unwrap());
        self.count(abandoned, "abandoned", "abandoned", "Abandoned");
    }

    /// `Flows:`, and a suite's line per scenario below it.
    fn flows(&self) {
        let Some(at) = self
            .block
            .iter()
            .position(|l| l.starts_with("   Flows:      "))
        else {
            assert!(self.json()["flows"].is_null(), "json flows");
            return;
        };
        let all = self.block[at].trim_start_matches("   Flows:      ");
        self.flow_line(self.label().to_string(), "", all, &self.json()["flows"]);
        for line in self.block[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("     "))
        {
            let (name, figures) = line.trim().split_once(": ").unwrap();
            let json = self.json()["scenarios"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == name)
                .unwrap();
            self.flow_line(format!("{}: {name}", self.label()), name, figures, json);
        }
    }

    /// One line of whole instances, against the JSON's `json`, the
    /// Markdown and HTML flows rows `row` and the CSV flow row `name`.
    fn flow_line(&self, row: String, name: &str, line: &str, json: &Value) {
        let (counts, times) = line.split_once("; successful ones took ").unwrap();
        let (instances, rest) = counts.split_once(" instances, ").unwrap();
        let (succeeded, share) = rest.split_once(" successful ").unwrap();
        assert_eq!(json["instances"].to_string(), instances, "json instances");
        assert_eq!(json["succeeded"].to_string(), succeeded, "json succeeded");
        let [avg, p50, p99]: [f64; 3] = figures(times).try_into().unwrap();
        let d = &json["duration_ms"];
        for (text, key) in [(avg, "mean"), (p50, "p50"), (p99, "p99")] {
            same_latency(
                text,
                d[key].as_f64().unwrap() * 1e3,
                &format!("json flow {key}"),
            );
        }
        let successful = format!("{succeeded} {share}");
        let md = md_row(&self.r.md, &versus::report::markdown::cell(&row));
        let html = html_row(&self.r.html, &row);
        for cells in [&md, &html] {
            assert_eq!(cells[0], instances, "flows row {row}: {cells:?}");
            assert_eq!(cells[1], successful, "flows row {row}");
            same_latency(micros(&cells[2]), avg, "flows avg");
            same_latency(micros(&cells[3]), p50, "flows p50");
            same_latency(micros(&cells[4]), p99, "flows p99");
        }
        let csv = self.r.csv_row(self.label(), "flow", name);
        let cell = |c: &str| &csv[self.r.col(c)];
        assert_eq!(cell("instances"), instances, "csv instances");
        assert_eq!(cell("succeeded"), succeeded, "csv succeeded");
        same_latency(csv_ms(cell("mean_ms")), avg, "csv flow mean");
        same_latency(csv_ms(cell("p50_ms")), p50, "csv flow p50");
        same_latency(csv_ms(cell("p99_ms")), p99, "csv flow p99");
    }

    /// The table of steps (`steps`, with the columns only steps have) or
    /// of methods under `title`: every row in every format.
    fn parts(&self, title: &str, json: &str, part: &str, steps: bool) {
        let Some(at) = self.block.iter().position(|l| l.trim() == title) else {
            return;
        };
        let width = if steps { 8 } else { 4 };
        let label = self.label();
        // The table under its heading, in Markdown and HTML.
        let heading = title.trim_end_matches(':');
        let md = &self.r.md[self.r.md.find(&format!("## {heading}\n")).unwrap()..];
        let html = &self.r.html[self.r.html.find(&format!("<h2>{heading}</h2>")).unwrap()..];
        for line in self.block[at + 2..]
            .iter()
            .take_while(|l| l.starts_with("     "))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (name, figures) = words.split_at(words.len() - width);
            let name = name.join(" ");
            let p = self.json()[json]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name.as_str())
                .unwrap_or_else(|| panic!("json {part} {name}"));
            let latency = |text: &str, key: &str| {
                if text == "-" {
                    assert!(p["latency_ms"].is_null());
                } else {
                    same_latency(
                        micros(text),
                        p["latency_ms"][key].as_f64().unwrap() * 1e3,
                        key,
                    );
                }
            };
            latency(figures[2], "p50");
            latency(figures[3], "p99");
            let counts = [
                "requests",
                "errors",
                "failed_checks",
                "not_built",
                "skipped",
                "mismatched",
            ];
            let text_counts: Vec<&str> = [figures[0], figures[1]]
                .into_iter()
                .chain(figures[4..].iter().copied())
                .collect();
            for (key, text) in counts.iter().zip(&text_counts) {
                assert_eq!(p[*key].to_string(), *text, "json {part} {name} {key}");
            }
            let cell = versus::report::markdown::cell;
            let md = md_cells(md, &[&cell(&name), &cell(label)]);
            let html = html_cells(html, &[&name, label]);
            for (format, shown) in [("markdown", &md), ("html", &html)] {
                assert_eq!(
                    shown.len(),
                    figures.len(),
                    "{format} {part} {name}: {shown:?}"
                );
                for (k, (text, shown)) in figures.iter().zip(shown).enumerate() {
                    if k == 2 || k == 3 {
                        if *text == "-" {
                            assert_eq!(shown, "-", "{format} {part} {name}");
                        } else {
                            same_latency(
                                micros(shown),
                                micros(text),
                                &format!("{format} {part} {name}"),
                            );
                        }
                    } else {
                        assert_eq!(shown, text, "{format} {part} {name} column {k}");
                    }
                }
            }
            let csv = self.r.csv_row(label, part, &name);
            let columns = [
                "completed",
                "errors",
                "failed_checks",
                "not_built",
                "skipped",
                "mismatched",
            ];
            for (column, text) in columns.iter().zip(&text_counts) {
                assert_eq!(csv[self.r.col(column)], *text, "csv {part} {name} {column}");
            }
            for (column, text) in [("p50_ms", figures[2]), ("p99_ms", figures[3])] {
                if text != "-" {
                    same_latency(csv_ms(&csv[self.r.col(column)]), micros(text), column);
                }
            }
        }
    }
}

/// The text report's endpoint blocks, each without its `N. label` line.
fn endpoint_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let lines = text.lines().skip_while(|l| *l != "Endpoints:");
    for line in lines.take_while(|l| !l.starts_with("** ")) {
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            blocks.push(Vec::new());
        } else if let Some(b) = blocks.last_mut() {
            b.push(line);
        }
    }
    blocks
}

/// What follows `prefix` on the line of `md` that starts with it.
fn md_lines<'a>(md: &'a str, prefix: &str) -> &'a str {
    md.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?}:\n{md}"))
}

/// What follows `prefix` on the line of `text` that starts with it
/// (after the indent).
fn line_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
}

/// An error kind's line, `timeout (DEADLINE_EXCEEDED): 1` at a gRPC
/// endpoint: the kind as counted and its count.
fn kind_count(line: &str) -> (String, u64) {
    let (kind, n) = line.rsplit_once(": ").unwrap();
    let kind = match kind.rsplit_once(" (") {
        Some((k, code))
            if code
                .trim_end_matches(')')
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_') =>
        {
            k
        }
        _ => kind,
    };
    (kind.to_string(), n.parse().unwrap())
}

/// The latencies (`0.000250s`) among comma-separated figures, in µs.
fn figures(line: &str) -> Vec<f64> {
    line.split([',', ';', '('])
        .filter_map(|part| part.split_whitespace().next())
        .filter(|w| w.ends_with('s') && w.starts_with(|c: char| c.is_ascii_digit()))
        .map(micros)
        .collect()
}

/// The cells of a text table's line: separated by two spaces or more.
fn cells(line: &str) -> Vec<String> {
    line.trim()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// A CSV line's fields (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// A CSV latency in ms, as µs.
fn csv_ms(cell: &str) -> f64 {
    cell.parse::<f64>()
        .unwrap_or_else(|_| panic!("not ms: {cell:?}"))
        * 1e3
}

/// A latency as the formats print it (`850µs`, `1.250ms`, `0.0012s`), in µs.
fn micros(s: &str) -> f64 {
    let s = s.trim();
    let (n, scale) = if let Some(n) = s.strip_suffix("µs") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        panic!("not a latency: {s:?}")
    };
    n.parse::<f64>().unwrap_or_else(|_| panic!("{s:?}")) * scale
}

/// Two latencies printed with different precision (the text's seconds
/// have four decimals from 10 ms up, the tables four significant digits)
/// are the same figure.
fn same_latency(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1.0 + a.abs().max(b.abs()) * 0.005,
        "{what}: {a} µs against {b} µs"
    );
}

/// The cells of the Markdown row named `name`.
pub fn md_row(md: &str, name: &str) -> Vec<String> {
    md_cells(md, &[name])
}

/// The cells of the Markdown row whose first cells are `first`, after
/// them.
fn md_cells(md: &str, first: &[&str]) -> Vec<String> {
    let start = format!("| {} |", first.join(" | "));
    let line = md
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no row {start:?}:\n{md}"));
    line.trim_matches('|')
        .split(" | ")
        .skip(first.len())
        .map(|c| c.trim().to_string())
        .collect()
}

/// The cells of the HTML row whose first cell is `name`.
pub fn html_row(html: &str, name: &str) -> Vec<String> {
    html_cells(html, &[name])
}

/// The cells of the HTML row whose first cells are `first`, after them.
fn html_cells(html: &str, first: &[&str]) -> Vec<String> {
    let text: String = first
        .iter()
        .map(|c| format!("<td class=\"text\">{c}</td>"))
        .collect();
    let at = html
        .find(&format!("<tr><td>{}</td>", first[0]))
        .filter(|_| first.len() == 1)
        .or_else(|| html.find(&format!("<tr>{text}")))
        .unwrap_or_else(|| panic!("no row {first:?}"));
    let row = &html[at..at + html[at..].find("</tr>").unwrap()];
    row.split("<td")
        .skip(1 + first.len())
        .map(|c| {
            let c = &c[c.find('>').unwrap() + 1..];
            c.trim_end_matches("</td>").to_string()
        })
        .collect()
}
