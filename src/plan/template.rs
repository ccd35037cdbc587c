//! `--template NAME=SPEC`: each compiled for the endpoint it names, as an
//! HTTP request or a gRPC message (see `scenario::LineTemplate`).

use std::sync::Arc;

use super::{endpoint_index, UsageError};
use crate::endpoint::EndpointSpec;
use crate::model::Style;
use crate::scenario::LineTemplate;

/// Give each endpoint a `--template` names its template. In
/// single-request mode (`single`) there are no lines to make requests of.
///
/// # Errors
/// A template without its endpoint's name, for an endpoint there is not,
/// for a WebSocket endpoint, a second one for an endpoint, one in
/// single-request mode, or one that does not compile.
pub(super) fn add_templates(
    list: &[String],
    endpoints: &mut [EndpointSpec],
    single: bool,
) -> Result<(), UsageError> {
    for arg in list {
        let fail = |problem: &str| UsageError(format!("--template {arg:?}: {problem}"));
        let (who, spec) = arg
            .split_once('=')
            .ok_or_else(|| fail("expected NAME=SPEC, e.g. 'rest=GET /items/{{ id }}'"))?;
        if single {
            return Err(fail(
                "a template makes requests of a stream's lines, and single-request mode (--method, --body) reads none: give the request itself",
            ));
        }
        let at = endpoint_index(endpoints, who).ok_or_else(|| {
            fail(&format!(
                "no endpoint is named {who:?} (use a label given as NAME=URL, or a position from 0)"
            ))
        })?;
        let endpoint = &mut endpoints[at];
        if endpoint.template.is_some() {
            return Err(fail(&format!(
                "endpoint {} has a template already: give one per endpoint",
                endpoint.label
            )));
        }
        let grpc = match endpoint.style {
            Style::Grpc => true,
            Style::Post | Style::Get => false,
            Style::WebSocket => {
                return Err(fail(
                    "a WebSocket endpoint sends each line as its message: templates are for HTTP and gRPC endpoints",
                ))
            }
        };
        let template = LineTemplate::parse(spec, grpc).map_err(|e| fail(&e))?;
        endpoint.template = Some(Arc::new(template));
    }
    Ok(())
}
