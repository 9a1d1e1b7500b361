//! Host settings and plugin manifests. Every error names the file and the key at fault.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// What one call of a plugin may use.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    pub timeout: Duration,
    /// Wall-clock limit of a call run as a task; tasks are for long work, so it is longer.
    pub task_timeout: Duration,
    /// Units of wasmtime fuel (about one per wasm instruction).
    pub fuel: u64,
    /// Bytes of linear memory per instance.
    pub memory: u64,
    /// Calls of this plugin that may run at once; more wait their turn.
    pub max_concurrency: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { timeout: Duration::from_secs(30), task_timeout: Duration::from_secs(600), fuel: 10_000_000_000, memory: 64 << 20, max_concurrency: 16 }
    }
}

/// A plugin's sidecar manifest (`NAME.toml` next to `NAME.wasm`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    #[serde(default)]
    limits: LimitsFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LimitsFile {
    timeout: Option<String>,
    task_timeout: Option<String>,
    fuel: Option<u64>,
    memory: Option<String>,
    max_concurrency: Option<usize>,
}

/// The manifest path that belongs to a plugin file.
pub fn manifest_path(wasm: &Path) -> PathBuf {
    wasm.with_extension("toml")
}

/// Reads the manifest of `wasm` if there is one and applies it over `defaults`.
/// `memory_ceiling` is the most memory the host can give any instance.
pub fn plugin_limits(wasm: &Path, defaults: &Limits, memory_ceiling: u64) -> Result<Limits, String> {
    let path = manifest_path(wasm);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(defaults.clone()),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let file: ManifestFile = toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
    let at = |key: &str, e: String| format!("{}: [limits] {key}: {e}", path.display());
    let mut limits = defaults.clone();
    if let Some(t) = file.limits.timeout {
        limits.timeout = parse_duration(&t).map_err(|e| at("timeout", e))?;
    }
    if let Some(t) = file.limits.task_timeout {
        limits.task_timeout = parse_duration(&t).map_err(|e| at("task-timeout", e))?;
    }
    if let Some(f) = file.limits.fuel {
        limits.fuel = check_positive(f).map_err(|e| at("fuel", e))?;
    }
    if let Some(m) = file.limits.memory {
        limits.memory = parse_memory(&m, memory_ceiling).map_err(|e| at("memory", e))?;
    }
    if let Some(c) = file.limits.max_concurrency {
        limits.max_concurrency = check_positive(c as u64).map_err(|e| at("max-concurrency", e))? as usize;
    }
    Ok(limits)
}

/// Parses a duration such as `30s`, `1500ms` or `2m`; zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration like \"30s\" ({e})"))?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
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

fn check_positive(n: u64) -> Result<u64, String> {
    if n == 0 { Err("must be greater than zero".into()) } else { Ok(n) }
}

/// Formats a byte count the way the manifest spells it (`64 MiB`).
pub fn display_size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits_from(manifest: &str) -> Result<Limits, String> {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("p.wasm");
        std::fs::write(manifest_path(&wasm), manifest).unwrap();
        plugin_limits(&wasm, &Limits::default(), 1 << 30)
    }

    #[test]
    fn manifest_overrides_defaults() {
        let l = limits_from("[limits]\ntimeout = \"2s\"\ntask-timeout = \"1h\"\nfuel = 5\nmemory = \"16MiB\"\nmax-concurrency = 2\n").unwrap();
        let expected = Limits { timeout: Duration::from_secs(2), task_timeout: Duration::from_secs(3600), fuel: 5, memory: 16 << 20, max_concurrency: 2 };
        assert_eq!(l, expected);
    }

    #[test]
    fn unknown_keys_name_the_key_and_file() {
        let e = limits_from("[limits]\ntimeuot = \"2s\"\n").unwrap_err();
        assert!(e.contains("timeuot") && e.contains("p.toml"), "{e}");
        let e = limits_from("[permissions]\n").unwrap_err();
        assert!(e.contains("permissions"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        assert!(limits_from("[limits]\ntimeout = \"soon\"\n").unwrap_err().contains("timeout"));
        assert!(limits_from("[limits]\nmemory = \"8GiB\"\n").unwrap_err().contains("ceiling"));
        assert!(limits_from("[limits]\nfuel = 0\n").unwrap_err().contains("fuel"));
    }

    #[test]
    fn no_manifest_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(plugin_limits(&dir.path().join("x.wasm"), &Limits::default(), 1 << 30).unwrap(), Limits::default());
    }
}
