//! `corral tasks`: the operator's commands on a task store.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::config;
use crate::tasks::{TaskCursor, TaskStatus, MAX_PAGE};

/// `corral tasks`.
#[derive(Args)]
pub struct TasksArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TasksCommand,
}

/// The `corral tasks` subcommands.
#[derive(Subcommand)]
pub enum TasksCommand {
    /// The tasks of every client, newest first, a page at a time.
    List(TasksListArgs),
    /// Everything known of one task (its arguments only with --arguments).
    Show(TasksShowArgs),
    /// The result of an ended task, whole (a result kept by reference is read page by page).
    #[command(name = "result")]
    Outcome(TasksIdArgs),
    /// Cancel a task: stored `cancelled`, and the host running it stops its guest.
    Cancel(TasksCancelArgs),
    /// Delete ended tasks: those named, or with --expired every task past its TTL.
    Purge(TasksPurgeArgs),
    /// Follow the tasks live: each new task and each change, until Ctrl-C.
    Watch(TasksWatchArgs),
}

/// The store and the output format, which every `corral tasks` subcommand takes.
#[derive(Args, Clone)]
pub struct TaskStoreArgs {
    /// The task database the hosts use: a SQLite file, or a `postgres://` URL (as `corral serve
    /// --db`). A file that does not exist is an error, never created.
    /// [default: a per-user data directory, e.g. ~/.local/share/corral/tasks.db]
    #[arg(long, env = "CORRAL_DB", value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Print JSON for scripts (field names in the README) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Which tasks `list` and `watch` show.
#[derive(Args)]
pub struct TaskFilterArgs {
    /// Only tasks with this status (working, input_required, completed, failed, cancelled);
    /// repeat it or separate with commas for several.
    #[arg(long, value_delimiter = ',', value_parser = parse_task_status)]
    pub status: Vec<TaskStatus>,
    /// Only the tasks of this owner, as the store keeps it (the `owner` field).
    #[arg(long)]
    pub owner: Option<String>,
    /// Only tasks of this tool (as served, namespace included).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only tasks of this plugin.
    #[arg(long)]
    pub plugin: Option<String>,
    /// Only tasks created longer ago than this, e.g. 1h.
    #[arg(long, value_parser = config::parse_duration)]
    pub older_than: Option<Duration>,
    /// Only tasks created within this, e.g. 10m.
    #[arg(long, value_parser = config::parse_duration)]
    pub newer_than: Option<Duration>,
}

/// `corral tasks list`.
#[derive(Args)]
pub struct TasksListArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Which tasks.
    #[command(flatten)]
    pub filter: TaskFilterArgs,
    /// Tasks per page (at most 1000).
    #[arg(long, default_value_t = 50, value_parser = parse_page_size)]
    pub limit: usize,
    /// Where to go on: the `next` cursor a previous page printed.
    #[arg(long, value_parser = parse_task_cursor)]
    pub cursor: Option<TaskCursor>,
}

/// `corral tasks show`.
#[derive(Args)]
pub struct TasksShowArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// The task's id.
    pub id: String,
    /// Show the call's arguments too (they may hold what the caller would not have shown).
    #[arg(long)]
    pub arguments: bool,
}

/// `corral tasks result` and `cancel`.
#[derive(Args)]
pub struct TasksIdArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// The task's id.
    pub id: String,
}

/// `corral tasks cancel`.
#[derive(Args)]
pub struct TasksCancelArgs {
    /// The store, the format, who acts and where it is recorded.
    #[command(flatten)]
    pub operator: OperatorArgs,
    /// The task's id.
    pub id: String,
    /// Why: kept in the task's status message (which its client sees) and the audit trail.
    #[arg(long, value_name = "TEXT", value_parser = reason)]
    pub reason: Option<String>,
}

/// What every `corral tasks` subcommand that changes something takes: the store and format,
/// who acts, and the audit trail their action goes to.
#[derive(Args, Clone)]
pub struct OperatorArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Who acts, and the audit trail it is recorded in.
    #[command(flatten)]
    pub actor: super::actor::ActorArgs,
}

/// A reason: one line of at most 500 characters (it is shown in tables and status messages).
fn reason(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() || s.chars().count() > 500 || s.chars().any(char::is_control) {
        return Err("a reason is one line of 1 to 500 characters".into());
    }
    Ok(s.to_owned())
}

/// `corral tasks purge`.
#[derive(Args)]
pub struct TasksPurgeArgs {
    /// The store, the format, who acts and where it is recorded.
    #[command(flatten)]
    pub operator: OperatorArgs,
    /// Delete every task (and kept result) whose TTL has passed, as the hosts' reaper does.
    #[arg(long, required_unless_present = "ids")]
    pub expired: bool,
    /// The ended tasks to delete; a task that has not ended is refused (cancel it first).
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
}

/// `corral tasks watch`.
#[derive(Args)]
pub struct TasksWatchArgs {
    /// The store and format (`--json`: one JSON line per change).
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Which tasks.
    #[command(flatten)]
    pub filter: TaskFilterArgs,
    /// The newest tasks followed at most.
    #[arg(long, default_value_t = 100, value_parser = parse_page_size)]
    pub limit: usize,
    /// How often the store is read, e.g. 250ms.
    #[arg(long, default_value = "500ms", value_parser = parse_watch_interval)]
    pub interval: Duration,
}

fn parse_task_status(s: &str) -> Result<TaskStatus, String> {
    TaskStatus::parse(s).ok_or_else(|| {
        let known: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("no task status is called {s:?}; the statuses are {}", known.join(", "))
    })
}

fn parse_page_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a page size: give a whole number from 1 to {MAX_PAGE}")),
    }
}

fn parse_task_cursor(s: &str) -> Result<TaskCursor, String> {
    TaskCursor::parse(s).ok_or_else(|| format!("{s:?} is not a cursor `corral tasks list` printed (such as s42)"))
}

fn parse_watch_interval(s: &str) -> Result<Duration, String> {
    let every = config::parse_duration(s)?;
    if every < Duration::from_millis(50) {
        return Err(format!("{s:?} is too short: read the store at most every 50ms"));
    }
    Ok(every)
}
