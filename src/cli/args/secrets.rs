//! `corral secrets`: the operator's commands on the caller secrets in a task store, and the
//! secrets flags of `corral serve`. Both name the store and the key as `serve` does, with the same
//! environment variables, so one deployment's settings serve both. Key files are read as the flags
//! are parsed: a missing or malformed key stops the command before anything is opened.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};

use crate::config::check_secret_name;
use crate::secrets::{Holder, HostSecrets, SecretsKey};

// Undocumented on purpose: clap turns doc comments into help text; `Command::Secrets` holds this command's.
#[allow(missing_docs)]
#[derive(Args)]
pub struct SecretsArgs {
    #[command(subcommand)]
    pub command: SecretsCommand,
}

#[allow(missing_docs)]
#[derive(Subcommand)]
pub enum SecretsCommand {
    /// Store a principal's secret for a plugin; the value is read from standard input (one
    /// trailing newline dropped), never from an argument.
    Set(SecretsNameArgs),
    /// List stored secrets: principal, plugin, name and dates, never a value.
    List(SecretsListArgs),
    /// Delete a principal's secret; exits 1 when there was none.
    Delete(SecretsNameArgs),
    /// Encrypt every stored secret again under a new key, in one transaction; then give every
    /// host the new key file.
    RotateKey(SecretsRotateArgs),
}

/// The store and key every `corral secrets` subcommand takes, named as `corral serve` names them.
#[allow(missing_docs)]
#[derive(Args, Clone)]
pub struct SecretStoreArgs {
    /// The task database the hosts use: a SQLite file, or a `postgres://` URL (as `corral serve
    /// --db`). [default: a per-user data directory, e.g. ~/.local/share/corral/tasks.db]
    #[arg(long, env = "CORRAL_DB", value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// The key the hosts seal caller secrets with (as `corral serve --secrets-key-file`): 32
    /// random bytes as 64 hex digits, as `openssl rand -hex 32` writes.
    #[arg(long, env = "CORRAL_SECRETS_KEY_FILE", value_name = "FILE", value_parser = parse_secrets_key_file)]
    pub secrets_key_file: Option<Arc<SecretsKey>>,
}

#[allow(missing_docs)]
#[derive(Args)]
pub struct SecretsNameArgs {
    #[command(flatten)]
    pub store: SecretStoreArgs,
    /// Who acts, and the audit trail the action is recorded in (names, never the value).
    #[command(flatten)]
    pub actor: super::actor::ActorArgs,
    /// The plugin that declares the secret (its file name without `.wasm`).
    #[arg(value_parser = parse_plugin_name)]
    pub plugin: String,
    /// The secret's name, as the plugin's `[secrets.NAME]` declares it.
    #[arg(value_parser = parse_secret_name)]
    pub name: String,
    /// Whose secret: `local`, `token:NAME`, or `user:ISSUER SUBJECT`, as the audit trail writes principals.
    #[arg(long)]
    pub principal: Holder,
}

#[allow(missing_docs)]
#[derive(Args)]
pub struct SecretsListArgs {
    #[command(flatten)]
    pub store: SecretStoreArgs,
    /// Only this principal's secrets.
    #[arg(long)]
    pub principal: Option<Holder>,
    /// Print JSON for scripts: an array of {principal, plugin, name, createdAt, updatedAt}.
    #[arg(long)]
    pub json: bool,
}

#[allow(missing_docs)]
#[derive(Args)]
pub struct SecretsRotateArgs {
    #[command(flatten)]
    pub store: SecretStoreArgs,
    /// Who acts, and the audit trail the action is recorded in (names, never the value).
    #[command(flatten)]
    pub actor: super::actor::ActorArgs,
    /// The new key (64 hex digits, e.g. from `openssl rand -hex 32`); `--secrets-key-file` is the current one.
    #[arg(long, value_name = "FILE", value_parser = parse_secrets_key_file)]
    pub new_key_file: Arc<SecretsKey>,
}

/// `corral serve`'s secrets: where caller secrets are sealed and host secrets are read.
#[allow(missing_docs)]
#[derive(Args)]
pub struct SecretsFlags {
    /// The key that seals caller secrets in the task store: a file of 32 random bytes as 64 hex
    /// digits (`openssl rand -hex 32 > FILE`). Every replica needs the same key. Without it,
    /// caller secrets are off: a call of a plugin that declares one is answered with an error
    /// saying so. A key that is not the one the store's secrets were sealed with stops the start.
    #[arg(long, env = "CORRAL_SECRETS_KEY_FILE", value_name = "FILE", value_parser = parse_secrets_key_file)]
    pub secrets_key_file: Option<Arc<SecretsKey>>,
    /// Host secrets: one file per `PLUGIN/NAME` (a mounted Kubernetes Secret works as is), read
    /// when a call needs it, so an update is seen at the next call. Never taken from corral's
    /// own environment.
    #[arg(long, env = "CORRAL_SECRETS_DIR", value_name = "DIR", value_parser = parse_secrets_dir)]
    pub secrets_dir: Option<HostSecrets>,
}

fn parse_secrets_dir(path: &str) -> Result<HostSecrets, String> {
    HostSecrets::new(Path::new(path))
}

/// Reads `--secrets-key-file` (and `--new-key-file`) as the flags are parsed, so a bad file
/// stops the command before anything is opened.
pub fn parse_secrets_key_file(path: &str) -> Result<Arc<SecretsKey>, String> {
    SecretsKey::from_file(Path::new(path)).map(Arc::new).map_err(|e| e.to_string())
}

fn parse_secret_name(name: &str) -> Result<String, String> {
    check_secret_name(name).map(|()| name.to_owned())
}

/// A plugin is named by its file's stem: a single path component.
fn parse_plugin_name(name: &str) -> Result<String, String> {
    let ok = !name.is_empty() && name.len() <= 128 && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if ok {
        Ok(name.to_owned())
    } else {
        Err(format!("{name:?} is not a plugin name (the plugin's file name without .wasm)"))
    }
}
