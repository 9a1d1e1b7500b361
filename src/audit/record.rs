//! What one audit record says, typed: a finished call ([`CallRecord`]) or a task's transition
//! ([`TaskRecord`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// How a call ended, as the audit trail and traces name it (the task outcome kinds, plus
/// `denied` for a request the policy refused before anything ran).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// The tool answered (its own error results included: see [`CallRecord::is_error`]).
    Result,
    /// The host imposed a failure (a limit, a trap, output that broke its schema); the kind is
    /// in [`CallRecord::failure`].
    Failed,
    /// The client (or a shutdown) cancelled it.
    Cancelled,
    /// The authorization policy refused it; nothing ran.
    Denied,
}

impl CallOutcome {
    /// `result`, `failed`, `cancelled` or `denied`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Result => "result",
            CallOutcome::Failed => "failed",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::Denied => "denied",
        }
    }
}

/// What a request named: a tool for a call, or what a refused request wanted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A tool (`tools/call`).
    Tool(String),
    /// A resource's URI (`resources/read`).
    Resource(String),
    /// A prompt's name (`prompts/get`, or completing one of its arguments).
    Prompt(String),
    /// A resource template's URI (`completion/complete`).
    Template(String),
}

/// The task a call runs for, when it runs as one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRun {
    /// The task's id.
    pub id: String,
    /// Which run of the task this is (1 for the first; more after recovery).
    pub attempt: u32,
}

/// One finished call (or a request the policy refused).
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// When it ended.
    pub time: SystemTime,
    /// The owner key of who it acted for (`principal::Owner::key`).
    pub owner: String,
    /// What it named.
    pub subject: Subject,
    /// The plugin that served it (none for a refused request).
    pub plugin: Option<String>,
    /// The plugin component's digest (`sha256:…`).
    pub digest: Option<Arc<str>>,
    /// The contract version the plugin speaks (`0.3.0`, …).
    pub contract: Option<&'static str>,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The failure's kind (`timeout`, `fuel-exhausted`, …), for [`CallOutcome::Failed`].
    pub failure: Option<String>,
    /// The tool answered with its own error result.
    pub is_error: bool,
    /// From its start to its result.
    pub duration: Duration,
    /// Fuel the guest burned.
    pub fuel_consumed: u64,
    /// The largest linear memory the guest held, in bytes.
    pub peak_memory: u64,
    /// What the sandbox refused it (files, network), each a sentence.
    pub denials: Vec<String>,
    /// The task it ran for, if any.
    pub task: Option<TaskRun>,
    /// Its arguments, only under `--audit-arguments`.
    pub arguments: Option<Value>,
    /// Its result, only under `--audit-arguments`.
    pub result: Option<Value>,
    /// The trace the call belongs to, once traces are exported.
    pub trace_id: Option<String>,
    /// The secrets its plugin declares, as they went for this call: names only.
    pub secrets: CallSecrets,
    /// Where the guest reached out, allowed or refused: beside `owner` and `secrets`, which
    /// service a tool reached as whom.
    pub connections: Vec<Reached>,
    /// Connections beyond the destinations `connections` keeps (a guest trying many).
    pub connections_uncounted: u64,
}

/// One destination a call's guest connected to (or tried), and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    /// `tcp` (a `wasi:sockets` connect) or `http` (a `wasi:http` request).
    pub via: &'static str,
    /// The host: a name for HTTP, an IP for TCP.
    pub host: String,
    /// For a TCP connect, the name this call looked up that gave the IP.
    pub name: Option<String>,
    /// The port.
    pub port: u16,
    /// Whether the plugin's network grants allowed it.
    pub allowed: bool,
    /// How many times, in this call.
    pub count: u32,
}

/// What became of a call's secrets, by name: the values never reach a record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallSecrets {
    /// The secrets the call was given (its plugin's declared ones, all resolved), in
    /// declaration order.
    pub given: Vec<String>,
    /// The secret that could not be resolved, for a call refused as `secret-unavailable`.
    pub missing: Option<String>,
    /// Whether the caller was sent a link to give the missing one (a URL elicitation, or the
    /// link in the refusal's text).
    pub asked: bool,
}

impl CallRecord {
    /// A record of a call of `subject` for `owner` that ended now as `outcome`; the rest empty.
    pub fn new(owner: String, subject: Subject, outcome: CallOutcome) -> CallRecord {
        CallRecord {
            time: SystemTime::now(),
            owner,
            subject,
            plugin: None,
            digest: None,
            contract: None,
            outcome,
            failure: None,
            is_error: false,
            duration: Duration::ZERO,
            fuel_consumed: 0,
            peak_memory: 0,
            denials: Vec::new(),
            task: None,
            arguments: None,
            result: None,
            trace_id: None,
            secrets: CallSecrets::default(),
            connections: Vec::new(),
            connections_uncounted: 0,
        }
    }
}

/// A task's transition, as the engine stored it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Admitted and stored.
    Created,
    /// A worker took it (an attempt began).
    Started,
    /// It waits for its client to answer.
    InputRequired,
    /// Its client answered; it works again.
    Resumed,
    /// It ended with the tool's result.
    Completed,
    /// It ended with a failure or an error.
    Failed,
    /// It was cancelled.
    Cancelled,
    /// It ended because its run was interrupted (its host died) and could not run again.
    Interrupted,
}

impl Transition {
    /// The transition's name in the trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Transition::Created => "created",
            Transition::Started => "started",
            Transition::InputRequired => "input_required",
            Transition::Resumed => "resumed",
            Transition::Completed => "completed",
            Transition::Failed => "failed",
            Transition::Cancelled => "cancelled",
            Transition::Interrupted => "interrupted",
        }
    }
}

/// One transition of one task.
#[derive(Clone, Debug)]
pub struct TaskRecord {
    /// When it was stored.
    pub time: SystemTime,
    /// The task's owner key.
    pub owner: String,
    /// The task's id.
    pub task_id: String,
    /// The tool it calls.
    pub tool: String,
    /// What happened.
    pub transition: Transition,
    /// Attempts started so far (0 before the first).
    pub attempt: u32,
    /// The replica (runner id) that wrote it.
    pub replica: String,
    /// The stored outcome's kind (`result`, `failed`, …), for an end.
    pub outcome: Option<&'static str>,
    /// The failure's kind, for an end the host imposed.
    pub failure: Option<String>,
    /// How long it waited between admission and its first start, in milliseconds.
    pub queue_wait_ms: Option<i64>,
    /// The trace the task belongs to, once traces are exported.
    pub trace_id: Option<String>,
    /// The stored status message, for a cancel: who cancelled it and why.
    pub message: Option<String>,
}

impl TaskRecord {
    /// A record of `transition` of task `task_id` now; the rest empty.
    pub fn new(owner: String, task_id: String, tool: String, transition: Transition, attempt: u32, replica: String) -> TaskRecord {
        TaskRecord {
            time: SystemTime::now(),
            owner,
            task_id,
            tool,
            transition,
            attempt,
            replica,
            outcome: None,
            failure: None,
            queue_wait_ms: None,
            trace_id: None,
            message: None,
        }
    }
}
