//! TLS from the command line: the run's client configuration (`--insecure`,
//! `--cacert`, the client certificate of `--cert` and `--key`), and an
//! endpoint's own where it has a client certificate of its own
//! (`--endpoint-cert`, `--endpoint-key`). Every file is read and checked
//! here, before anything is sent.

use std::path::PathBuf;
use std::sync::Arc;

use super::{endpoint_index, UsageError};
use crate::cli::RunArgs;
use crate::endpoint::{tls_config, ClientCert, EndpointSpec, HttpVersion, Scheme, TlsOptions};

/// The run's TLS configuration when an endpoint uses TLS; each endpoint
/// given a certificate of its own gets its own configuration
/// (`EndpointSpec::tls`).
///
/// # Errors
/// A file that cannot be read, a key that is not its certificate's, a
/// per-endpoint flag that names no endpoint, or one on an endpoint
/// without TLS.
pub(super) fn configs(
    args: &RunArgs,
    endpoints: &mut [EndpointSpec],
    version: HttpVersion,
) -> Result<Option<Arc<rustls::ClientConfig>>, UsageError> {
    let run = TlsOptions {
        insecure: args.insecure,
        ca_file: args.cacert.clone(),
        client: args.cert.as_ref().map(|cert| ClientCert {
            cert: cert.clone(),
            key: args.key.clone(),
            flags: ["--cert", "--key"],
        }),
    };
    for (i, own) in own_certs(args, endpoints)?.into_iter().enumerate() {
        if let Some(client) = own {
            let opts = TlsOptions {
                client: Some(client),
                ..run.clone()
            };
            let config = tls_config(&opts, version)
                .map_err(|e| UsageError(format!("endpoint {}: {e}", endpoints[i].label)))?;
            endpoints[i].tls = Some(config);
        }
    }
    if !endpoints.iter().any(|e| e.scheme == Scheme::Https) {
        return Ok(None);
    }
    tls_config(&run, version).map(Some).map_err(UsageError)
}

/// Each endpoint's own client certificate (`--endpoint-cert`, with its
/// `--endpoint-key`), if it has one.
fn own_certs(
    args: &RunArgs,
    endpoints: &[EndpointSpec],
) -> Result<Vec<Option<ClientCert>>, UsageError> {
    let mut certs: Vec<Option<ClientCert>> = vec![None; endpoints.len()];
    for arg in &args.endpoint_certs {
        let (i, file) = named("--endpoint-cert", arg, endpoints)?;
        if endpoints[i].scheme != Scheme::Https {
            return Err(UsageError(format!(
                "--endpoint-cert {arg:?}: endpoint {} does not use TLS: a client certificate needs https://, wss:// or grpcs://",
                endpoints[i].label
            )));
        }
        certs[i] = Some(ClientCert {
            cert: file,
            key: None,
            flags: ["--endpoint-cert", "--endpoint-key"],
        });
    }
    for arg in &args.endpoint_keys {
        let (i, file) = named("--endpoint-key", arg, endpoints)?;
        let cert = certs[i].as_mut().ok_or_else(|| {
            UsageError(format!(
                "--endpoint-key {arg:?}: endpoint {} has no --endpoint-cert: give its certificate too",
                endpoints[i].label
            ))
        })?;
        cert.key = Some(file);
    }
    Ok(certs)
}

/// The endpoint and file of a `NAME=FILE` argument of `flag`.
fn named(
    flag: &str,
    arg: &str,
    endpoints: &[EndpointSpec],
) -> Result<(usize, PathBuf), UsageError> {
    let (who, file) = arg
        .split_once('=')
        .filter(|(_, file)| !file.is_empty())
        .ok_or_else(|| UsageError(format!("{flag} {arg:?}: expected NAME=FILE")))?;
    let i = endpoint_index(endpoints, who).ok_or_else(|| {
        UsageError(format!(
            "{flag} {arg:?}: no endpoint is named {who:?} (use a label given as NAME=URL, or a position from 0)"
        ))
    })?;
    Ok((i, PathBuf::from(file)))
}
