//! `--junit FILE`: the run's verdicts as JUnit XML, the test report CI
//! systems (Jenkins, GitLab, GitHub Actions' test reporters) show. Each
//! threshold checked is a test case, failed with its measured value and
//! its limit; each endpoint is one, failed when it failed every request;
//! each flow step at each endpoint is one, failed when it met an error,
//! a failed check or a request it could not build. The file follows the
//! JUnit schema Jenkins reads (`tests/fixtures/junit.xsd`). Every text is
//! escaped for XML; control characters are shown as `\u{..}`, since XML
//! 1.0 cannot hold them at all.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::info::Report;

/// One test case: its class (the suite's name and the endpoint), its
/// name, and its failure's message and details when it failed.
struct Case {
    class: String,
    name: String,
    failure: Option<(String, String)>,
}

/// A suite of cases.
struct Suite {
    name: &'static str,
    cases: Vec<Case>,
}

impl Suite {
    fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_some()).count()
    }
}

/// The thresholds: a case each, per endpoint it was checked at.
fn thresholds(r: &Report<'_>) -> Suite {
    let cases = r
        .checks
        .iter()
        .map(|c| {
            let name = match &c.endpoint {
                Some(e) => format!("{} [{e}]", c.threshold),
                None => c.threshold.clone(),
            };
            Case {
                class: "versus.thresholds".into(),
                failure: (!c.passed).then(|| {
                    let message = format!("{}, limit {}", c.actual, c.threshold);
                    let detail = format!("measured: {}\nlimit: {}", c.actual, c.threshold);
                    (message, detail)
                }),
                name,
            }
        })
        .collect();
    Suite {
        name: "thresholds",
        cases,
    }
}

/// The endpoints: a case each, failed when every request failed there.
fn endpoints(r: &Report<'_>) -> Suite {
    let cases = (r.info.endpoints.iter())
        .zip(&r.run.stats.endpoints)
        .map(|(e, s)| Case {
            class: "versus.endpoints".into(),
            name: match e.named {
                true => format!("{} {}", e.label, e.url),
                false => e.url.clone(),
            },
            failure: s.failed_every_request().then(|| {
                let kinds: Vec<String> = (s.error_kinds().into_iter())
                    .map(|(kind, n)| format!("{kind}: {n}"))
                    .collect();
                (
                    format!("failed every request ({})", s.completed()),
                    kinds.join("\n"),
                )
            }),
        })
        .collect();
    Suite {
        name: "endpoints",
        cases,
    }
}

/// A flow's steps: a case per endpoint and step, failed when the step
/// met an error, failed its check or could not be built there.
fn steps(r: &Report<'_>) -> Suite {
    let mut cases = Vec::new();
    for (e, s) in r.info.endpoints.iter().zip(&r.run.stats.endpoints) {
        for p in &s.steps {
            let failed = p.errors > 0 || p.failed_checks > 0 || p.not_built > 0;
            cases.push(Case {
                class: format!("versus.steps.{}", e.label),
                name: p.name.clone(),
                failure: failed.then(|| {
                    let message = format!(
                        "{} errors, {} failed checks in {} requests; {} not built",
                        p.errors, p.failed_checks, p.requests, p.not_built
                    );
                    let detail = format!(
                        "requests: {}\nerrors: {}\nfailed checks: {}\nnot built: {}\nskipped: {}\nmismatched: {}",
                        p.requests, p.errors, p.failed_checks, p.not_built, p.skipped, p.mismatched
                    );
                    (message, detail)
                }),
            });
        }
    }
    Suite {
        name: "steps",
        cases,
    }
}

/// `s` as XML text or attribute value: markup and quotes escaped, line
/// breaks and tabs kept as character references (an attribute would
/// fold them), other control characters shown as `\u{..}`.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in crate::display::escape_terminal(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// Write the JUnit XML of `r`.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let mut suites = vec![thresholds(r), endpoints(r)];
    let flow = steps(r);
    if !flow.cases.is_empty() {
        suites.push(flow);
    }
    let time = format!("{:.3}", r.run.elapsed.as_secs_f64());
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"versus\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">"
    );
    for s in &suites {
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{time}\" timestamp=\"{}\" hostname=\"{}\">",
            s.name,
            s.cases.len(),
            s.failures(),
            xml(&r.header.start),
            xml(&r.header.host)
        );
        for c in &s.cases {
            let head = format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                xml(&c.class),
                xml(&c.name)
            );
            match &c.failure {
                None => {
                    let _ = writeln!(x, "{head}/>");
                }
                Some((message, detail)) => {
                    let _ = writeln!(
                        x,
                        "{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                        xml(message),
                        s.name,
                        xml(detail)
                    );
                }
            }
        }
        let _ = writeln!(x, "  </testsuite>");
    }
    x.push_str("</testsuites>\n");
    out.write_all(x.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_quotes_and_control_characters_are_escaped() {
        assert_eq!(
            xml("a<b>&\"c\"'d'\n\t\u{1b}[2J"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;&#10;&#9;\\u{1b}[2J"
        );
    }
}
