//! What every session of one host shares ([`Host`]): the registry, the runtime, the task engine,
//! the settings and the server's own parts, made once at start.

use std::sync::Arc;

use super::metrics::{Metrics, ToolUsage};
use super::modern::{OpenListens, TaskInputs};
use super::options::ServerOptions;
use super::runner::ToolRunner;
use super::sessions::Sessions;
use super::tool_run;
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::tasks::Engine;

/// What every session of one host shares. Its parts are the server's own: the rooms above it
/// reach what they need through the methods below, never the engine or the runtime directly.
pub struct Host {
    /// The plugins served now, swapped whole on a hot reload.
    pub(super) registry: Arc<Registry>,
    /// Runs plugin exports in fresh sandboxed instances.
    pub(super) runtime: Arc<Runtime>,
    /// Tasks: calls that outlive their request.
    pub(super) engine: Engine,
    /// Settings every session shares.
    pub(super) options: ServerOptions,
    /// Counters and timings for `/metrics`.
    pub(super) metrics: Arc<Metrics>,
    /// The live sessions, for what concerns all of them (`list_changed`, resource updates).
    pub(super) sessions: Sessions,
    /// Questions of this replica's 2026-07-28 tasks, waiting for `tasks/update`.
    pub(super) task_inputs: Arc<TaskInputs>,
    /// Runs the tasks admitted here for their requestor (the engine holds a clone for the rest).
    pub(super) runner: ToolRunner,
    /// The `subscriptions/listen` streams watching tasks, per owner (each watch costs a reader).
    pub(super) listens: OpenListens,
    /// The call rates of principals the policy limits, when this host keeps them itself.
    pub(super) buckets: crate::policy::Buckets,
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

    /// Sends a log message of the host's own to every session whose client wants `level`;
    /// returns how many got it.
    pub fn log_to_clients(&self, level: crate::mcp::types::LogLevel, logger: &str, data: &str) -> usize {
        self.sessions.log(level, logger, data)
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
    pub(super) fn runs(&self) -> tool_run::Runs<'_> {
        tool_run::Runs { runtime: &self.runtime, metrics: &self.metrics, audit: &self.options.audit, secrets: &self.options.secrets }
    }

    /// Stops the task engine (once the transport has returned): workers, adopted calls and the
    /// store's threads.
    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
    }

    /// How many sessions and listeners an announcement reaches (for tests of their lifetimes).
    #[cfg(test)]
    pub(crate) fn announce_to_all(&self, changed: &super::sessions::ListChanged) -> usize {
        self.sessions.broadcast(changed)
    }

    /// The task engine, for tests that look at tasks directly.
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }
}
