//! Stopping a run from outside: Ctrl-C, a failed input, a test. One
//! [`Stop`] is shared by every core; each core watches it without touching
//! it per request.

use std::sync::Arc;

use tokio::sync::watch;

/// A handle that stops a run: sending ends, requests in flight get the
/// drain period, then the report is made.
#[derive(Clone, Debug)]
pub struct Stop {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for Stop {
    fn default() -> Self {
        Stop::new()
    }
}

impl Stop {
    /// A handle that has not fired.
    pub fn new() -> Stop {
        Stop {
            tx: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Stop the run. Idempotent.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }

    /// True once [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.tx.borrow()
    }

    /// Wait until the run is stopped.
    pub async fn stopped(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}
