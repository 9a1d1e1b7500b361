//! What the operator's console sees of a host: its plugins, the figures of its tools, its
//! sessions and, through the task engine, its tasks and replicas, as plain serializable views.
//!
//! The views are built here, beside what they describe, so that the admin room above reads a
//! host through these methods alone and never reaches into the registry, the runtime or the
//! engine. Nothing here carries a secret: environment values are never shown (names only), and
//! an HTTP session's id (which is what lets a client speak as that session) is cut short.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub use super::session_view::{principal_label, SessionView};
use super::Host;
use crate::principal::{Owner, Wire};
use crate::registry::{lock::Lock, Catalog, Plugin};

/// One plugin, loaded or refused.
#[derive(Clone, Debug, Serialize)]
pub struct PluginView {
    /// The file's stem.
    pub name: String,
    /// The `.wasm` it was loaded from.
    pub file: String,
    /// `loaded` or `refused`.
    pub state: &'static str,
    /// Where it came from: the directory, or the OCI reference `corral.lock` pins.
    pub source: SourceView,
    /// `sha256:` of the `.wasm` served (absent when refused).
    pub digest: Option<String>,
    /// The contract it speaks (`0.1.0`, `0.2.0`, `0.3.0`).
    pub contract: Option<&'static str>,
    /// What it may reach.
    pub grants: Option<GrantsView>,
    /// What one call may use.
    pub limits: Option<LimitsView>,
    /// How long compiling took, in milliseconds (a compile cache hit is quick).
    pub compile_ms: Option<f64>,
    /// The tools it serves, by served name.
    pub tools: Vec<String>,
    /// Why it was refused (its kind and the message the log has).
    pub refusal: Option<RefusalView>,
}

/// Where a plugin's files came from.
#[derive(Clone, Debug, Serialize)]
pub struct SourceView {
    /// `directory`, or `oci` when `corral.lock` pins it.
    pub kind: &'static str,
    /// The plugin directory.
    pub directory: String,
    /// What was pulled (`oci://…`), when pinned.
    pub reference: Option<String>,
    /// The OCI manifest digest the reference resolved to.
    pub manifest_digest: Option<String>,
    /// Whether a signature was verified at the pull, and the key's fingerprint.
    pub signed: bool,
    /// `sha256:` of the DER public key that verified the signature.
    pub key: Option<String>,
    /// When it was pulled (RFC 3339).
    pub pulled: Option<String>,
}

/// A plugin's permissions, without any environment value.
#[derive(Clone, Debug, Serialize)]
pub struct GrantsView {
    /// `GUEST = HOST (ro|rw)` per directory.
    pub dirs: Vec<String>,
    /// Variable names only.
    pub env: Vec<String>,
    /// `host:port` patterns.
    pub network: Vec<String>,
}

/// A plugin's limits.
#[derive(Clone, Debug, Serialize)]
pub struct LimitsView {
    /// One call's wall-clock limit.
    pub timeout_ms: u128,
    /// A task's wall-clock limit.
    pub task_timeout_ms: u128,
    /// Fuel per call.
    pub fuel: u64,
    /// Bytes of linear memory per instance.
    pub memory: u64,
    /// Calls at once.
    pub max_concurrency: usize,
    /// Bytes of a result sent inline.
    pub inline_result: u64,
    /// Whether a checkpointed task runs again after a crash.
    pub resumable: bool,
    /// Runs after an interruption at most (`None`: no bound).
    pub retries: Option<u32>,
}

/// Why a plugin is not served.
#[derive(Clone, Debug, Serialize)]
pub struct RefusalView {
    /// The refusal's stable name.
    pub kind: crate::registry::RefusalKind,
    /// Why, in the words the log has.
    pub message: String,
}

/// How an owner key (as the stores keep it) is shown: its principal, cut like
/// [`principal_label`], with `modern:` kept for the 2026-07-28 wire. An unreadable key is shown
/// as `?`, not as itself.
pub fn owner_label(key: &str) -> String {
    match Owner::parse(key) {
        Some(owner) => {
            let label = principal_label(owner.principal());
            match owner.wire() {
                Wire::Sessions => label,
                Wire::Stateless => format!("modern:{label}"),
            }
        }
        None => "?".into(),
    }
}

/// One tool's figures since the host started (the host's per-tool usage, as `/metrics` counts it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ToolView {
    /// The tool's served name.
    pub name: String,
    /// The plugin serving it now (absent for a tool no longer served).
    pub plugin: Option<String>,
    /// Calls that ended, whatever their outcome.
    pub calls: u64,
    /// Calls by outcome other than `ok`: `tool-error` and the failure kinds.
    pub errors: BTreeMap<String, u64>,
    /// The median call time, in milliseconds (the upper bound of the latency bucket holding it).
    pub p50_ms: Option<f64>,
    /// The 99th percentile, likewise.
    pub p99_ms: Option<f64>,
    /// Fuel consumed per call, on average.
    pub fuel_consumed: Option<f64>,
    /// The largest linear memory one call's guest held, in bytes.
    pub peak_memory: Option<f64>,
}

/// One task as the console lists it. Never its arguments or result (the operator's
/// `corral tasks` has those, on demand).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRow {
    /// The task id.
    pub id: String,
    /// Insertion order: pages go by it (`before`).
    pub seq: i64,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: &'static str,
    /// The status message (the last progress message while it works).
    pub message: Option<String>,
    /// The last progress report, while it runs on this host.
    pub progress: Option<ProgressView>,
    /// Who owns it, as [`owner_label`] shows an owner.
    pub owner: String,
    /// The tool it calls.
    pub tool: String,
    /// The plugin that served it (recorded at admission; else the one serving its tool now).
    pub plugin: Option<String>,
    /// When it was created and last changed (ms since the Unix epoch).
    pub created_at: i64,
    /// When its status last changed.
    pub updated_at: i64,
    /// Since it was created, in ms.
    pub age_ms: i64,
    /// From creation to its end (or to now while unfinished), in ms.
    pub duration_ms: i64,
    /// Times a worker took it.
    pub attempts: u32,
    /// Its last checkpoint's number (0: none).
    pub checkpoint: u64,
    /// The checkpoint its current attempt started from (0: from the start).
    pub resumed_from: u64,
    /// The replica that holds it.
    pub runner: String,
    /// What it waits for while `input_required`: the outstanding questions' messages.
    pub questions: Vec<String>,
    /// When it may be deleted (ms since the Unix epoch).
    pub expires_at: Option<i64>,
}

/// How far a task is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressView {
    /// How far (increasing).
    pub progress: f64,
    /// Out of how much, when the guest knows.
    pub total: Option<f64>,
}

impl TaskRow {
    /// Whether `other` (the same task later) shows anything new, the clock aside.
    pub fn differs(&self, other: &TaskRow) -> bool {
        (self.status, &self.message, &self.progress, self.updated_at, self.attempts, self.checkpoint, &self.questions)
            != (other.status, &other.message, &other.progress, other.updated_at, other.attempts, other.checkpoint, &other.questions)
    }
}

/// The message of an outstanding question: an elicitation's `message`, else its method.
fn question_text(question: &crate::tasks::TaskQuestion) -> String {
    let request = &question.request;
    match request.pointer("/params/message").and_then(serde_json::Value::as_str) {
        Some(message) => message.to_owned(),
        None => request.get("method").and_then(serde_json::Value::as_str).unwrap_or("a question").to_owned(),
    }
}

/// Why the operator's cancel did not cancel.
#[derive(Debug)]
pub enum CancelRefusal {
    /// No such task.
    NotFound,
    /// It had ended already, with this status.
    Ended(&'static str),
    /// The store did not answer.
    Store(String),
}

/// The replicas sharing this host's task store.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicasView {
    /// Whether the store is shared by replicas (PostgreSQL); `false` on SQLite, which keeps no
    /// heartbeats, and then `replicas` is empty.
    pub shared: bool,
    /// This host's runner id.
    pub this: String,
    /// Each registered replica.
    pub replicas: Vec<crate::tasks::Replica>,
}

impl Host {
    /// The replicas sharing the task store, read from it now.
    pub async fn replica_views(&self) -> Result<ReplicasView, String> {
        let this = self.engine.runner_id().to_owned();
        match self.engine.replicas().await.map_err(|e| e.to_string())? {
            Some(replicas) => Ok(ReplicasView { shared: true, this, replicas }),
            None => Ok(ReplicasView { shared: false, this, replicas: Vec::new() }),
        }
    }

    /// The console's row of `task`, with its outstanding `questions`, its live progress and
    /// the plugin that serves its tool now.
    pub fn task_row(&self, task: &crate::tasks::Task, questions: &[crate::tasks::TaskQuestion]) -> TaskRow {
        let now = crate::tasks::now_ms();
        let catalog = self.registry.snapshot();
        let progress = self.runner.progress().get(&task.id);
        let end = if task.status.is_terminal() { task.updated_at } else { now };
        let message = progress.as_ref().and_then(|p| p.message.clone()).or_else(|| task.status_message.clone());
        TaskRow {
            id: task.id.clone(),
            seq: task.seq,
            status: task.status.as_str(),
            message,
            progress: progress.filter(|_| !task.status.is_terminal()).map(|p| ProgressView { progress: p.progress, total: p.total }),
            owner: owner_label(&task.owner),
            tool: task.tool.clone(),
            plugin: task.plugin.clone().or_else(|| catalog.tool(&task.tool).map(|t| t.plugin.name.clone())),
            created_at: task.created_at,
            updated_at: task.updated_at,
            age_ms: now.saturating_sub(task.created_at),
            duration_ms: end.saturating_sub(task.created_at),
            attempts: task.attempts,
            checkpoint: task.checkpoint,
            resumed_from: task.resumed_from,
            runner: task.runner.clone(),
            questions: questions.iter().filter(|q| q.answer.is_none()).map(question_text).collect(),
            expires_at: task.expires_at(),
        }
    }

    /// Every plugin, loaded ones first (in name order), then the refused ones.
    pub fn plugin_views(&self) -> Vec<PluginView> {
        let catalog = self.registry.snapshot();
        let mut locks: BTreeMap<String, Option<Lock>> = BTreeMap::new();
        let mut lock_of = |file: &Path| -> Option<Lock> {
            let dir = file.parent().unwrap_or(Path::new("."));
            locks.entry(dir.display().to_string()).or_insert_with(|| Lock::read(dir).ok()).clone()
        };
        let mut views: Vec<PluginView> = catalog.plugins.iter().map(|p| loaded_view(&catalog, p, lock_of(&p.file).as_ref())).collect();
        for refused in &catalog.refused {
            if views.iter().any(|v| v.name == refused.plugin) {
                // A new version refused while the old one keeps serving: shown on the served one.
                if let Some(v) = views.iter_mut().find(|v| v.name == refused.plugin) {
                    v.refusal = Some(RefusalView { kind: refused.kind, message: refused.message.clone() });
                }
                continue;
            }
            views.push(PluginView {
                name: refused.plugin.clone(),
                file: refused.file.display().to_string(),
                state: "refused",
                source: source_view(&refused.file, &refused.plugin, lock_of(&refused.file).as_ref()),
                digest: None,
                contract: None,
                grants: None,
                limits: None,
                compile_ms: None,
                tools: Vec::new(),
                refusal: Some(RefusalView { kind: refused.kind, message: refused.message.clone() }),
            });
        }
        views
    }

    /// A page of the tasks `filter` selects, as rows, and where the next page starts.
    pub async fn operator_tasks(
        &self,
        filter: &crate::tasks::TaskFilter,
        after: Option<crate::tasks::TaskCursor>,
        limit: usize,
    ) -> Result<(Vec<TaskRow>, Option<String>), String> {
        let page = self.engine.list_all(filter, after, limit).await.map_err(|e| e.to_string())?;
        let now = crate::tasks::now_ms();
        let mut rows = Vec::with_capacity(page.tasks.len());
        for task in page.tasks.iter().filter(|t| !t.is_expired(now)) {
            rows.push(self.task_row(task, &self.outstanding(task).await));
        }
        Ok((rows, page.next.map(|c| c.to_string())))
    }

    /// Task `id`'s row and what else the store knows of it, whoever owns it: its outstanding
    /// questions whole, when it started and last checkpointed, how it ended, the holding
    /// replica's heartbeat. Never its arguments or its result.
    pub async fn operator_task(&self, id: &str) -> Result<Option<(TaskRow, serde_json::Value)>, String> {
        let Some(detail) = self.engine.inspect(id).await.map_err(|e| e.to_string())? else { return Ok(None) };
        let row = self.task_row(&detail.task, &detail.questions);
        let asked: Vec<serde_json::Value> =
            detail.questions.iter().filter(|q| q.answer.is_none()).map(|q| serde_json::json!({ "key": q.key, "request": q.request })).collect();
        let extra = serde_json::json!({
            "questions": asked,
            "started_at": detail.started_at,
            "checkpointed_at": detail.checkpointed_at,
            "outcome": detail.outcome.map(|k| k.as_str()),
            "failure": detail.failure,
            "replica_heartbeat_at": detail.replica_heartbeat_at,
        });
        Ok(Some((row, extra)))
    }

    /// The questions an `input_required` task waits on (none for other statuses, and none
    /// when the store cannot say: the row is shown without them).
    async fn outstanding(&self, task: &crate::tasks::Task) -> Vec<crate::tasks::TaskQuestion> {
        if task.status != crate::tasks::TaskStatus::InputRequired {
            return Vec::new();
        }
        self.engine.inputs().outstanding(&task.id).await.unwrap_or_default()
    }

    /// Whether the first load of the plugins is done.
    pub fn plugins_loaded(&self) -> bool {
        self.registry.is_loaded()
    }

    /// Wakes each time the catalog is replaced (a reload), for live views.
    pub fn catalog_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry.subscribe()
    }

    /// The live sessions.
    pub fn session_views(&self) -> Vec<SessionView> {
        self.sessions.describe()
    }

    /// Each tool's figures: the tools served now (called or not), then those called that are
    /// no longer served.
    pub fn tool_views(&self) -> Vec<ToolView> {
        let catalog = self.registry.snapshot();
        let mut tools: BTreeMap<String, ToolView> = catalog
            .tools
            .values()
            .map(|t| (t.name.clone(), ToolView { name: t.name.clone(), plugin: Some(t.plugin.name.clone()), ..ToolView::default() }))
            .collect();
        for usage in self.tool_usage() {
            let view = tools.entry(usage.tool.clone()).or_insert_with(|| ToolView { name: usage.tool.clone(), ..ToolView::default() });
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
            view.calls = usage.calls;
            view.errors = usage.errors;
            view.p50_ms = usage.latency_p50.map(ms);
            view.p99_ms = usage.latency_p99.map(ms);
            view.fuel_consumed = (usage.calls > 0).then(|| usage.fuel_consumed as f64 / usage.calls as f64);
            view.peak_memory = (usage.calls > 0).then_some(usage.peak_memory_max as f64);
        }
        tools.into_values().collect()
    }
}

fn loaded_view(catalog: &Catalog, plugin: &Plugin, lock: Option<&Lock>) -> PluginView {
    let permissions = plugin.code.permissions();
    let grants = GrantsView {
        dirs: permissions.dirs.iter().map(|d| format!("{} = {} ({})", d.guest, d.host.display(), if d.writable { "rw" } else { "ro" })).collect(),
        env: permissions.env.iter().map(|v| v.name.clone()).collect(),
        network: permissions.network.iter().map(|n| n.to_string()).collect(),
    };
    let l = &plugin.limits;
    let limits = LimitsView {
        timeout_ms: l.timeout.as_millis(),
        task_timeout_ms: l.task_timeout.as_millis(),
        fuel: l.fuel,
        memory: l.memory,
        max_concurrency: l.max_concurrency,
        inline_result: l.inline_result,
        resumable: l.resumable,
        retries: l.retries,
    };
    let tools = catalog.tools.values().filter(|t| std::ptr::eq(&*t.plugin, plugin)).map(|t| t.name.clone()).collect();
    PluginView {
        name: plugin.name.clone(),
        file: plugin.file.display().to_string(),
        state: "loaded",
        source: source_view(&plugin.file, &plugin.name, lock),
        digest: Some(plugin.code.digest().to_string()),
        contract: Some(plugin.code.contract().as_str()),
        grants: Some(grants),
        limits: Some(limits),
        compile_ms: Some(plugin.compile_time.as_secs_f64() * 1000.0),
        tools,
        refusal: None,
    }
}

fn source_view(file: &Path, name: &str, lock: Option<&Lock>) -> SourceView {
    let directory = file.parent().unwrap_or(Path::new(".")).display().to_string();
    match lock.and_then(|l| l.entry(name)) {
        Some(entry) => SourceView {
            kind: "oci",
            directory,
            reference: Some(entry.reference.clone()),
            manifest_digest: Some(entry.digest.clone()),
            signed: entry.key.is_some(),
            key: entry.key.clone(),
            pulled: Some(entry.pulled.clone()),
        },
        None => SourceView { kind: "directory", directory, reference: None, manifest_digest: None, signed: false, key: None, pulled: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_never_shown_whole() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(owner_label(&format!("session:{id}")), "session:01234567…");
        assert_eq!(owner_label("token:alice"), "token:alice");
        assert_eq!(owner_label("modern:anonymous"), "modern:anonymous");
        assert_eq!(owner_label("nonsense"), "?");
    }
}
