//! Host settings and plugin manifests. Every error names the file and the key at fault.

pub mod defaults;
mod manifest;
mod permissions;
mod secrets;

use std::time::Duration;

pub use manifest::{check_namespace, manifest_path, plugin_manifest, Manifest, ManifestError, ManifestKey};
pub use permissions::{DirGrant, EnvVar, HostPattern, NetPattern, Permissions};
pub use secrets::{check_help_url, check_secret_name, parse_scope, SecretDecl, SecretScope};

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

/// Parses a duration such as `30s`, `1500ms` or `2m`; zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration like \"30s\" ({e})"))?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// Parses a whole number greater than zero: a count or a budget flag (`--max-running`, `--fuel`...).
/// Zero is refused rather than raised to one, so a mistyped flag is reported, not reinterpreted.
pub fn parse_positive<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialEq + From<u8>,
    T::Err: std::fmt::Display,
{
    let n: T = text.trim().parse().map_err(|e| format!("`{text}` is not a whole number ({e})"))?;
    if n == T::from(0) {
        return Err("must be greater than zero".into());
    }
    Ok(n)
}

/// Parses a size such as `64MiB`; refuses zero and anything above `ceiling`.
pub fn parse_memory(text: &str, ceiling: u64) -> Result<u64, String> {
    let size: bytesize::ByteSize = text.parse().map_err(|e| format!("`{text}` is not a size like \"64MiB\" ({e})"))?;
    let bytes = check_positive(size.as_u64())?;
    if bytes > ceiling {
        return Err(format!("{text} is above the host's memory ceiling of {}", bytesize::ByteSize(ceiling).display().iec()));
    }
    Ok(bytes)
}

/// Parses a size with no ceiling (for host flags).
pub fn parse_size(text: &str) -> Result<u64, String> {
    parse_memory(text, u64::MAX)
}

pub(crate) fn check_positive(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be greater than zero".into())
    } else {
        Ok(n)
    }
}

/// Formats a byte count the way the manifest spells it (`64 MiB`).
pub fn display_size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}
