//! What the person who runs corral asks of a task store, beside what clients ask: every owner's
//! tasks filtered and paged newest first, one task with everything the store knows of it, and
//! the removal of named ended tasks. Clients see only their own tasks through the engine; these
//! queries are for `corral tasks` and the admin console, which read and write the store
//! directly (a host may be running on it at the same time; every query is one statement or one
//! transaction, so it sees a consistent state and blocks nobody for long).

use std::fmt;

use super::model::{OutcomeKind, Task, TaskQuestion, TaskStatus};

/// The most tasks one page of [`TaskStore::list_all`](super::TaskStore::list_all) returns,
/// whatever the caller asks: a page is one query held open on the store.
pub const MAX_PAGE: usize = 1000;

/// Which tasks an operator's list shows; every field that is set must match.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFilter {
    /// Any of these statuses (empty: every status).
    pub statuses: Vec<TaskStatus>,
    /// This owner key exactly (`principal::Owner`'s key, as stored).
    pub owner: Option<String>,
    /// This tool, by the name it was served under.
    pub tool: Option<String>,
    /// This plugin (tasks stored before plugins were recorded have none, and never match).
    pub plugin: Option<String>,
    /// Created at or after this time (ms since the epoch).
    pub created_from: Option<i64>,
    /// Created before this time (ms since the epoch).
    pub created_before: Option<i64>,
}

impl TaskFilter {
    /// Whether `task` passes the filter (what the stores' queries select, for a caller that
    /// already holds rows, such as a live view that re-reads one task).
    pub fn matches(&self, task: &Task) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&task.status))
            && self.owner.as_ref().is_none_or(|o| *o == task.owner)
            && self.tool.as_ref().is_none_or(|t| *t == task.tool)
            && self.plugin.as_ref().is_none_or(|p| task.plugin.as_ref() == Some(p))
            && self.created_from.is_none_or(|at| task.created_at >= at)
            && self.created_before.is_none_or(|at| task.created_at < at)
    }

    /// The statuses as the stores' queries take them (every status when none is set).
    pub(super) fn status_names(&self) -> Vec<String> {
        let statuses: &[TaskStatus] = if self.statuses.is_empty() { &TaskStatus::ALL } else { &self.statuses };
        statuses.iter().map(|s| s.as_str().to_owned()).collect()
    }
}

/// Where the next page of a list starts: tasks older than the last one shown. Keyset paging on
/// the insertion order, so tasks added meanwhile never shift a page (they are newer than every
/// cursor) and a page costs the same however deep it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskCursor(pub(super) i64);

impl TaskCursor {
    /// The cursor written as [`TaskCursor`]'s `Display` writes it; `None` if it is not one.
    pub fn parse(s: &str) -> Option<TaskCursor> {
        let seq = s.strip_prefix('s')?;
        if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        seq.parse().ok().filter(|n| *n > 0).map(TaskCursor)
    }
}

impl fmt::Display for TaskCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// One page of an operator's list, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskPage {
    /// The tasks, newest first.
    pub tasks: Vec<Task>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<TaskCursor>,
}

impl TaskPage {
    /// The page of `tasks`, newest first, which a store read one more of than `limit`: that one
    /// says whether a next page exists, and is left for it.
    pub(super) fn cut(mut tasks: Vec<Task>, limit: usize) -> TaskPage {
        let more = tasks.len() > limit;
        tasks.truncate(limit);
        let next = if more { tasks.last().map(|t| TaskCursor(t.seq)) } else { None };
        TaskPage { tasks, next }
    }
}

/// Everything the store knows of one task, for an operator.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskDetail {
    /// The row itself (its arguments included: whoever shows it decides whether to).
    pub task: Task,
    /// When a worker first took it (ms since the epoch); `None` while it waits for one.
    pub started_at: Option<i64>,
    /// When its last checkpoint was stored; `None` without one (or stored before this was kept).
    pub checkpointed_at: Option<i64>,
    /// Which outcome it ended with, once it has.
    pub outcome: Option<OutcomeKind>,
    /// The kind of failure the host imposed, for [`OutcomeKind::Failed`].
    pub failure: Option<String>,
    /// The questions it waits on that have no answer yet.
    pub questions: Vec<TaskQuestion>,
    /// The last heartbeat of the replica holding it (ms since the epoch), on a store whose
    /// hosts beat (PostgreSQL); `None` elsewhere, or when that replica has no row any more
    /// (it stopped, or was taken for dead).
    pub replica_heartbeat_at: Option<i64>,
}

/// What a purge did to one named task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Purged {
    /// Deleted, with its outcome, its questions and its kept result.
    Deleted,
    /// Not deleted: it has not ended (cancel it first).
    NotEnded(TaskStatus),
    /// No task has this id.
    Unknown,
}
