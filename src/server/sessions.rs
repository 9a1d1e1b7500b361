//! Every live session of a host, for the messages that concern all of them.
//!
//! Today that is `notifications/tools/list_changed` after a hot reload. Sessions join when
//! created and leave when dropped; the set holds them weakly, so it never keeps one alive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::{json, Value};

use super::Host;
use crate::mcp::jsonrpc::notification;

/// A session as the set sees it.
pub(crate) trait Listener: Send + Sync {
    /// Sends `message` if the session is initialized; returns whether it did.
    fn announce(&self, message: &Value) -> bool;
}

#[derive(Default)]
pub struct Sessions {
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Weak<dyn Listener>>>,
}

impl Sessions {
    pub(crate) fn join(&self, session: Weak<dyn Listener>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(id, session);
        id
    }

    pub(crate) fn leave(&self, id: u64) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Sends `message` to every initialized session; returns how many got it.
    pub fn broadcast(&self, message: &Value) -> usize {
        let listeners: Vec<Arc<dyn Listener>> = self.live.lock().unwrap_or_else(|e| e.into_inner()).values().filter_map(Weak::upgrade).collect();
        listeners.iter().filter(|l| l.announce(message)).count()
    }
}

/// Tells every session when the catalog of tools changes, for as long as the host lives.
pub fn announce_tool_changes(host: &Arc<Host>) {
    let mut changes = host.registry.subscribe();
    let host = Arc::downgrade(host);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let Some(host) = host.upgrade() else { return };
            let sent = host.sessions.broadcast(&notification("notifications/tools/list_changed", json!({})));
            tracing::info!(sessions = sent, "told clients the tool list changed");
        }
    });
}
