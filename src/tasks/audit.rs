//! The engine's side of the audit trail: every transition it stores, recorded from the row the
//! write returned (so the trail says what the store holds, not what was attempted). Another
//! replica's transitions are that replica's to record.

use super::model::{now_ms, Outcome, OutcomeKind, Task, TaskStatus};
use crate::audit::{Audit, TaskRecord, Transition};
use crate::telemetry::trace::Carrier;

/// Records that `task` (as stored) went through `transition`.
pub(super) fn record(audit: &Audit, task: &Task, transition: Transition) {
    audit.task(|| base(task, transition));
}

/// Records that `task` (as stored) ended with `outcome`.
pub(super) fn ended(audit: &Audit, task: &Task, outcome: &Outcome) {
    audit.task(|| {
        let transition = match (task.status, outcome.kind()) {
            (TaskStatus::Completed, _) => Transition::Completed,
            (TaskStatus::Cancelled, _) => Transition::Cancelled,
            (_, OutcomeKind::Interrupted) => Transition::Interrupted,
            _ => Transition::Failed,
        };
        let mut record = base(task, transition);
        record.outcome = Some(outcome.kind().as_str());
        if transition == Transition::Cancelled {
            // Who cancelled it (the client, or which operator and why).
            record.message = task.status_message.clone();
        }
        if let Outcome::Failed { kind, .. } = outcome {
            record.failure = Some(kind.clone());
        }
        record
    });
}

/// Records that a worker started `task` (as `start` returned it); its first attempt says how
/// long it waited in the queue.
pub(super) fn started(audit: &Audit, task: &Task) {
    audit.task(|| {
        let mut record = base(task, Transition::Started);
        if task.attempts == 1 {
            record.queue_wait_ms = Some((now_ms() - task.created_at).max(0));
        }
        record
    });
}

fn base(task: &Task, transition: Transition) -> TaskRecord {
    let mut record = TaskRecord::new(task.owner.clone(), task.id.clone(), task.tool.clone(), transition, task.attempts, task.runner.clone());
    // The trace of the request that created the task: every transition leads to it.
    record.trace_id = task.trace_context.as_deref().and_then(Carrier::from_stored).map(|c| c.trace_id().to_owned());
    record
}
