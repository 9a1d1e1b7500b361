//! The settings every session of a host shares.

use std::sync::Arc;

use super::modern::StateSecret;
use crate::audit::Audit;

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
    pub state_secret: StateSecret,
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
            state_secret: StateSecret::random(),
            audit: Audit::off(),
            policy: Default::default(),
            secrets: Default::default(),
        }
    }
}
