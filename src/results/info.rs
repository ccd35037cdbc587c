//! What a report needs to know about a run besides its statistics: the
//! endpoints as the user named them, the lead window and whether answers
//! were compared. A live run's plan and a saved run both produce one, so
//! every renderer works the same on either.

use std::fmt;

/// One endpoint as reports show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EndpointInfo {
    /// The label used in every report.
    pub label: String,
    /// True when the user gave the label (`NAME=URL`).
    #[serde(default)]
    pub named: bool,
    /// The URL as shown (secrets masked unless `--show-secrets`).
    pub url: String,
}

impl fmt::Display for EndpointInfo {
    /// As the text report names an endpoint: `label "url"`, or `"url"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.named {
            write!(
                f,
                "{} {:?}",
                crate::display::escape_terminal(&self.label),
                self.url
            )
        } else {
            write!(f, "{:?}", self.url)
        }
    }
}

/// Which request lines a saved run keeps (`--record`), from the fewest
/// to the most.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Record {
    /// None: the statistics alone (a merged file keeps none).
    None,
    /// Those of requests whose answers mismatched or that met an error.
    Mismatches,
    /// Every request the run read.
    #[default]
    Requests,
}

impl Record {
    /// The name, as `--record` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Record::None => "none",
            Record::Mismatches => "mismatches",
            Record::Requests => "requests",
        }
    }
}

/// The description of a run that reports render from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunInfo {
    /// Endpoints in command-line order; the first is the reference.
    pub endpoints: Vec<EndpointInfo>,
    /// Lead window per core, in requests.
    pub window: usize,
    /// True when answers were compared (`--compare` not `none`).
    pub comparison: bool,
    /// Open model: the scheduled rate, per second per endpoint.
    pub rate: Option<f64>,
    /// Open model: `--max-in-flight`.
    pub max_in_flight: usize,
    /// Noise mode: the endpoint that is the reference's second copy.
    pub twin: Option<usize>,
    /// `-v`: show mismatch samples.
    pub verbose: u8,
    /// `--mismatches`: mismatched requests seen, lines written, and the
    /// limit, when the report was made.
    pub logged: Option<(u64, u64, u64)>,
    /// What the run noted before it started (an optional endpoint the
    /// pre-flight check skipped), shown at the top of the report.
    pub notes: Vec<String>,
    /// `--warmup`, as given (`50`, `2s`); saved runs keep it from the
    /// files that wrote it on.
    pub warmup: Option<String>,
    /// The I/O driver of plain-TCP HTTP/1.1 connections (`epoll`,
    /// `io_uring`); saved runs keep it from version 0.1 files on that
    /// wrote it.
    pub io: Option<String>,
    /// `--stages` as given; saved runs keep it.
    pub stages: Option<String>,
    /// `--sweep`'s steps; saved runs keep them.
    pub sweep: Option<crate::engine::shape::Sweep>,
    /// `--find-capacity`'s search; saved runs keep it.
    pub search: Option<crate::engine::shape::Search>,
    /// The request lines the saved run keeps (`--record`); `None` for a
    /// live run that saves none.
    pub record: Option<Record>,
    /// `--record mismatches`: the requests that mismatched or met an
    /// error, and the lines written for them (fewer once
    /// `--record-limit` is reached), when the report was made.
    pub recorded: Option<(u64, u64)>,
}

impl RunInfo {
    /// Whether the load changed over the run (`--stages`, `--sweep`).
    pub fn load_varies(&self) -> bool {
        self.stages.is_some() || self.sweep.is_some() || self.search.is_some()
    }

    /// The steps of a sweep or a capacity search, none seen yet, of
    /// intervals `interval` long.
    pub fn steps(&self, interval: std::time::Duration) -> Option<super::steps::Steps> {
        super::steps::Steps::of(self.sweep.as_ref(), self.search.as_ref(), interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label from a saved file made elsewhere cannot drive the terminal.
    #[test]
    fn an_endpoint_is_shown_with_control_characters_escaped() {
        let e = EndpointInfo {
            label: "a\u{1b}[2Jb".into(),
            named: true,
            url: "http://h/\u{1b}".into(),
        };
        let shown = e.to_string();
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert_eq!(shown, r#"a\u{1b}[2Jb "http://h/\u{1b}""#);
    }
}
