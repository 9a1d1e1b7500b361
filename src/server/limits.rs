//! The policy's per-principal limits as the pipeline applies them: a call rate, checked before a
//! call is dispatched ([`rate`]), and a cap on unfinished tasks, handed to the engine with each
//! admission ([`task_cap`]).
//!
//! The rate counts the requests that run plugin code: `tools/call`, `resources/read`,
//! `prompts/get`, `completion/complete`. A host keeps its buckets in memory; on a task store
//! shared by replicas (PostgreSQL) the buckets are rows there, so every replica draws from the
//! same one, and a limited principal's call then waits for one statement before it runs.
//! Principals no `[[limit]] rate` holds never wait for anything.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::json;

use super::Host;
use crate::mcp::jsonrpc::RATE_LIMITED;
use crate::mcp::{Method, RpcError};
use crate::policy::Rate;
use crate::principal::Owner;

/// Whether a request of `method` spends a call token.
pub(super) fn counts(method: Method) -> bool {
    matches!(method, Method::ToolsCall | Method::ResourcesRead | Method::PromptsGet | Method::CompletionComplete)
}

/// What the rate check of one call came to.
pub(super) enum RateCheck {
    /// Go on.
    Free,
    /// Refused: answer this.
    Refused(RpcError),
    /// The bucket is in the shared store: go on once this says so.
    Shared(Pin<Box<dyn Future<Output = Result<(), RpcError>> + Send>>),
}

/// Takes a call token for `owner`'s principal, if the policy limits its rate.
pub(super) fn rate(host: &Host, owner: &Owner) -> RateCheck {
    let Some(policy) = host.options.policy.current() else { return RateCheck::Free };
    let Some(rate) = policy.limit(owner.principal()).and_then(|limit| limit.rate) else { return RateCheck::Free };
    let key = owner.principal_key();
    if let Some(taking) = host.engine.take_token(key, rate.per_second, rate.burst) {
        let owner = owner.clone();
        return RateCheck::Shared(Box::pin(async move {
            match taking.await {
                Ok((true, _)) => Ok(()),
                Ok((false, tokens)) => Err(refusal(&owner, &rate, rate.wait_for_token(tokens))),
                // A store that cannot answer fails open: the rate is a fairness limit, and
                // refusing every limited call while the database is away would be an outage.
                Err(e) => {
                    tracing::warn!(principal = %owner, "call rate not checked, the task store did not answer: {e}");
                    Ok(())
                }
            }
        }));
    }
    // Tokio's clock: the system's, save in tests that pause it to check the refill.
    match host.buckets.take(key, &rate, tokio::time::Instant::now().into_std()) {
        Ok(()) => RateCheck::Free,
        Err(wait) => RateCheck::Refused(refusal(owner, &rate, wait)),
    }
}

/// The refusal of a call over `owner`'s rate, good again after `wait`.
fn refusal(owner: &Owner, rate: &Rate, wait: Duration) -> RpcError {
    let seconds = wait.as_secs().max(1);
    tracing::info!(principal = %owner, retry_after = seconds, "call refused: over the policy's rate");
    RpcError::new(RATE_LIMITED, format!("too many calls: the policy allows {} at once, then {rate}; retry in {seconds} s", rate.burst))
        .with_data(json!({ "kind": "rate-limited", "retryAfterSeconds": seconds }))
}

/// The cap the policy sets on `owner`'s unfinished tasks, when it sets one.
pub(super) fn task_cap(host: &Host, owner: &Owner) -> Option<usize> {
    host.options.policy.current()?.limit(owner.principal())?.max_active_tasks
}

impl super::Scope {
    /// Goes on with request `id` (`then`) once its principal's call rate lets it: at once when
    /// no rate holds it or its bucket is in memory; after the shared store's answer otherwise
    /// (without holding up the messages after it). Over the rate, `id` is answered with the
    /// refusal and `then` never runs.
    pub(super) fn within_rate(&self, id: crate::mcp::RequestId, then: impl FnOnce(crate::mcp::RequestId) + Send + 'static) {
        match rate(self.host(), self.owner()) {
            RateCheck::Free => then(id),
            RateCheck::Refused(refused) => self.reply(&id, Err(refused)),
            RateCheck::Shared(taking) => {
                let scope = self.clone();
                self.track(async move {
                    match taking.await {
                        Ok(()) => then(id),
                        Err(refused) => scope.reply(&id, Err(refused)),
                    }
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "limits_clock_tests.rs"]
mod clock_tests;
