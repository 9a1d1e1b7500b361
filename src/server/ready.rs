//! Readiness: whether this host should be sent traffic now (`/readyz`), as opposed to whether
//! it is alive (`/healthz`). Ready means the first load of the plugins is done, the task store
//! answers, and shutdown has not begun.

use serde_json::{json, Value};

use super::Host;

/// Each readiness check, with why it fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// The first load of the plugin directory is done (every plugin served or refused).
    pub plugins_loaded: bool,
    /// `Err` says why the task store is not reachable from here.
    pub store: Result<(), String>,
    /// Shutdown has begun: calls in flight are finishing and nothing new should come.
    pub draining: bool,
}

impl Readiness {
    /// Whether every check passes.
    pub fn is_ready(&self) -> bool {
        self.plugins_loaded && self.store.is_ok() && !self.draining
    }

    /// The body `/readyz` answers: each check by name, and what is not ready.
    pub fn to_json(&self) -> Value {
        let check = |ok: bool, problem: &str| match ok {
            true => json!({ "ok": true }),
            false => json!({ "ok": false, "problem": problem }),
        };
        let store = match &self.store {
            Ok(()) => json!({ "ok": true }),
            Err(problem) => json!({ "ok": false, "problem": problem }),
        };
        json!({
            "status": if self.is_ready() { "ready" } else { "not ready" },
            "checks": {
                "plugins_loaded": check(self.plugins_loaded, "the plugins are still loading"),
                "store_reachable": store,
                "not_draining": check(!self.draining, "shutting down: finishing the calls in flight"),
            }
        })
    }
}

impl Host {
    /// The readiness checks now; `draining` is the transport's (it knows when shutdown began).
    /// The store is pinged at most once a second, however often this is asked.
    pub async fn readiness(&self, draining: bool) -> Readiness {
        Readiness { plugins_loaded: self.registry.is_loaded(), store: self.engine.store_reachable().await, draining }
    }
}
