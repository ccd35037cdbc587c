//! The pre-flight check of `versus run`: before the clock starts, one
//! connection to every endpoint (name lookup, TCP, TLS, the HTTP
//! handshake), all at once, so that a wrong port, host or certificate is
//! one line naming the endpoint and the reason instead of a run of
//! failures.

use std::rc::Rc;

use super::Settings;
use crate::endpoint::{self, Link, Prepared, Slot};
use crate::model::Failure;

/// Check every endpoint of `settings`: per endpoint, in order, why it cannot
/// be reached (`None` when it answered the handshake).
pub fn check(settings: &Settings) -> Vec<Option<String>> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            return vec![Some(format!("cannot start the check: {e}")); settings.endpoints.len()]
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let checks = settings.endpoints.iter().map(|spec| async move {
            let addrs = endpoint::resolve(&spec.host, spec.port)
                .map_err(|e| format!("{}: {e}", Failure::Dns))?;
            let prepared = Prepared::new(
                spec.clone(),
                addrs,
                settings.tls.clone(),
                settings.transport.clone(),
            )
            .map_err(|e| e.to_string())?;
            let mut slot = Slot::new(Rc::new(Link::new(prepared)));
            slot.warm().await.map(|_| ()).map_err(|f| match f {
                Failure::Tls(r) => format!("{}: {}", r.name(), r.fix()),
                f => f.to_string(),
            })
        });
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .map(Result::err)
            .collect()
    })
}
