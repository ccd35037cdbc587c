//! A request stream checked, on the input thread, against what each
//! endpoint makes of its records: one an endpoint's template cannot make a
//! request of (a value it reads is not there), or whose message does not
//! fit a gRPC endpoint's method, is malformed (counted, its line number
//! and the reason reported) and sent to no endpoint.

use std::sync::Arc;

use crate::endpoint::EndpointSpec;
use crate::grpc::{parse_request, Service};
use crate::input::{Next, Source};
use crate::model::{Malformed, Request};
use crate::scenario::LineTemplate;

/// A request stream whose records are checked (see the module).
pub struct Checked {
    source: Box<dyn Source>,
    endpoints: Vec<Check>,
    records: u64,
}

/// What one endpoint's requests are checked by.
struct Check {
    label: String,
    template: Option<Arc<LineTemplate>>,
    service: Option<Arc<Service>>,
}

impl Checked {
    /// `source` checked against the endpoints of `endpoints` with a
    /// template or a gRPC schema, or `source` itself when there are none.
    pub fn wrap(source: Box<dyn Source>, endpoints: &[Arc<EndpointSpec>]) -> Box<dyn Source> {
        let endpoints: Vec<Check> = endpoints
            .iter()
            .filter(|e| e.template.is_some() || e.grpc.is_some())
            .map(|e| Check {
                label: e.label.clone(),
                template: e.template.clone(),
                service: e.grpc.clone(),
            })
            .collect();
        if endpoints.is_empty() {
            return source;
        }
        Box::new(Checked {
            source,
            endpoints,
            records: 0,
        })
    }

    /// Why `req` cannot be sent, if it cannot. A request type shared by
    /// several gRPC endpoints (one schema) that send the record as it is
    /// is checked once.
    fn check(&self, req: &Request) -> Option<String> {
        let mut seen: Vec<prost_reflect::MessageDescriptor> = Vec::new();
        for e in &self.endpoints {
            let own;
            let req = match &e.template {
                Some(t) => match t.render(req) {
                    Ok(r) => {
                        own = r;
                        &own
                    }
                    Err(why) => return Some(format!("endpoint {}'s template {why}", e.label)),
                },
                None => req,
            };
            let Some(service) = &e.service else { continue };
            let label = &e.label;
            let Some(method) = service.method(req.target.as_deref()) else {
                return Some(match req.target.as_deref() {
                    Some(p) if crate::grpc::is_method_path(p) => {
                        format!("its path {p} names no method in endpoint {label}'s schema")
                    }
                    _ => format!(
                        "endpoint {label}'s URL names no gRPC method and the record names none: \
                         give one in the URL (grpc://HOST:PORT/package.Service/Method) or as the \
                         record's path"
                    ),
                });
            };
            if e.template.is_none() && self.endpoints.len() > 1 {
                if seen.contains(&method.input) {
                    continue;
                }
                seen.push(method.input.clone());
            }
            if let Err(reason) = parse_request(&method.input, &req.body) {
                return Some(reason);
            }
        }
        None
    }
}

impl Source for Checked {
    fn next(&mut self) -> std::io::Result<Next> {
        let next = self.source.next()?;
        let Next::Request(r) = &next else {
            return Ok(next);
        };
        self.records += 1;
        match self.check(r) {
            None => Ok(next),
            Some(reason) => Ok(Next::Malformed(Malformed {
                location: self
                    .source
                    .location()
                    .unwrap_or_else(|| format!("record {}", self.records)),
                reason,
            })),
        }
    }

    crate::input::wrapped_source!(source);
}
