//! `corral tasks`: an operator's hands on a task store, beside the hosts that run on it.
//!
//! It opens the store the hosts use (`--db`: a SQLite file or a PostgreSQL URL) with the same
//! store code, but as no host: it registers no runner and claims nothing, so hosts never take
//! it for one of theirs. Reads are the store's operator queries ([`crate::tasks::operator`]); a
//! cancel goes through [`TaskStore::cancel`], which the host running the task hears (PostgreSQL
//! `NOTIFY`, or the cancel notices a SQLite host looks for) and stops its guest. Output is a
//! table for people or, with `--json`, the stable fields [`view`] documents.

mod result;
mod view;
mod watch;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use serde_json::json;

use super::args::{TaskFilterArgs, TaskStoreArgs, TasksArgs, TasksCancelArgs, TasksCommand, TasksListArgs, TasksPurgeArgs, TasksShowArgs};
use super::operator::Operator;
use crate::audit::OperatorAction;
use crate::tasks::{is_postgres_url, now_ms, redacted, Canceller, Durability, PgOptions, PgStore, Purged, SqliteStore, TaskFilter, TaskStore};

/// Runs one `corral tasks` subcommand.
pub async fn run(args: TasksArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        TasksCommand::List(args) => with_store(&args.store.clone(), |store| list(store, args)).await,
        TasksCommand::Show(args) => with_store(&args.store.clone(), |store| show(store, args)).await,
        TasksCommand::Outcome(args) => with_store(&args.store.clone(), |store| result::print(store, args)).await,
        TasksCommand::Cancel(args) => with_store(&args.operator.store.clone(), |store| cancel(store, args)).await,
        TasksCommand::Purge(args) => with_store(&args.operator.store.clone(), |store| purge(store, args)).await,
        TasksCommand::Watch(args) => with_store(&args.store.clone(), |store| watch::run(store, args)).await,
    }
}

/// Opens the store, runs `f` on it and closes it (a PostgreSQL store sends its pending
/// notifications as it closes: a cancel's reaches the hosts before the command exits).
async fn with_store<F, Fut>(args: &TaskStoreArgs, f: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(Arc<dyn TaskStore>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    let store = open(args).await?;
    let done = f(store.clone()).await;
    store.close().await;
    done
}

/// The store `--db` names, opened as no host.
async fn open(args: &TaskStoreArgs) -> anyhow::Result<Arc<dyn TaskStore>> {
    let db = super::task_db::task_db(args.db.as_deref())?;
    let text = db.to_string_lossy().into_owned();
    if is_postgres_url(&text) {
        let store = PgStore::open(PgOptions::operator(&text)).await.map_err(|e| anyhow!("{e:#}"))?;
        return Ok(Arc::new(store));
    }
    if let Some((scheme, _)) = text.split_once("://") {
        bail!("--db {}: a {scheme}:// URL is no task store corral knows: give a SQLite file or a postgres:// URL", redacted(&text));
    }
    if text == ":memory:" {
        bail!("--db :memory: lives inside the host that made it: give the file or URL its `corral serve --db` names");
    }
    if !db.is_file() {
        bail!("task store {}: no such file (give --db the file `corral serve --db` uses)", db.display());
    }
    let store = SqliteStore::open_existing(&db, Durability::Process).map_err(|e| anyhow!("{e:#}"))?;
    Ok(Arc::new(store))
}

impl TaskFilterArgs {
    /// The store's filter, the ages taken back from now.
    fn filter(&self) -> TaskFilter {
        let ago = |age: Duration| now_ms().saturating_sub(age.as_millis() as i64);
        TaskFilter {
            statuses: self.status.clone(),
            owner: self.owner.clone(),
            tool: self.tool.clone(),
            plugin: self.plugin.clone(),
            created_from: self.newer_than.map(ago),
            created_before: self.older_than.map(ago),
        }
    }
}

async fn list(store: Arc<dyn TaskStore>, args: TasksListArgs) -> anyhow::Result<ExitCode> {
    let page = store.list_all(&args.filter.filter(), args.cursor, args.limit).await?;
    let now = now_ms();
    if args.store.json {
        let tasks: Vec<_> = page.tasks.iter().map(view::summary_json).collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "tasks": tasks, "next": page.next.map(|c| c.to_string()) }))?);
    } else {
        let mut out = std::io::stdout().lock();
        view::print_table(&mut out, &page.tasks, now)?;
        if let Some(next) = page.next {
            use std::io::Write;
            writeln!(out, "\nmore: corral tasks list --cursor {next} (with the same filters)")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(store: Arc<dyn TaskStore>, args: TasksShowArgs) -> anyhow::Result<ExitCode> {
    let Some(detail) = store.inspect(&args.id).await? else { bail!("{}", unknown(&args.id)) };
    let now = now_ms();
    if args.store.json {
        println!("{}", serde_json::to_string_pretty(&view::detail_json(&detail, args.arguments, now))?);
    } else {
        view::print_detail(&mut std::io::stdout().lock(), &detail, args.arguments, now)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn cancel(store: Arc<dyn TaskStore>, args: TasksCancelArgs) -> anyhow::Result<ExitCode> {
    let Some(detail) = store.inspect(&args.id).await? else { bail!("{}", unknown(&args.id)) };
    let operator = Operator::of(&args.operator.actor)?;
    let canceller = Canceller::Operator { who: &operator.name, via: "corral tasks cancel", reason: args.reason.as_deref() };
    let cancelled = match detail.task.status.is_terminal() {
        true => None,
        false => store.cancel(&args.id, &canceller.status_message()).await?,
    };
    let mut record = operator.record(OperatorAction::Cancel);
    record.task_id = Some(args.id.clone());
    record.reason = args.reason.clone();
    let Some(task) = cancelled else {
        // Ended before the cancel could be written: say how.
        let now = store.inspect(&args.id).await?.map_or("deleted".to_owned(), |d| d.task.status.as_str().to_owned());
        record.done = false;
        record.detail = Some(format!("already {now}"));
        operator.keep(record);
        eprintln!("corral: task {} has already ended ({now}): nothing to cancel", args.id);
        return Ok(ExitCode::from(1));
    };
    operator.keep(record);
    if args.operator.store.json {
        println!("{}", serde_json::to_string_pretty(&view::summary_json(&task))?);
    } else {
        println!("cancelled {} ({}); the host running it stops it", task.id, task.tool);
    }
    Ok(ExitCode::SUCCESS)
}

async fn purge(store: Arc<dyn TaskStore>, args: TasksPurgeArgs) -> anyhow::Result<ExitCode> {
    let operator = Operator::of(&args.operator.actor)?;
    let expired = match args.expired {
        true => Some(store.purge_expired(now_ms()).await?),
        false => None,
    };
    let named = match args.ids.is_empty() {
        true => Vec::new(),
        false => store.purge_tasks(args.ids.clone()).await?,
    };
    let refused = named.iter().any(|(_, done)| *done != Purged::Deleted);
    let mut record = operator.record(OperatorAction::Purge);
    let deleted = named.iter().filter(|(_, done)| *done == Purged::Deleted).count();
    record.detail = Some(match expired {
        Some(n) => format!("{n} expired and {deleted} named task(s) deleted"),
        None => format!("{deleted} of {} named task(s) deleted", named.len()),
    });
    operator.keep(record);
    if args.operator.store.json {
        let tasks: Vec<_> = named.iter().map(|(id, done)| view::purged_json(id, done)).collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "expired_deleted": expired, "tasks": tasks }))?);
    } else {
        if let Some(n) = expired {
            println!("deleted {n} expired task(s)");
        }
        for (id, done) in &named {
            match done {
                Purged::Deleted => println!("deleted {id}"),
                Purged::NotEnded(status) => eprintln!("corral: task {id} is {}: not deleted (cancel it first)", status.as_str()),
                Purged::Unknown => eprintln!("corral: {}", unknown(id)),
            }
        }
    }
    Ok(if refused { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The error for an id the store does not hold.
fn unknown(id: &str) -> String {
    format!("no task {id:?} in this store (it may have expired and been purged)")
}
