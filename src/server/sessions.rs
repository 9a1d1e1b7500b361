//! Every live session of a host, for the messages that concern all of them.
//!
//! That is `notifications/{tools,resources,prompts}/list_changed` after a hot reload, and
//! `notifications/resources/updated` to the sessions subscribed to a resource a plugin says
//! changed, when the policy lets their principals read it, and the host's own log messages
//! (`corral dev`'s build errors). Sessions join when created and leave when dropped; the set holds them weakly, so it
//! never keeps one alive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::json;

use crate::mcp::jsonrpc::{notification, Outgoing};
use crate::mcp::types::LogLevel;
use crate::principal::Owner;

/// `notifications/{kind}/list_changed`, made once for every listener it goes to: its method,
/// which a listen stream filters on (and sends again under its subscription), and the message a
/// session sends as it is.
pub(crate) struct ListChanged {
    pub method: String,
    pub message: Outgoing,
}

impl ListChanged {
    /// The announcement that the `kind` list (`tools`, `resources`, `prompts`) changed.
    pub fn new(kind: &str) -> ListChanged {
        let method = format!("notifications/{kind}/list_changed");
        let message = notification(&method, &json!({}));
        ListChanged { method, message }
    }
}

/// A session as the set sees it.
pub(crate) trait Listener: Send + Sync {
    /// Sends `changed` if the session is initialized; returns whether it did.
    fn announce(&self, changed: &ListChanged) -> bool;
    /// Sends `notifications/resources/updated` if the session subscribed to `uri` and its owner
    /// `may_hear` of it; returns whether it did.
    fn resource_updated(&self, uri: &str, may_hear: &dyn Fn(&Owner) -> bool) -> bool;
    /// What the operator's console shows of it; `None` for listeners that are not sessions
    /// (a 2026-07-28 listen stream).
    fn describe(&self) -> Option<super::session_view::SessionView> {
        None
    }
    /// Sends `message` (a `notifications/message`) if the session is initialized and its client
    /// asked for `level` or lower (`logging/setLevel`); returns whether it did. Listeners
    /// that are not sessions have no log level and hear nothing.
    fn log(&self, _level: LogLevel, _message: &Outgoing) -> bool {
        false
    }
}

/// The live sessions of a host, held weakly.
#[derive(Default)]
pub struct Sessions {
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Weak<dyn Listener>>>,
}

impl Sessions {
    pub(crate) fn join(&self, session: Weak<dyn Listener>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.live.lock().unwrap().insert(id, session);
        id
    }

    pub(crate) fn leave(&self, id: u64) {
        self.live.lock().unwrap().remove(&id);
    }

    fn listeners(&self) -> Vec<Arc<dyn Listener>> {
        self.live.lock().unwrap().values().filter_map(Weak::upgrade).collect()
    }

    /// What the operator's console shows of every live session.
    pub(crate) fn describe(&self) -> Vec<super::session_view::SessionView> {
        self.listeners().iter().filter_map(|l| l.describe()).collect()
    }

    /// Sends `changed` to every initialized session; returns how many got it.
    pub(crate) fn broadcast(&self, changed: &ListChanged) -> usize {
        self.listeners().iter().filter(|l| l.announce(changed)).count()
    }

    /// Sends a log message from the host itself (not from a call) to every session that wants
    /// `level`; returns how many got it. `corral dev` tells its client of a failed build this way.
    pub fn log(&self, level: LogLevel, logger: &str, data: &str) -> usize {
        let message = notification("notifications/message", &json!({ "level": level, "logger": logger, "data": data }));
        self.listeners().iter().filter(|l| l.log(level, &message)).count()
    }

    /// Tells the sessions subscribed to `uri` whose owners `may_hear` of it that it changed;
    /// returns how many were told.
    pub fn resource_updated(&self, uri: &str, may_hear: &dyn Fn(&Owner) -> bool) -> usize {
        self.listeners().iter().filter(|l| l.resource_updated(uri, may_hear)).count()
    }
}
