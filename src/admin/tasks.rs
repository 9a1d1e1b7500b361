//! The Tasks view's reads and its one action, over the host's operator queries: the filter the
//! API parsed becomes the store's query (a plugin becomes the tools it serves now), and every
//! task becomes the row the console shows.

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::filter::TaskQuery;
use super::refusal::ApiRefusal;
use crate::server::operator::CancelRefusal;
use crate::server::{Acting, Host};
use crate::tasks::TaskStatus;

pub use crate::server::operator::TaskRow;

/// Bytes of a task id at most (they are UUIDs).
const MAX_ID: usize = 128;

/// One page of tasks, newest first.
#[derive(Serialize)]
pub struct TaskListing {
    /// The tasks.
    pub tasks: Vec<TaskRow>,
    /// Where the next page starts (pass it as `before`); `None` on the last page.
    pub next: Option<String>,
}

/// Refuses a task id no task can have, naming it.
pub fn check_id(id: &str) -> Result<(), ApiRefusal> {
    if id.len() > MAX_ID || id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        let shown: String = id.chars().take(40).collect();
        return Err(ApiRefusal::bad_request(format!("`{shown}` is not a task id (letters, digits, `-`; at most {MAX_ID} bytes)")));
    }
    Ok(())
}

/// The tasks `filter` selects.
pub async fn list(host: &Host, filter: &TaskQuery) -> Result<TaskListing, String> {
    let (tasks, next) = host.operator_tasks(&filter.store_filter(crate::tasks::now_ms()), filter.before, filter.limit).await?;
    Ok(TaskListing { tasks, next })
}

/// The newest `limit` unfinished tasks (the event producer's watch).
pub async fn unfinished(host: &Host, limit: usize) -> Result<Vec<TaskRow>, String> {
    let filter = crate::tasks::TaskFilter { statuses: vec![TaskStatus::Working, TaskStatus::InputRequired], ..Default::default() };
    Ok(host.operator_tasks(&filter, None, limit).await?.0)
}

/// Task `id`'s row, if it exists.
pub async fn one(host: &Host, id: &str) -> Result<Option<TaskRow>, String> {
    Ok(host.operator_task(id).await?.map(|(row, _)| row))
}

/// Everything the console may show of task `id`: its row and its details.
pub async fn detail(host: &Host, id: &str) -> Result<Option<Value>, String> {
    Ok(host.operator_task(id).await?.map(|(row, mut detail)| {
        detail["task"] = serde_json::to_value(row).expect("rows serialize");
        detail
    }))
}

/// The reason a cancel's body gives, if any: `{}` or `{"reason": "…"}`, one line of at most
/// 500 characters (it becomes the task's status message, which its client reads).
pub fn reason(body: &[u8]) -> Result<Option<String>, ApiRefusal> {
    if body.is_empty() {
        return Ok(None);
    }
    let body: Value = serde_json::from_slice(body).map_err(|e| ApiRefusal::bad_request(format!("the body is not JSON: {e}")))?;
    let reason = match body.get("reason") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(reason)) => reason.trim(),
        Some(_) => return Err(ApiRefusal::bad_request("`reason` must be a string")),
    };
    if reason.is_empty() {
        return Ok(None);
    }
    if reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(ApiRefusal::bad_request("`reason` is one line of at most 500 characters"));
    }
    Ok(Some(reason.to_owned()))
}

/// Cancels task `id` through the store, for the operator `by`.
pub async fn cancel(host: &Host, id: &str, by: Acting<'_>) -> Result<TaskRow, ApiRefusal> {
    host.operator_cancel(id, by).await.map_err(|e| match e {
        CancelRefusal::NotFound => ApiRefusal::new(StatusCode::NOT_FOUND, format!("no task `{id}`")),
        CancelRefusal::Ended(status) => {
            ApiRefusal::new(StatusCode::CONFLICT, format!("task `{id}` is already {status}: only a working or input_required task can be cancelled"))
        }
        CancelRefusal::Store(e) => ApiRefusal::new(StatusCode::SERVICE_UNAVAILABLE, format!("the task store did not answer: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_reason_is_one_short_line_or_none() {
        assert_eq!(reason(b"").unwrap(), None);
        assert_eq!(reason(b"{}").unwrap(), None);
        assert_eq!(reason(br#"{"reason": "  stuck  "}"#).unwrap().as_deref(), Some("stuck"));
        assert_eq!(reason(br#"{"reason": 7}"#).unwrap_err().status, StatusCode::BAD_REQUEST);
        assert_eq!(reason(br#"{"reason": "two\nlines"}"#).unwrap_err().status, StatusCode::BAD_REQUEST);
        assert_eq!(reason(b"not json").unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_task_id_is_checked_before_any_store_is_asked() {
        assert!(check_id("0b5e3c1e-4f7a-4c1e-9a65-1d2c3b4a5f60").is_ok());
        assert!(check_id("../etc").unwrap_err().message.starts_with("`../etc` is not a task id"));
        assert!(check_id(&"a".repeat(200)).is_err());
    }
}
