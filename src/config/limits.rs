//! What one call of a plugin may use: the host's defaults, which a manifest's `[limits]` narrows
//! or widens within the host's ceilings.

use std::time::Duration;

use super::defaults;

/// What one call of a plugin may use.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Wall-clock limit of one call.
    pub timeout: Duration,
    /// Wall-clock limit of a call run as a task; tasks are for long work, so it is longer.
    pub task_timeout: Duration,
    /// Units of wasmtime fuel (about one per wasm instruction).
    pub fuel: u64,
    /// Bytes of linear memory per instance.
    pub memory: u64,
    /// Calls of this plugin that may run at once; more wait their turn.
    pub max_concurrency: usize,
    /// How long an `optional` tool of this plugin runs inline for a 2026-07-28 client that
    /// declares the tasks extension before it becomes a task; `None`: the host's `--task-after`.
    pub task_after: Option<Duration>,
    /// Bytes of a tool result sent inline; a larger result is kept and answered by reference
    /// (`corral://results/…`). `--max-output` still bounds what a guest may return at all.
    pub inline_result: u64,
    /// Bytes of one checkpoint (`[limits] checkpoint`): a larger one is refused with an error
    /// the plugin sees, and the previous checkpoint stays.
    pub checkpoint: u64,
    /// The manifest's `resumable = true`: a task of this plugin that has checkpointed runs again
    /// from its last checkpoint after a crash, even if its tool is not idempotent.
    pub resumable: bool,
    /// The manifest's `retries = N`: a task runs again after an interruption at most N times
    /// (attempts are counted in the store); `None`: no bound.
    pub retries: Option<u32>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: defaults::duration(defaults::TIMEOUT),
            task_timeout: defaults::duration(defaults::TASK_TIMEOUT),
            fuel: 10_000_000_000,
            memory: defaults::size(defaults::MEMORY),
            max_concurrency: 16,
            task_after: None,
            inline_result: defaults::size(defaults::INLINE_RESULT),
            checkpoint: defaults::size(defaults::CHECKPOINT),
            resumable: false,
            retries: None,
        }
    }
}
