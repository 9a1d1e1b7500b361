//! The host's defaults, each written once.
//!
//! A default is kept as the text a user would type, because that is what `--help` shows and what
//! the flag's own parser reads: clap takes the constant as `default_value`, and the `Default`
//! impls parse the same constant with the same parser, so the flag, its help and the library
//! cannot drift apart. The tests below check that every constant parses (so the `Default` impls
//! cannot panic) and pin the values they stood for before they were shared.

use std::time::Duration;

use super::values::{parse_duration, parse_size};

/// `--timeout`, [`Limits::timeout`](super::Limits::timeout): wall-clock limit of one call.
pub const TIMEOUT: &str = "30s";
/// `--task-timeout`, [`Limits::task_timeout`](super::Limits::task_timeout).
pub const TASK_TIMEOUT: &str = "10m";
/// `--memory`, [`Limits::memory`](super::Limits::memory): memory cap per instance.
pub const MEMORY: &str = "64MiB";
/// `--memory-ceiling`, `runtime::EngineSettings::memory_ceiling`: the most any manifest may grant.
pub const MEMORY_CEILING: &str = "1GiB";
/// `--epoch-tick`, `runtime::RuntimeSettings::epoch_tick`.
pub const EPOCH_TICK: &str = "1ms";
/// `--max-output`, `runtime::RuntimeSettings::max_output`.
pub const MAX_OUTPUT: &str = "16MiB";
/// `--inline-result-limit`, [`Limits::inline_result`](super::Limits::inline_result).
pub const INLINE_RESULT: &str = "256KiB";
/// [`Limits::checkpoint`](super::Limits::checkpoint): the largest checkpoint a plugin may store.
pub const CHECKPOINT: &str = "1MiB";
/// `--max-result-bytes-per-client`, `tasks::ResultQuota::per_owner`: the most bytes of results
/// kept by reference for one client. Sixteen results at the default `--max-output`, more than a
/// conversation reads back within the task TTL, while one client looping on a large tool stops
/// there instead of filling the disk.
pub const MAX_RESULT_BYTES_PER_CLIENT: &str = "256MiB";
/// `--max-result-bytes`, `tasks::ResultQuota::total`: the most bytes of results kept by
/// reference for every client together (across replicas on PostgreSQL). Eight clients at their
/// own bound: a size any host's disk holds, so the store cannot grow without limit.
pub const MAX_RESULT_BYTES: &str = "2GiB";
/// `--task-ttl`, `tasks::TaskSettings::default_ttl`.
pub const TASK_TTL: &str = "1h";
/// `--task-max-ttl`, `tasks::TaskSettings::max_ttl`.
pub const TASK_MAX_TTL: &str = "24h";
/// `--task-poll-interval`, `tasks::TaskSettings::poll_interval`.
pub const TASK_POLL_INTERVAL: &str = "1s";
/// `--shutdown-grace`, `tasks::TaskSettings::shutdown_grace`.
pub const SHUTDOWN_GRACE: &str = "10s";
/// `--task-reap-every`, `tasks::TaskSettings::reap_every`.
pub const TASK_REAP_EVERY: &str = "30s";
/// `corral pull --max-plugin-size`: the largest component a pull downloads.
pub const MAX_PLUGIN_SIZE: &str = "64MiB";
/// `corral pull --max-manifest-size`: the largest OCI manifest a pull reads, the artifact's or
/// its signature's. The distribution spec has registries accept manifests up to 4 MiB; corral's
/// own are under 1 KiB.
pub const MAX_MANIFEST_SIZE: &str = "4MiB";
/// `corral pull --pull-timeout`: how long one pull may take, from the first connection to the
/// last byte.
pub const PULL_TIMEOUT: &str = "5m";

/// The most distinct `taskIds` one 2026-07-28 `subscriptions/listen` may name (no flag). Each is
/// a watcher reading its task at the poll interval; a client that follows more tasks opens
/// another listen. A hundred covers any client's screenful of work, and a list of thousands is
/// refused before it costs a core.
pub const MAX_LISTEN_TASKS: usize = 100;
/// The most listens naming tasks one owner may hold open at once (no flag): with
/// [`MAX_LISTEN_TASKS`], at most 1 600 watchers per owner. Without authentication every
/// 2026-07-28 client over HTTP is the same anonymous owner, as for `--max-tasks-per-client`.
pub const MAX_TASK_LISTENS_PER_OWNER: usize = 16;

/// The value of a duration default (one of the constants above).
pub fn duration(text: &'static str) -> Duration {
    parse_duration(text).unwrap_or_else(|e| panic!("the default {text:?} is not a duration: {e}"))
}

/// The value of a size default (one of the constants above), in bytes.
pub fn size(text: &'static str) -> u64 {
    parse_size(text).unwrap_or_else(|e| panic!("the default {text:?} is not a size: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_parses_to_what_it_always_meant() {
        assert_eq!(duration(TIMEOUT), Duration::from_secs(30));
        assert_eq!(duration(TASK_TIMEOUT), Duration::from_secs(600));
        assert_eq!(size(MEMORY), 64 << 20);
        assert_eq!(size(MEMORY_CEILING), 1 << 30);
        assert_eq!(duration(EPOCH_TICK), Duration::from_millis(1));
        assert_eq!(size(MAX_OUTPUT), 16 << 20);
        assert_eq!(size(INLINE_RESULT), 256 << 10);
        assert_eq!(size(CHECKPOINT), 1 << 20);
        assert_eq!(size(MAX_RESULT_BYTES_PER_CLIENT), 256 << 20);
        assert_eq!(size(MAX_RESULT_BYTES), 2 << 30);
        assert_eq!(duration(TASK_TTL), Duration::from_secs(3600));
        assert_eq!(duration(TASK_MAX_TTL), Duration::from_secs(24 * 3600));
        assert_eq!(duration(TASK_POLL_INTERVAL), Duration::from_millis(1000));
        assert_eq!(duration(TASK_REAP_EVERY), Duration::from_secs(30));
        assert_eq!(duration(SHUTDOWN_GRACE), Duration::from_secs(10));
        assert_eq!(size(MAX_PLUGIN_SIZE), 64 << 20);
        assert_eq!(size(MAX_MANIFEST_SIZE), 4 << 20);
        assert_eq!(duration(PULL_TIMEOUT), Duration::from_secs(300));
    }
}
