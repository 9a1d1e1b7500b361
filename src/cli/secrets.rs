//! `corral secrets`: an operator's hands on the caller secrets in a task store, beside the
//! hosts that resolve them: set one (the value from standard input, never an argument), list
//! names and dates, delete one, and seal every one again under a new key.
//!
//! `set`, `delete` and `rotate-key` are recorded in the audit trail (`--audit-log`, as `corral
//! tasks cancel` is): who did it (`--operator`), to whose secret of which plugin, by name; a
//! record has no place for a value.
//!
//! It opens the store the hosts use (`--db`) as no host, with the key they use
//! (`--secrets-key-file`), through the same [`Vault`] the hosts use: a wrong key is refused
//! here as at a host's start.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};
use serde_json::json;
use zeroize::Zeroizing;

use super::args::{SecretStoreArgs, SecretsArgs, SecretsCommand, SecretsListArgs, SecretsNameArgs, SecretsRotateArgs};
use super::operator::Operator;
use crate::audit::{OperatorAction, OperatorRecord};
use crate::secrets::{Holder, Secret, SecretListing, SecretRows, Vault};
use crate::tasks::{is_postgres_url, redacted, Durability, PgOptions, PgStore, SqliteStore, TaskStore};

/// Runs one `corral secrets` subcommand.
pub async fn run(args: SecretsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        SecretsCommand::Set(args) => {
            let operator = Operator::of(&args.actor)?;
            let record = operator.record_secret(OperatorAction::SecretSet, &args.principal, &args.plugin, &args.name);
            let done = async {
                let value = read_value(&args.name)?;
                let store = open(&args.store, true).await?;
                let done = set(&store, &args, &value).await;
                close(store, done).await
            }
            .await;
            audited(&operator, record, &done);
            done
        }
        SecretsCommand::List(args) => {
            let store = open(&args.store, false).await?;
            let done = list(&store, &args).await;
            close(store, done).await
        }
        SecretsCommand::Delete(args) => {
            let operator = Operator::of(&args.actor)?;
            let record = operator.record_secret(OperatorAction::SecretDelete, &args.principal, &args.plugin, &args.name);
            let done = async {
                let store = open(&args.store, false).await?;
                let done = delete(&store, &args).await;
                close(store, done).await
            }
            .await;
            audited(&operator, record, &done);
            done
        }
        SecretsCommand::RotateKey(args) => {
            let operator = Operator::of(&args.actor)?;
            let done = async {
                let store = open(&args.store, false).await?;
                let done = rotate(&store, &args).await;
                close(store, done).await
            }
            .await;
            let mut record = operator.record(OperatorAction::SecretRotateKey);
            match &done {
                Ok(rotated) => record.detail = Some(rotated.clone()),
                Err(e) => (record.done, record.detail) = (false, Some(format!("{e:#}"))),
            }
            operator.keep(record);
            done.map(|_| ExitCode::SUCCESS)
        }
    }
}

/// Records what came of an action on one secret: done, refused (exit 1: there was none), or
/// failed (with the error, which names and never holds a value).
fn audited(operator: &Operator, mut record: OperatorRecord, done: &anyhow::Result<ExitCode>) {
    match done {
        Ok(code) if *code == ExitCode::SUCCESS => {}
        Ok(_) => (record.done, record.detail) = (false, Some("no such secret".to_owned())),
        Err(e) => (record.done, record.detail) = (false, Some(format!("{e:#}"))),
    }
    operator.keep(record);
}

/// The store `--db` names, opened as no host, with its secret rows and the vault when a key was given.
struct Opened {
    store: Arc<dyn TaskStore>,
    rows: Arc<dyn SecretRows>,
    vault: Option<Vault>,
}

async fn close<T>(opened: Opened, done: anyhow::Result<T>) -> anyhow::Result<T> {
    opened.store.close().await;
    done
}

async fn open(args: &SecretStoreArgs, create: bool) -> anyhow::Result<Opened> {
    let db = super::task_db::task_db(args.db.as_deref())?;
    let text = db.to_string_lossy().into_owned();
    let store: Arc<dyn TaskStore> = if is_postgres_url(&text) {
        Arc::new(PgStore::open(PgOptions::operator(&text)).await.map_err(|e| anyhow!("{e:#}"))?)
    } else {
        if let Some((scheme, _)) = text.split_once("://") {
            bail!("--db {}: a {scheme}:// URL is no task store corral knows: give a SQLite file or a postgres:// URL", redacted(&text));
        }
        if text == ":memory:" {
            bail!("--db :memory: lives inside the host that made it: give the file or URL its `corral serve --db` names");
        }
        if !create && !db.is_file() {
            bail!("task store {}: no such file (give --db the file `corral serve --db` uses)", db.display());
        }
        Arc::new(SqliteStore::open(&db, Durability::Process).map_err(|e| anyhow!("{e:#}"))?)
    };
    let rows = store.clone().secret_rows().ok_or_else(|| anyhow!("this task store keeps no secrets"))?;
    let vault = match &args.secrets_key_file {
        Some(key) => match Vault::open(key.clone(), rows.clone()).await {
            Ok(vault) => Some(vault),
            Err(e) => {
                store.close().await;
                return Err(anyhow!("--secrets-key-file: {e}"));
            }
        },
        None => None,
    };
    Ok(Opened { store, rows, vault })
}

fn need_vault<'a>(opened: &'a Opened, what: &str) -> anyhow::Result<&'a Vault> {
    opened
        .vault
        .as_ref()
        .ok_or_else(|| anyhow!("corral secrets {what} needs --secrets-key-file FILE (or CORRAL_SECRETS_KEY_FILE): the key the hosts seal secrets with"))
}

/// The value from standard input: at most a few KiB, wiped once sealed. On a terminal, one
/// line, asked for on standard error.
fn read_value(name: &str) -> anyhow::Result<Secret> {
    let stdin = std::io::stdin();
    let mut bytes = Zeroizing::new(Vec::new());
    if stdin.is_terminal() {
        eprint!("value of {name} (one line; it is not shown in any listing): ");
        let mut line = Zeroizing::new(String::new());
        stdin.read_line(&mut line).context("reading the value from standard input")?;
        bytes.extend_from_slice(line.as_bytes());
    } else {
        let limit = crate::secrets::MAX_VALUE as u64 + 2;
        stdin.lock().take(limit).read_to_end(&mut bytes).context("reading the value from standard input")?;
    }
    Secret::from_input(bytes.to_vec()).map_err(|e| anyhow!("the value of {name} from standard input is refused: {e}"))
}

async fn set(opened: &Opened, args: &SecretsNameArgs, value: &Secret) -> anyhow::Result<ExitCode> {
    let vault = need_vault(opened, "set")?;
    vault.set(&args.principal, &args.plugin, &args.name, value).await?;
    eprintln!("stored secret {} of plugin {} for {} (key id {})", args.name, args.plugin, args.principal, vault.key_id());
    Ok(ExitCode::SUCCESS)
}

async fn list(opened: &Opened, args: &SecretsListArgs) -> anyhow::Result<ExitCode> {
    let listing = opened.rows.list_secrets(args.principal.as_ref().map(Holder::as_str)).await?;
    if args.json {
        let rows: Vec<_> = listing
            .iter()
            .map(|l| json!({"principal": l.holder, "plugin": l.plugin, "name": l.name, "createdAt": time(l.created_at), "updatedAt": time(l.updated_at)}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", table(&listing));
    }
    Ok(ExitCode::SUCCESS)
}

fn time(ms: i64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
}

fn table(listing: &[SecretListing]) -> String {
    if listing.is_empty() {
        return "no secrets stored\n".to_owned();
    }
    let width = |f: fn(&SecretListing) -> &str, title: &str| listing.iter().map(|l| f(l).len()).max().unwrap_or(0).max(title.len());
    let (wp, wl, wn) = (width(|l| l.holder.as_str(), "PRINCIPAL"), width(|l| l.plugin.as_str(), "PLUGIN"), width(|l| l.name.as_str(), "NAME"));
    let mut out = format!("{:<wp$}  {:<wl$}  {:<wn$}  {:<20}  UPDATED\n", "PRINCIPAL", "PLUGIN", "NAME", "SET");
    for l in listing {
        out.push_str(&format!("{:<wp$}  {:<wl$}  {:<wn$}  {:<20}  {}\n", l.holder, l.plugin, l.name, time(l.created_at), time(l.updated_at)));
    }
    out
}

async fn delete(opened: &Opened, args: &SecretsNameArgs) -> anyhow::Result<ExitCode> {
    if opened.rows.delete_secret(args.principal.as_str(), &args.plugin, &args.name).await? {
        eprintln!("deleted secret {} of plugin {} for {}", args.name, args.plugin, args.principal);
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("corral: {} has no secret {} of plugin {}", args.principal, args.name, args.plugin);
        Ok(ExitCode::from(1))
    }
}

/// Seals every secret again under the new key: what was done, in a few words.
async fn rotate(opened: &Opened, args: &SecretsRotateArgs) -> anyhow::Result<String> {
    let vault = need_vault(opened, "rotate-key")?;
    if args.new_key_file.id() == vault.key_id() {
        bail!("--new-key-file holds the key already in use (key id {}): make a new one with `openssl rand -hex 32`", vault.key_id());
    }
    let rotated = vault.rotate(&args.new_key_file).await?;
    let plural = if rotated.rows == 1 { "" } else { "s" };
    eprintln!(
        "encrypted {} secret{} again: key id {} -> {}; give every host the new key file now (hosts still on the old key refuse to start, and fail calls that need a secret)",
        rotated.rows, plural, rotated.from, rotated.to
    );
    Ok(format!("{} secret{plural} sealed again: key id {} -> {}", rotated.rows, rotated.from, rotated.to))
}
