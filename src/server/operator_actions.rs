//! What an operator does to a host through the console: sign in and out, cancel a task,
//! reload the plugins. Each action is audited with who acted, from where and why, and a failed
//! sign-in is counted for `/metrics`, so the trail and the figures show what operators did —
//! and what someone guessing at their tokens tried.

use std::net::IpAddr;

use super::operator::{CancelRefusal, TaskRow};
use super::Host;
use crate::audit::{OperatorAction, OperatorRecord};
use crate::tasks::{Canceller, EngineError};

/// Who acts, from where, and why.
#[derive(Clone, Copy, Debug)]
pub struct Acting<'a> {
    /// The operator: an admin token's name, or an OAuth user.
    pub who: &'a str,
    /// The address the request came from.
    pub address: Option<IpAddr>,
    /// The reason they gave, when the action takes one.
    pub reason: Option<&'a str>,
}

impl Acting<'_> {
    fn record(&self, action: OperatorAction) -> OperatorRecord {
        let mut record = OperatorRecord::new(Some(self.who.to_owned()), action);
        record.address = self.address;
        record.reason = self.reason.map(str::to_owned);
        record
    }
}

impl Host {
    /// Cancels task `id`, whoever owns it: stored cancelled with a status message naming the
    /// operator and their reason, and a guest running it on any replica stops (the engine's
    /// cancel, as its owner's `tasks/cancel` would).
    pub async fn operator_cancel(&self, id: &str, by: Acting<'_>) -> Result<TaskRow, CancelRefusal> {
        let outcome = self.cancel_for_operator(id, by).await;
        let mut record = by.record(OperatorAction::Cancel);
        record.task_id = Some(id.to_owned());
        if let Err(refusal) = &outcome {
            record.done = false;
            record.detail = Some(match refusal {
                CancelRefusal::NotFound => "no such task".to_owned(),
                CancelRefusal::Ended(status) => format!("already {status}"),
                CancelRefusal::Store(_) => "the task store did not answer".to_owned(),
            });
        }
        self.options.audit.operator(record);
        outcome
    }

    async fn cancel_for_operator(&self, id: &str, by: Acting<'_>) -> Result<TaskRow, CancelRefusal> {
        let detail = self.engine.inspect(id).await.map_err(|e| CancelRefusal::Store(e.to_string()))?.ok_or(CancelRefusal::NotFound)?;
        let task = detail.task;
        if task.status.is_terminal() {
            return Err(CancelRefusal::Ended(task.status.as_str()));
        }
        let canceller = Canceller::Operator { who: by.who, via: "the console", reason: by.reason };
        match self.engine.cancel_by(&task.owner, id, canceller).await {
            Ok(cancelled) => Ok(self.task_row(&cancelled, &[])),
            Err(EngineError::NotFound | EngineError::Expired) => Err(CancelRefusal::NotFound),
            Err(EngineError::Terminal(status)) => Err(CancelRefusal::Ended(status)),
            Err(e) => Err(CancelRefusal::Store(e.to_string())),
        }
    }

    /// An operator signed in to the console.
    pub fn operator_signed_in(&self, by: Acting<'_>) {
        self.options.audit.operator(by.record(OperatorAction::SignIn));
    }

    /// An operator signed out.
    pub fn operator_signed_out(&self, by: Acting<'_>) {
        self.options.audit.operator(by.record(OperatorAction::SignOut));
    }

    /// Someone at `address` presented an admin token that is not one (`why` says how): audited
    /// and counted, never with the token.
    pub fn operator_sign_in_refused(&self, address: Option<IpAddr>, why: &str) {
        self.metrics.admin_sign_in_refused();
        let mut record = OperatorRecord::new(None, OperatorAction::SignIn);
        record.done = false;
        record.address = address;
        record.detail = Some(why.to_owned());
        self.options.audit.operator(record);
    }

    /// An operator reloaded the plugins; `changed`: whether what is served changed.
    pub fn operator_reloaded(&self, by: Acting<'_>, changed: bool) {
        let mut record = by.record(OperatorAction::Reload);
        record.detail = Some(if changed { "changed" } else { "unchanged" }.to_owned());
        self.options.audit.operator(record);
    }
}
