//! Before the run: each gRPC endpoint's schema (the `--proto` files, or
//! its reflection service) and the methods it calls, resolved into its
//! [`EndpointSpec::grpc`], and the single request checked against them
//! (a stream's records are checked as they are read: `checked.rs`).

use std::sync::Arc;

use super::{Plan, RequestMode};
use crate::endpoint::EndpointSpec;
use crate::grpc::{find_method, parse_request, split_method, Service};
use crate::model::Style;

/// Why the gRPC set-up failed.
#[derive(Debug)]
pub enum SetupError {
    /// A schema problem (a method not in it, no reflection service, a
    /// request that does not fit): exit 2, the message names the fix.
    Usage(String),
    /// A server that could not be reached for its reflection: exit 1.
    Failed(String),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Usage(m) | SetupError::Failed(m) => f.write_str(m),
        }
    }
}

/// Resolve every gRPC endpoint's schema and methods into the plan's
/// endpoints, and check the single request (if that is the mode) against
/// them. Reflection, where there is no `--proto`, opens one connection per
/// endpoint and closes it.
///
/// # Errors
/// See [`SetupError`].
pub fn setup(plan: &mut Plan) -> Result<(), SetupError> {
    for e in 0..plan.engine.endpoints.len() {
        let spec = plan.engine.endpoints[e].clone();
        if spec.style != Style::Grpc || spec.grpc.is_some() {
            continue;
        }
        let label = &spec.label;
        let own = spec
            .base_path
            .split('?')
            .next()
            .map(|p| p.trim_matches('/'))
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        let mut names: Vec<String> = own.iter().cloned().collect();
        for (at, m) in &plan.grpc.step_methods {
            if *at == e && !names.contains(m) {
                names.push(m.clone());
            }
        }
        // With --proto, a library flow may name its methods only at the
        // call; reflection needs to know which services to ask for.
        if names.is_empty() && plan.grpc.schema.is_none() {
            return Err(SetupError::Usage(format!(
                "endpoint {label}: no gRPC method: name it in the URL's path, grpc://{}/package.Service/Method",
                spec.authority
            )));
        }
        for n in &names {
            if split_method(n).is_none() {
                return Err(SetupError::Usage(format!(
                    "endpoint {label}: {n:?} is not a gRPC method: write the URL as grpc://{}/package.Service/Method",
                    spec.authority
                )));
            }
        }
        let (pool, from) = match &plan.grpc.schema {
            Some(pool) => (pool.clone(), "the --proto files"),
            None => {
                let mut services: Vec<String> = Vec::new();
                for n in &names {
                    if let Some((s, _)) = split_method(n) {
                        if !services.iter().any(|x| x == s) {
                            services.push(s.to_string());
                        }
                    }
                }
                let addrs = crate::endpoint::resolve(&spec.host, spec.port).map_err(|err| {
                    SetupError::Failed(format!(
                        "endpoint {label}: cannot resolve {}: {err}",
                        spec.host
                    ))
                })?;
                let pool = crate::endpoint::grpc::reflect(
                    spec.clone(),
                    addrs,
                    plan.engine.tls.clone(),
                    plan.engine.transport.clone(),
                    &services,
                )
                .map_err(|err| match err {
                    crate::endpoint::grpc::ReflectError::Unreachable(m) => SetupError::Failed(m),
                    crate::endpoint::grpc::ReflectError::Schema(s) => SetupError::Usage(s.0),
                })?;
                (pool, "the server's reflection")
            }
        };
        let mut methods = Vec::with_capacity(names.len());
        for n in &names {
            let m = find_method(&pool, n).map_err(|err| {
                SetupError::Usage(format!(
                    "endpoint {label}: {err} (schema from {from}): fix the method's name{}",
                    if plan.grpc.schema.is_some() {
                        ", or give the .proto that defines it with --proto"
                    } else {
                        ""
                    }
                ))
            })?;
            methods.push(m);
        }
        let service = Service {
            methods,
            has_default: own.is_some(),
            pool,
            json: plan.grpc.json,
        };
        let mut resolved: EndpointSpec = (*spec).clone();
        resolved.grpc = Some(Arc::new(service));
        plan.engine_mut().endpoints[e] = Arc::new(resolved);
    }
    if let RequestMode::Single(r) = &plan.mode {
        for spec in &plan.engine.endpoints {
            let Some(service) = &spec.grpc else { continue };
            let Some(method) = service.method(None) else {
                return Err(SetupError::Usage(format!(
                    "endpoint {}: no gRPC method to call with --body: name it in the URL's path, grpc://{}/package.Service/Method",
                    spec.label, spec.authority
                )));
            };
            parse_request(&method.input, &r.body).map_err(|reason| {
                SetupError::Usage(format!(
                    "--body: {reason} (endpoint {}): give the request as proto3 JSON, e.g. --body '{{}}'",
                    spec.label
                ))
            })?;
        }
    }
    Ok(())
}
