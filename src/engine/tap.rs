//! Taps: what sees each request as a core carries it out. The engine never
//! prints or writes files itself; `-v`/`-vv` (`report::verbose::Printer`)
//! and `--mismatches` (`report::mismatch_log::MismatchLog`) are taps the
//! settings holds, called on the core where the request ran. A tap must be
//! cheap when it has nothing to do: `outcome` is called only for taps that
//! ask for every outcome, `mismatch` only on a mismatch, `failed` only on
//! a request that met an error.

use super::Settings;
use crate::compare::Finding;
use crate::model::Outcome;
use crate::model::Request;

/// Sees requests as the cores carry them out, and mismatches as they are
/// judged (on the judge thread). Shared by every core.
pub trait Tap: Send + Sync + std::fmt::Debug {
    /// True when the tap wants [`Tap::outcome`] for every request (it is
    /// then called per request and endpoint: keep it for diagnostics).
    fn wants_outcomes(&self) -> bool {
        false
    }

    /// One counted request's outcome at endpoint `endpoint`.
    fn outcome(&self, settings: &Settings, endpoint: usize, req: &Request, outcome: &Outcome) {
        let _ = (settings, endpoint, req, outcome);
    }

    /// One mismatched request (or flow step) named `group`: every
    /// endpoint's outcome, in endpoint order, and the differences found.
    fn mismatch(
        &self,
        settings: &Settings,
        req: &Request,
        group: &str,
        outcomes: &[Option<&Outcome>],
        findings: &[Finding],
    ) {
        let _ = (settings, req, group, outcomes, findings);
    }

    /// One request of a stream (number `seq`) that met an error at some
    /// endpoint (a failure, an error status or answer) and did not
    /// mismatch: called once for it, on its core, or on the judge thread
    /// when its answers differed.
    fn failed(&self, settings: &Settings, req: &Request, seq: u64) {
        let _ = (settings, req, seq);
    }
}
