//! MCP sessions: lifecycle, method dispatch and what flows back to the client.
//!
//! A [`Session`] knows MCP but not bytes: a transport hands it one message at a time and it
//! answers through the session's [`Outlet`], which is the only way anything reaches a client.

mod metrics;
mod notify;
mod results;
mod session;
mod sessions;
mod tasks;
mod tools;

use std::sync::Arc;

use serde_json::Value;

use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::tasks::Engine;

pub use metrics::Metrics;
pub use session::Session;
pub use sessions::{announce_tool_changes, Sessions};
pub use tasks::ToolExecutor;
pub use tools::{call_tool_once, list_entry};

/// Where a session's outbound messages go (a stdout writer, an HTTP stream...).
pub trait Outlet: Send + Sync + 'static {
    fn send(&self, message: Value);
}

/// Session-independent settings.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Whether the tool list may change while sessions are open (plugins are watched), which
    /// is announced as the `tools.listChanged` capability.
    pub list_changed: bool,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions { page_size: 100, list_changed: false }
    }
}

/// What every session of one host shares.
pub struct Host {
    pub registry: Arc<Registry>,
    pub runtime: Arc<Runtime>,
    pub engine: Engine,
    pub options: ServerOptions,
    pub metrics: Arc<Metrics>,
    pub sessions: Sessions,
}
