//! MCP sessions: lifecycle, method dispatch and what flows back to the client.
//!
//! A [`Session`] knows MCP but not bytes: a transport hands it one message at a time and it
//! answers through the session's [`Outlet`], which is the only way anything reaches a client.

mod ask;
mod authorize;
mod call_secrets;
mod inline;
mod limits;
mod load_wait;
mod metrics;
mod modern;
mod usage;
pub use modern::{StateSecret, TaskInputs};
mod notify;
pub mod operator;
mod paging;
mod peer;
mod progress_board;
mod prompts;
mod ready;
mod resources;
mod result_links;
mod results;
mod runner;
mod scope;
mod session;
mod sessions;
mod task_observer;
mod task_view;
mod tasks;
#[cfg(test)]
pub(crate) mod testing;
mod tools;

use std::sync::Arc;

use crate::audit::Audit;
use crate::mcp::jsonrpc::Outgoing;
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::tasks::Engine;

pub use metrics::{Metrics, ToolUsage};
pub use modern::serve as serve_stateless;
pub use ready::Readiness;
pub use result_links::RESULTS_SCHEME;
pub use runner::ToolRunner;
pub use scope::{Requests, Scope};
pub use session::Session;
#[cfg(test)]
pub(crate) use sessions::ListChanged;
pub use sessions::{announce_changes, Sessions};
pub use tools::{call_tool_once, list_entry, Cancelled};

/// Where a session's outbound messages go (a stdout writer, an HTTP stream...).
pub trait Outlet: Send + Sync + 'static {
    /// Delivers one whole message (a line on stdout, an event on an HTTP stream); never
    /// blocks on the client.
    fn send(&self, message: Outgoing);

    /// False once nothing sent here can arrive any more (an HTTP response the client stopped
    /// reading); requests to the client then take the session's own stream instead.
    fn is_open(&self) -> bool {
        true
    }
}

/// Session-independent settings.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Whether the lists of tools, resources and prompts may change while sessions are open
    /// (plugins are watched), which is announced as their `listChanged` capabilities.
    pub list_changed: bool,
    /// How long an `optional` tool called with the 2026-07-28 tasks extension runs inline before
    /// it becomes a task (`--task-after`).
    pub task_after: std::time::Duration,
    /// The key 2026-07-28 `requestState`s are signed with (`--state-secret-file`,
    /// `CORRAL_STATE_SECRET`); random per process unless given, so replicas must share one.
    pub state_secret: modern::StateSecret,
    /// Where every finished call (and every request the policy refuses) is recorded
    /// (`--audit-log`; off by default).
    pub audit: Audit,
    /// The policy in force (`--policy`, reloaded when its file changes); none allows everything.
    pub policy: Arc<crate::policy::Policies>,
    /// Where the secrets plugins declare come from (`--secrets-key-file`, `--secrets-dir`); none by default.
    pub secrets: Arc<crate::secrets::Resolver>,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            page_size: 100,
            list_changed: false,
            task_after: std::time::Duration::from_secs(1),
            state_secret: modern::StateSecret::random(),
            audit: Audit::off(),
            policy: Default::default(),
            secrets: Default::default(),
        }
    }
}

/// What every session of one host shares. Its parts are the server's own: the rooms above it
/// reach what they need through the methods below, never the engine or the runtime directly.
pub struct Host {
    /// The plugins served now, swapped whole on a hot reload.
    registry: Arc<Registry>,
    /// Runs plugin exports in fresh sandboxed instances.
    runtime: Arc<Runtime>,
    /// Tasks: calls that outlive their request.
    engine: Engine,
    /// Settings every session shares.
    options: ServerOptions,
    /// Counters and timings for `/metrics`.
    metrics: Arc<Metrics>,
    /// The live sessions, for what concerns all of them (`list_changed`, resource updates).
    sessions: Sessions,
    /// Questions of this replica's 2026-07-28 tasks, waiting for `tasks/update`.
    task_inputs: Arc<TaskInputs>,
    /// Runs the tasks admitted here for their requestor (the engine holds a clone for the rest).
    runner: ToolRunner,
    /// The `subscriptions/listen` streams watching tasks, per owner (each watch costs a reader).
    listens: modern::OpenListens,
    /// The call rates of principals the policy limits, when this host keeps them itself.
    buckets: crate::policy::Buckets,
}

impl Host {
    /// A host with no session open yet, whose `engine` runs tasks with `runner`.
    pub fn new(registry: Arc<Registry>, runtime: Arc<Runtime>, engine: Engine, options: ServerOptions, metrics: Arc<Metrics>, runner: ToolRunner) -> Host {
        let task_inputs = Arc::new(TaskInputs::new(engine.inputs()));
        // The runner's tasks may ask from now on (those recovered at start wait for this).
        runner.give_task_inputs(task_inputs.clone());
        Host {
            registry,
            runtime,
            engine,
            options,
            metrics,
            sessions: Default::default(),
            task_inputs,
            runner,
            listens: Default::default(),
            buckets: Default::default(),
        }
    }

    /// The plugins served now (for the watcher, `corral tools` and the start).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The runtime plugins run in (for the watcher, which compiles what changed).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The Prometheus text of `/metrics`.
    pub async fn metrics_text(&self) -> String {
        self.metrics.render(&self.engine, &self.options.audit).await
    }

    /// What each tool's calls came to so far (calls, errors by kind, latency, fuel, memory),
    /// in tool name order: the figures `/metrics` exposes, typed for an operator's console.
    pub fn tool_usage(&self) -> Vec<ToolUsage> {
        self.metrics.tool_usage()
    }

    /// Writes out the audit records kept so far and stops the trail's writer (at exit).
    pub fn close_audit(&self) {
        self.options.audit.close();
    }

    /// Reopens the audit log (SIGHUP: the file was rotated).
    pub fn reopen_audit(&self) {
        self.options.audit.reopen();
    }

    /// What running a call needs of the host.
    fn runs(&self) -> tools::Runs<'_> {
        tools::Runs { runtime: &self.runtime, metrics: &self.metrics, audit: &self.options.audit, secrets: &self.options.secrets }
    }

    /// Stops the task engine (once the transport has returned): workers, adopted calls and the
    /// store's threads.
    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
    }

    /// How many sessions and listeners an announcement reaches (for tests of their lifetimes).
    #[cfg(test)]
    pub(crate) fn announce_to_all(&self, changed: &sessions::ListChanged) -> usize {
        self.sessions.broadcast(changed)
    }

    /// The task engine, for tests that look at tasks directly.
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// Runs one call of a plugin under its concurrency limit (`max-concurrency`), waiting for a
/// turn unless `cancel` fires first.
///
/// `work` makes the call's future once the turn came. A future passed in by value would be
/// stored twice in this one's state (once as the argument, once while awaited), and a call's
/// future is kilobytes that every layer above copies (BENCHMARKS.md, section 17).
pub(crate) async fn with_permit<T, F>(
    plugin: &crate::registry::Plugin,
    cancel: &crate::cancel::CancelHandle,
    work: impl FnOnce() -> F,
) -> Result<T, crate::runtime::Failure>
where
    F: std::future::Future<Output = Result<T, crate::runtime::Failure>>,
{
    use tracing::Instrument;
    let _permit = match plugin.permits.try_acquire() {
        Ok(permit) => permit,
        // Every instance slot is taken: the wait is the call's queue, a span of its own.
        Err(_) => tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(crate::runtime::Failure::Cancelled),
            permit = plugin.permits.acquire().instrument(crate::telemetry::trace::queue(&plugin.name)) => permit.expect("plugin semaphores are never closed"),
        },
    };
    work().await
}
