//! MCP sessions: lifecycle, method dispatch and what flows back to the client.
//!
//! A [`Session`] knows MCP but not bytes: a transport hands it one message at a time and it
//! answers through the session's [`Outlet`], which is the only way anything reaches a client.

mod announce;
mod ask;
mod authorize;
mod call_secrets;
mod host;
mod inline;
mod kept_results;
mod limits;
mod load_wait;
mod metrics;
mod modern;
mod notify;
pub mod operator;
mod operator_actions;
mod options;
mod outlet;
mod paging;
mod peer;
mod permit;
mod process_metrics;
mod progress_board;
mod prompts;
mod ready;
mod resources;
mod result_links;
mod results;
mod runner;
mod scope;
mod session;
mod session_view;
mod sessions;
mod task_observer;
mod task_view;
mod tasks;
#[cfg(test)]
pub(crate) mod testing;
mod tool_run;
mod tools;
mod usage;

pub use announce::announce_changes;
pub use host::Host;
pub use metrics::{Metrics, ToolUsage};
pub use modern::serve as serve_stateless;
pub use modern::{StateSecret, TaskInputs};
pub use operator_actions::Acting;
pub use options::ServerOptions;
pub use outlet::Outlet;
pub(crate) use permit::with_permit;
pub use ready::Readiness;
pub use result_links::RESULTS_SCHEME;
pub use runner::ToolRunner;
pub use scope::{Requests, Scope};
pub use session::Session;
#[cfg(test)]
pub(crate) use sessions::ListChanged;
pub use sessions::Sessions;
pub use tool_run::Cancelled;
pub use tools::{call_tool_once, list_entry};
