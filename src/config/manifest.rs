//! A plugin's sidecar manifest (`NAME.toml` next to `NAME.wasm`): `namespace`, `[limits]`,
//! `[permissions]` and `[secrets.NAME]`, and for its project's development loop `[build]` (see
//! [`super::build`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::build::{BuildFile, BuildSpec};
use super::limits::Limits;
use super::permissions::{DirGrant, EnvVar, NetPattern, Permissions};
use super::secrets::{check_help_url, check_secret_name, parse_scope, SecretDecl};
use super::values::{check_positive, parse_duration, parse_memory, parse_size};

/// What a manifest says, applied over the host's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// Prefixes the plugin's tool and prompt names (`acme` serves `search` as `acme_search`), so
    /// two third-party plugins that chose the same names can both be served.
    pub namespace: Option<String>,
    /// `[limits]` over the host's defaults.
    pub limits: Limits,
    /// `[permissions]`, resolved (directories canonical, variables read).
    pub permissions: Permissions,
    /// `[secrets.NAME]`, in name order: what the plugin reads from its call's environment when
    /// the host resolves it.
    pub secrets: Vec<SecretDecl>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    namespace: Option<String>,
    /// A task that checkpointed may run again from its checkpoint after a crash.
    resumable: Option<bool>,
    /// How often a task may run again after an interruption.
    retries: Option<u32>,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    permissions: PermissionsFile,
    /// How the project builds the component; a host checks it but has no use for it.
    build: Option<BuildFile>,
    #[serde(default)]
    secrets: BTreeMap<String, SecretFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretFile {
    scope: String,
    description: String,
    help_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LimitsFile {
    timeout: Option<String>,
    task_timeout: Option<String>,
    fuel: Option<u64>,
    memory: Option<String>,
    max_concurrency: Option<usize>,
    task_after: Option<String>,
    inline_result: Option<String>,
    checkpoint: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsFile {
    #[serde(default)]
    dirs: Vec<DirFile>,
    #[serde(default)]
    env: EnvFile,
    #[serde(default)]
    network: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DirFile {
    host: PathBuf,
    guest: String,
    #[serde(default)]
    mode: DirMode,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum DirMode {
    #[default]
    Ro,
    Rw,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvFile {
    #[serde(default)]
    pass: Vec<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
}

/// Why a manifest was refused: which file, which key (when one is at fault) and what is wrong.
///
/// It displays as it always has (`FILE: [limits] timeout: MESSAGE`, `FILE: line N: MESSAGE`,
/// `FILE: cannot read: ...`); the fields let a caller such as `corral inspect --json` point at the
/// key without parsing that sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// The manifest file.
    pub file: PathBuf,
    /// The key whose value is refused; `None` when the file cannot be read or is not valid TOML
    /// for a manifest (an unknown key included: then `line` says where).
    pub key: Option<ManifestKey>,
    /// The line of a TOML error, when the parser knows it.
    pub line: Option<usize>,
    /// What is wrong, without the file and key.
    pub message: String,
}

/// A key of a manifest: its table (`limits`, `permissions`, `secrets`, or empty for a top-level
/// key such as `namespace`) and its name within it (`timeout`, `env.pass`; for a secret, its
/// field, the secret's name being in the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ManifestKey {
    /// `limits`, `permissions` or `secrets`; empty for a top-level key.
    pub table: &'static str,
    /// The key within the table, dotted when nested (`env.pass`).
    pub name: &'static str,
}

impl ManifestKey {
    /// The key as a dotted TOML path, e.g. `limits.timeout`.
    pub fn path(&self) -> String {
        match self.table {
            "" => self.name.to_owned(),
            table => format!("{table}.{}", self.name),
        }
    }
}

impl fmt::Display for ManifestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.table {
            "" => f.write_str(self.name),
            table => write!(f, "[{table}] {}", self.name),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ManifestError {}

/// The manifest path that belongs to a plugin file.
pub fn manifest_path(wasm: &Path) -> PathBuf {
    wasm.with_extension("toml")
}

/// Reads the manifest of `wasm`, if there is one, over `defaults`. `memory_ceiling` is the most
/// memory the host can give an instance; no grant may make a `protected` directory writable.
pub fn plugin_manifest(wasm: &Path, defaults: &Limits, memory_ceiling: u64, protected: &[PathBuf]) -> Result<Manifest, ManifestError> {
    let path = manifest_path(wasm);
    let error = |key: Option<ManifestKey>, line: Option<usize>, message: String| ManifestError { file: path.clone(), key, line, message };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Manifest { namespace: None, limits: defaults.clone(), permissions: Permissions::default(), secrets: Vec::new() })
        }
        Err(e) => return Err(error(None, None, format!("cannot read: {e}"))),
    };
    let file = parse(&text).map_err(|(line, message)| error(None, line, message))?;
    if let Some(build) = file.build {
        build
            .check(&wasm.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default())
            .map_err(|(name, message)| error(Some(ManifestKey { table: "build", name }), None, message))?;
    }
    if let Some(ns) = &file.namespace {
        check_namespace(ns).map_err(|message| error(Some(ManifestKey { table: "", name: "namespace" }), None, message))?;
    }
    let keyed = |table| move |(name, message): KeyError| error(Some(ManifestKey { table, name }), None, message);
    let mut limits = limits(file.limits, defaults, memory_ceiling).map_err(keyed("limits"))?;
    limits.resumable = file.resumable.unwrap_or(limits.resumable);
    limits.retries = file.retries.or(limits.retries);
    let base = path.parent().unwrap_or(Path::new("."));
    let permissions = permissions(file.permissions, base, protected).map_err(keyed("permissions"))?;
    let secrets = secrets(file.secrets).map_err(keyed("secrets"))?;
    if let Some(clash) = secrets.iter().find(|s| permissions.env.iter().any(|v| v.name == s.name)) {
        let message = format!("`{}` is both a secret and a variable of [permissions.env]", clash.name);
        return Err(error(Some(ManifestKey { table: "secrets", name: "name" }), None, message));
    }
    Ok(Manifest { namespace: file.namespace, limits, permissions, secrets })
}

fn secrets(file: BTreeMap<String, SecretFile>) -> Result<Vec<SecretDecl>, KeyError> {
    file.into_iter()
        .map(|(name, s)| {
            check_secret_name(&name).map_err(|e| ("name", e))?;
            let scope = parse_scope(&s.scope).map_err(|e| ("scope", format!("{name}: {e}")))?;
            if s.description.trim().is_empty() {
                return Err(("description", format!("{name}: say what the secret is for: it is shown to whoever is asked for it")));
            }
            if let Some(url) = &s.help_url {
                check_help_url(url).map_err(|e| ("help_url", format!("{name}: {e}")))?;
            }
            Ok(SecretDecl { name, scope, description: s.description, help_url: s.help_url })
        })
        .collect()
}

/// The `[build]` table of the project manifest `manifest` (`NAME.toml`), `None` when it has
/// none. The whole manifest must parse, as a host would read it.
pub fn build_spec(manifest: &Path, name: &str) -> Result<Option<BuildSpec>, ManifestError> {
    let error = |key: Option<ManifestKey>, line: Option<usize>, message: String| ManifestError { file: manifest.to_owned(), key, line, message };
    let text = std::fs::read_to_string(manifest).map_err(|e| error(None, None, format!("cannot read: {e}")))?;
    let file = parse(&text).map_err(|(line, message)| error(None, line, message))?;
    file.build.map(|b| b.check(name)).transpose().map_err(|(key, message)| error(Some(ManifestKey { table: "build", name: key }), None, message))
}

/// The manifest's TOML; an error is its line (when known) and message.
fn parse(text: &str) -> Result<ManifestFile, (Option<usize>, String)> {
    toml::from_str(text).map_err(|e| (e.span().map(|span| text[..span.start].matches('\n').count() + 1), e.message().to_owned()))
}

/// A namespace is joined to names with `_`, so it is kept to letters, digits and `-` (the
/// rest of a valid MCP tool name) and short enough to leave room for the name.
pub fn check_namespace(ns: &str) -> Result<(), String> {
    let ok_start = ns.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    if ok_start && ns.len() <= 32 && ns.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        Ok(())
    } else {
        Err(format!("{ns:?} must be 1-32 characters of A-Z, a-z, 0-9 and `-`, starting with a letter"))
    }
}

type KeyError = (&'static str, String);

fn limits(file: LimitsFile, defaults: &Limits, memory_ceiling: u64) -> Result<Limits, KeyError> {
    let mut limits = defaults.clone();
    if let Some(t) = file.timeout {
        limits.timeout = parse_duration(&t).map_err(|e| ("timeout", e))?;
    }
    if let Some(t) = file.task_timeout {
        limits.task_timeout = parse_duration(&t).map_err(|e| ("task-timeout", e))?;
    }
    if let Some(t) = file.task_after {
        limits.task_after = Some(parse_duration(&t).map_err(|e| ("task-after", e))?);
    }
    if let Some(size) = file.inline_result {
        limits.inline_result = parse_size(&size).map_err(|e| ("inline-result", e))?;
    }
    if let Some(size) = file.checkpoint {
        limits.checkpoint = parse_size(&size).map_err(|e| ("checkpoint", e))?;
    }
    if let Some(f) = file.fuel {
        limits.fuel = check_positive(f).map_err(|e| ("fuel", e))?;
    }
    if let Some(m) = file.memory {
        limits.memory = parse_memory(&m, memory_ceiling).map_err(|e| ("memory", e))?;
    }
    if let Some(c) = file.max_concurrency {
        limits.max_concurrency = check_positive(c as u64).map_err(|e| ("max-concurrency", e))? as usize;
    }
    Ok(limits)
}

fn permissions(file: PermissionsFile, base: &Path, protected: &[PathBuf]) -> Result<Permissions, KeyError> {
    let mut dirs: Vec<DirGrant> = Vec::new();
    for d in file.dirs {
        let grant = dir_grant(d, base, protected).map_err(|e| ("dirs", e))?;
        if dirs.iter().any(|g| g.guest == grant.guest) {
            return Err(("dirs", format!("guest path {} is granted twice", grant.guest)));
        }
        dirs.push(grant);
    }
    let mut env = Vec::new();
    for name in file.env.pass {
        check_env_name(&name).map_err(|e| ("env.pass", e))?;
        if file.env.set.contains_key(&name) {
            return Err(("env", format!("`{name}` is both passed and set")));
        }
        // A variable the host does not have is simply not there for the guest either.
        if let Ok(value) = std::env::var(&name) {
            env.push(EnvVar { name, value, passed: true });
        }
    }
    for (name, value) in file.env.set {
        check_env_name(&name).map_err(|e| ("env.set", e))?;
        env.push(EnvVar { name, value, passed: false });
    }
    let network = file.network.iter().map(|p| NetPattern::parse(p)).collect::<Result<Vec<_>, _>>().map_err(|e| ("network", e))?;
    Ok(Permissions { dirs, env, network })
}

fn dir_grant(d: DirFile, base: &Path, protected: &[PathBuf]) -> Result<DirGrant, String> {
    if !d.guest.starts_with('/') || d.guest.split('/').any(|c| c == "..") {
        return Err(format!("guest path `{}` must be absolute, e.g. \"/data\"", d.guest));
    }
    let joined = base.join(&d.host);
    let host = joined.canonicalize().map_err(|e| format!("host directory {}: {e}", joined.display()))?;
    if !host.is_dir() {
        return Err(format!("host path {} is not a directory", host.display()));
    }
    let writable = d.mode == DirMode::Rw;
    if writable {
        if let Some(p) = protected.iter().find(|p| p.starts_with(&host) || host.starts_with(p)) {
            return Err(format!("{} may not be writable by a plugin: it holds corral's compile cache {}", host.display(), p.display()));
        }
    }
    Ok(DirGrant { host, guest: d.guest, writable })
}

fn check_env_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(format!("`{name}` is not a variable name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SecretScope;
    use std::time::Duration;

    fn manifest_from(text: &str) -> Result<Manifest, String> {
        manifest_error_from(text).map_err(|e| e.to_string())
    }

    fn manifest_error_from(text: &str) -> Result<Manifest, ManifestError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let wasm = dir.path().join("p.wasm");
        std::fs::write(manifest_path(&wasm), text).unwrap();
        plugin_manifest(&wasm, &Limits::default(), 1 << 30, &[dir.path().join("data").canonicalize().unwrap()])
    }

    #[test]
    fn errors_carry_file_key_and_line_and_display_as_before() {
        let e = manifest_error_from("[limits]\ntimeout = \"soon\"\n").unwrap_err();
        assert_eq!(e.key, Some(ManifestKey { table: "limits", name: "timeout" }));
        assert_eq!(e.key.unwrap().path(), "limits.timeout");
        assert!(e.file.ends_with("p.toml") && e.line.is_none());
        assert_eq!(e.to_string(), format!("{}: [limits] timeout: {}", e.file.display(), e.message));
        assert!(e.message.starts_with("`soon` is not a duration"), "{}", e.message);

        let e = manifest_error_from("[permissions.env]\npass = [\"A=B\"]\n").unwrap_err();
        assert_eq!(e.key.map(|k| k.path()), Some("permissions.env.pass".to_owned()));
        assert_eq!(e.to_string(), format!("{}: [permissions] env.pass: `A=B` is not a variable name", e.file.display()));

        let e = manifest_error_from("[limits]\n\ntimeuot = \"2s\"\n").unwrap_err();
        assert_eq!((e.key, e.line), (None, Some(3)));
        assert_eq!(e.to_string(), format!("{}: line 3: {}", e.file.display(), e.message));
    }

    #[test]
    fn task_after_is_per_plugin_and_checked() {
        let m = manifest_from("[limits]\ntask-after = \"250ms\"\n").unwrap();
        assert_eq!(m.limits.task_after, Some(Duration::from_millis(250)));
        assert_eq!(manifest_from("").unwrap().limits.task_after, None, "absent: the host's --task-after");
        assert!(manifest_from("[limits]\ntask-after = \"soon\"\n").is_err());
    }

    #[test]
    fn inline_result_is_per_plugin_and_checked() {
        assert_eq!(manifest_from("[limits]\ninline-result = \"1MiB\"\n").unwrap().limits.inline_result, 1 << 20);
        assert_eq!(manifest_from("").unwrap().limits.inline_result, 256 << 10, "absent: the host's --inline-result-limit");
        let e = manifest_from("[limits]\ninline-result = \"lots\"\n").err().unwrap();
        assert!(e.contains("inline-result"), "{e}");
    }

    #[test]
    fn resumable_retries_and_the_checkpoint_cap_are_read() {
        let m = manifest_from("resumable = true\nretries = 3\n[limits]\ncheckpoint = \"64KiB\"\n").unwrap();
        assert_eq!((m.limits.resumable, m.limits.retries, m.limits.checkpoint), (true, Some(3), 64 << 10));
        let absent = manifest_from("").unwrap();
        assert_eq!((absent.limits.resumable, absent.limits.retries, absent.limits.checkpoint), (false, None, 1 << 20));
        assert!(manifest_from("retries = -1\n").is_err());
        assert!(manifest_from("[limits]\ncheckpoint = \"big\"\n").err().unwrap().contains("checkpoint"));
    }

    #[test]
    fn manifest_overrides_defaults() {
        let m = manifest_from("[limits]\ntimeout = \"2s\"\ntask-timeout = \"1h\"\nfuel = 5\nmemory = \"16MiB\"\nmax-concurrency = 2\n").unwrap();
        let expected = Limits {
            timeout: Duration::from_secs(2),
            task_timeout: Duration::from_secs(3600),
            fuel: 5,
            memory: 16 << 20,
            max_concurrency: 2,
            task_after: None,
            inline_result: 256 << 10,
            checkpoint: 1 << 20,
            resumable: false,
            retries: None,
        };
        assert_eq!(m.limits, expected);
        assert!(m.permissions.is_empty());
    }

    #[test]
    fn unknown_keys_name_the_key_and_file() {
        let e = manifest_from("[limits]\ntimeuot = \"2s\"\n").unwrap_err();
        assert!(e.contains("timeuot") && e.contains("p.toml"), "{e}");
        let e = manifest_from("[permissions]\ndeny = [\"10.0.0.0/8\"]\n").unwrap_err();
        assert!(e.contains("deny"), "{e}");
        let e = manifest_from("[permissions.env]\ninherit = true\n").unwrap_err();
        assert!(e.contains("inherit"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        assert!(manifest_from("[limits]\ntimeout = \"soon\"\n").unwrap_err().contains("timeout"));
        assert!(manifest_from("[limits]\nmemory = \"8GiB\"\n").unwrap_err().contains("ceiling"));
        assert!(manifest_from("[limits]\nfuel = 0\n").unwrap_err().contains("fuel"));
        assert!(manifest_from("[permissions]\nnetwork = [\"10.0.0.0/8\"]\n").unwrap_err().contains("[permissions] network"));
        assert!(manifest_from("[[permissions.dirs]]\nhost = \"nowhere\"\nguest = \"/x\"\n").unwrap_err().contains("nowhere"));
        assert!(manifest_from("[[permissions.dirs]]\nhost = \"data\"\nguest = \"x\"\n").unwrap_err().contains("absolute"));
        assert!(manifest_from("[[permissions.dirs]]\nhost = \"data\"\nguest = \"/x\"\nmode = \"rwx\"\n")
            .unwrap_err()
            .contains("line 4: unknown variant `rwx`"));
        assert!(manifest_from("[permissions.env]\npass = [\"A=B\"]\n").unwrap_err().contains("env.pass"));
    }

    #[test]
    fn permissions_resolve() {
        let m = manifest_from(
            "[permissions]\nnetwork = [\"127.0.0.1:8080\"]\ndirs = [{ host = \"data\", guest = \"/data\" }]\n[permissions.env]\npass = [\"PATH\", \"CORRAL_TEST_SURELY_UNSET\"]\nset = { MODE = \"fast\" }\n",
        )
        .unwrap();
        let p = m.permissions;
        assert_eq!(p.network, vec![NetPattern::parse("127.0.0.1:8080").unwrap()]);
        assert_eq!(p.dirs.len(), 1);
        assert!(!p.dirs[0].writable && p.dirs[0].guest == "/data" && p.dirs[0].host.is_absolute());
        let env: Vec<(&str, &str, bool)> = p.env.iter().map(|v| (v.name.as_str(), v.value.as_str(), v.passed)).collect();
        let path = std::env::var("PATH").unwrap();
        assert_eq!(env, vec![("PATH", path.as_str(), true), ("MODE", "fast", false)]);
    }

    #[test]
    fn the_compile_cache_is_never_writable() {
        let e = manifest_from("[[permissions.dirs]]\nhost = \".\"\nguest = \"/all\"\nmode = \"rw\"\n").unwrap_err();
        assert!(e.contains("compile cache"), "{e}");
        assert!(manifest_from("[[permissions.dirs]]\nhost = \"data\"\nguest = \"/d\"\nmode = \"ro\"\n").is_ok());
    }

    #[test]
    fn namespace_is_checked() {
        assert_eq!(manifest_from("namespace = \"acme\"\n").unwrap().namespace.as_deref(), Some("acme"));
        let e = manifest_from("namespace = \"ac me\"\n").unwrap_err();
        assert!(e.contains("p.toml: namespace") && e.contains("starting with a letter"), "{e}");
        assert!(manifest_from("namespace = \"a_b\"\n").is_err(), "`_` is the separator");
        assert!(manifest_from("[limits]\ntimeout = \"1s\"\n").unwrap().namespace.is_none());
    }

    #[test]
    fn secrets_are_declared_and_checked() {
        let m = manifest_from(
            "[secrets.GITHUB_TOKEN]\nscope = \"caller\"\ndescription = \"Your GitHub token\"\nhelp_url = \"https://github.com/settings/tokens\"\n\
             [secrets.SLACK]\nscope = \"host\"\ndescription = \"The team's bot token\"\n",
        )
        .unwrap();
        let declared: Vec<(&str, SecretScope, Option<&str>)> = m.secrets.iter().map(|s| (s.name.as_str(), s.scope, s.help_url.as_deref())).collect();
        assert_eq!(declared, vec![("GITHUB_TOKEN", SecretScope::Caller, Some("https://github.com/settings/tokens")), ("SLACK", SecretScope::Host, None)]);
        assert!(manifest_from("").unwrap().secrets.is_empty());

        let e = manifest_error_from("[secrets.A-B]\nscope = \"caller\"\ndescription = \"x\"\n").unwrap_err();
        assert_eq!(e.key.map(|k| k.path()), Some("secrets.name".to_owned()));
        assert!(e.message.contains("\"A-B\" is not a secret name"), "{e}");
        let e = manifest_error_from("[secrets.T]\nscope = \"user\"\ndescription = \"x\"\n").unwrap_err();
        assert_eq!(e.key.map(|k| k.path()), Some("secrets.scope".to_owned()));
        assert!(e.to_string().contains("[secrets] scope: T: scope \"user\" is neither"), "{e}");
        let e = manifest_error_from("[secrets.T]\nscope = \"caller\"\ndescription = \"x\"\nhelp_url = \"http://evil.example/\"\n").unwrap_err();
        assert_eq!(e.key.map(|k| k.path()), Some("secrets.help_url".to_owned()));
        let e = manifest_error_from("[secrets.T]\nscope = \"caller\"\ndescription = \" \"\n").unwrap_err();
        assert_eq!(e.key.map(|k| k.path()), Some("secrets.description".to_owned()));
        let e = manifest_error_from("[secrets.T]\nscope = \"caller\"\n").unwrap_err();
        assert!(e.message.contains("description"), "{e}");
        let e = manifest_error_from("[secrets.T]\nscope = \"caller\"\ndescription = \"x\"\nvalue = \"hunter2\"\n").unwrap_err();
        assert!(e.message.contains("unknown field `value`"), "a value is never written in a manifest: {e}");
        let e = manifest_error_from("[permissions.env]\nset = { T = \"1\" }\n[secrets.T]\nscope = \"host\"\ndescription = \"x\"\n").unwrap_err();
        assert!(e.message.contains("both a secret and a variable"), "{e}");
    }

    #[test]
    fn no_manifest_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let m = plugin_manifest(&dir.path().join("x.wasm"), &Limits::default(), 1 << 30, &[]).unwrap();
        assert_eq!(m.limits, Limits::default());
        assert!(m.permissions.is_empty());
    }
}
