//! What a plan is made for besides the run's flags: the endpoints, their
//! own headers and faults, the load's stages and the default stop. The
//! command line gives them ([`Given::of`]), or a scenario file does
//! (`super::scenario::given`); either way they reach the plan as written,
//! each with the name its errors call it by.

use crate::cli::RunArgs;

/// One option as written, and what an error calls it: `--fault`, or the
/// scenario file's.
#[derive(Clone, Copy)]
pub struct Said<'a> {
    /// The text, in the command line's words (`NAME=FAULT`).
    pub text: &'a str,
    /// The flag, or where in a scenario file it came from.
    pub by: &'static str,
}

impl<'a> Said<'a> {
    /// Each text `by` gave: `list.iter().map(Said::by("--fault"))`.
    pub fn by(by: &'static str) -> impl Fn(&'a String) -> Said<'a> {
        move |text| Said { text, by }
    }
}

/// The endpoints and load a plan is made for.
pub struct Given<'a> {
    /// `NAME=URL` or URL, in order.
    pub endpoints: &'a [String],
    /// Headers for one endpoint, as `NAME=Header: value`.
    pub endpoint_headers: Vec<Said<'a>>,
    /// Network faults for one endpoint, as `NAME=FAULT`.
    pub faults: Vec<Said<'a>>,
    /// The load over time, as `--stages` writes it.
    pub stages: Option<Said<'a>>,
    /// When the run stops, as `--stop-after` writes it.
    pub stop_after: Option<&'a str>,
}

impl<'a> Given<'a> {
    /// The command line's own.
    pub fn of(args: &'a RunArgs) -> Given<'a> {
        let said = Said::by;
        Given {
            endpoints: &args.endpoints,
            endpoint_headers: args
                .endpoint_headers
                .iter()
                .map(said("--endpoint-header"))
                .collect(),
            faults: args.faults.iter().map(said("--fault")).collect(),
            stages: args.stages.as_ref().map(said("--stages")),
            stop_after: args.stop_after.as_deref(),
        }
    }
}
