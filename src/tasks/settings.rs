//! The task engine's limits and defaults.

use std::time::Duration;

use super::blobs::ResultQuota;
use crate::audit::Audit;
use crate::config::defaults;

/// Task engine limits and defaults. (The runtime has its own `EngineSettings`, for wasmtime.)
#[derive(Clone, Debug)]
pub struct TaskSettings {
    /// Tasks running at once, across all plugins.
    pub max_running: usize,
    /// Tasks admitted but not yet running; admission beyond it is refused as overloaded.
    pub max_queued: usize,
    /// Unfinished tasks (queued or running) one owner may have in this host.
    pub max_per_owner: usize,
    /// The TTL of a task whose client asked for none.
    pub default_ttl: Duration,
    /// The longest TTL a client may ask for; longer requests are clamped to it.
    pub max_ttl: Duration,
    /// How often clients are asked to poll (`pollInterval`).
    pub poll_interval: Duration,
    /// How often expired tasks are deleted (and orphans of dead hosts recovered).
    pub reap_every: Duration,
    /// A replica whose heartbeat is older than this is dead and its tasks are claimed (a
    /// store shared over the network, PostgreSQL; SQLite hosts use lock files instead).
    /// Recovery then looks four times per expiry, so a dead replica's tasks move within
    /// about `host_expiry` and a quarter.
    pub host_expiry: Duration,
    /// The bounds on the bytes of results kept by reference, per owner and in all.
    pub result_quota: ResultQuota,
    /// Where each transition the engine stores is recorded (`--audit-log`; off by default).
    pub audit: Audit,
    /// How long [`Engine::shutdown`](super::Engine::shutdown) keeps trying to store the task
    /// ends that wait for an unreachable store (`--shutdown-grace`).
    pub shutdown_grace: Duration,
}

/// `--host-expiry`'s default.
pub const DEFAULT_HOST_EXPIRY: Duration = Duration::from_secs(15);

impl Default for TaskSettings {
    fn default() -> TaskSettings {
        TaskSettings {
            max_running: 8,
            max_queued: 1024,
            max_per_owner: 256,
            default_ttl: defaults::duration(defaults::TASK_TTL),
            max_ttl: defaults::duration(defaults::TASK_MAX_TTL),
            poll_interval: defaults::duration(defaults::TASK_POLL_INTERVAL),
            reap_every: defaults::duration(defaults::TASK_REAP_EVERY),
            host_expiry: DEFAULT_HOST_EXPIRY,
            result_quota: ResultQuota::default(),
            audit: Audit::off(),
            shutdown_grace: defaults::duration(defaults::SHUTDOWN_GRACE),
        }
    }
}
