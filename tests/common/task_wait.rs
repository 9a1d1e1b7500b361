//! Waiting on a task from a test: poll `tasks/get` until a condition holds, and read the keys of
//! the questions it waits on.

use serde_json::Value;

use super::client::TIMEOUT;

/// Calls `get` (a `tasks/get` result) until `done` holds, failing with `what` after [`TIMEOUT`].
pub fn poll_task(get: impl FnMut() -> Value, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    super::wait::wait_on(what, TIMEOUT, get, done)
}

/// The keys of the task's outstanding `inputRequests`, sorted.
pub fn input_keys(task: &Value) -> Vec<String> {
    let mut keys: Vec<String> = task["inputRequests"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    keys.sort();
    keys
}
