//! What a renderer reads: a run's description, statistics, header,
//! threshold checks and series, from a live run or a saved one alike.

use crate::results::info::RunInfo;

/// Everything a renderer (JSON, Markdown, CSV, HTML) reads.
pub struct Report<'a> {
    /// The run's description.
    pub info: &'a RunInfo,
    /// The run's statistics.
    pub run: &'a crate::engine::RunOutput,
    /// Who ran it where and when (a saved file's header, or a live run's).
    pub header: &'a crate::results::format::Header,
    /// Threshold results.
    pub checks: &'a [super::threshold::Check],
    /// Per-interval figures, when kept.
    pub series: Option<&'a crate::results::series::Series>,
    /// A sweep's steps.
    pub steps: Option<&'a crate::results::steps::Steps>,
    /// A capacity search's result, per endpoint.
    pub capacity: Option<&'a [super::capacity::Capacity]>,
}
