//! Testing tools on the host target, without wasm: call them, read what they logged and
//! reported, make `cancelled()` turn true.
//!
//! ```ignore
//! use corral_plugin::testing;
//! use serde_json::json;
//!
//! #[test]
//! fn greets() {
//!     testing::check(&tools());
//!     let result = testing::call(&tools(), "greet", json!({"name": "Ada"}));
//!     assert_eq!(result.text_content(), "Hello, Ada!");
//! }
//! ```
//!
//! Everything recorded is per thread, and each `#[test]` runs on a thread of its own.

use std::cell::RefCell;
use std::collections::HashSet;

use serde_json::Value;

use crate::host::LogLevel;
use crate::output::CallResult;
use crate::tool::{dispatch, Tool};

#[derive(Default)]
pub(crate) struct Recorder {
    pub logs: Vec<(LogLevel, String)>,
    pub progress: Vec<(f64, Option<f64>, Option<String>)>,
    pub cancel_checks: usize,
    pub cancel_after: Option<usize>,
    pub checkpoints: Vec<Vec<u8>>,
    pub crash_after: Option<usize>,
    pub resume: Option<Vec<u8>>,
}

/// What [`crash_after`] makes the `n`th checkpoint panic with: the host died there.
#[derive(Debug)]
pub struct Crashed;

thread_local! {
    pub(crate) static RECORDER: RefCell<Recorder> = RefCell::new(Recorder::default());
}

/// Calls tool `name` of `tools` with `arguments`, as the host would (an unknown name is an
/// `isError` result). The host checks arguments against the input schema first; this does not.
pub fn call(tools: &[Tool], name: &str, arguments: Value) -> CallResult {
    dispatch(tools, name, &arguments.to_string())
}

/// The log lines recorded on this thread so far (and forgets them).
pub fn logs() -> Vec<(LogLevel, String)> {
    RECORDER.with_borrow_mut(|r| std::mem::take(&mut r.logs))
}

/// The progress reports recorded on this thread so far, as `(progress, total, message)`
/// (and forgets them).
pub fn progress_reports() -> Vec<(f64, Option<f64>, Option<String>)> {
    RECORDER.with_borrow_mut(|r| std::mem::take(&mut r.progress))
}

/// Makes `cancelled()` answer false `checks` times on this thread, then true: `cancel_after(0)`
/// is a call cancelled before it starts.
pub fn cancel_after(checks: usize) {
    RECORDER.with_borrow_mut(|r| {
        r.cancel_checks = 0;
        r.cancel_after = Some(checks);
    });
}

/// Makes the `n`th `checkpoint` on this thread a crash: it is stored, then the call stops there
/// (it panics with [`Crashed`]), as if the host died right after the checkpoint. Run the call
/// with [`run_until_crash`], then call again: `resume()` then returns the last checkpoint.
pub fn crash_after(n: usize) {
    RECORDER.with_borrow_mut(|r| {
        r.checkpoints.clear();
        r.crash_after = Some(n);
    });
}

/// Runs `call`; when it crashes (see [`crash_after`]), returns `None` and arranges for the next
/// call to resume from the last checkpoint, as a task run again after a crash does. A call that
/// ends returns its result.
pub fn run_until_crash<R>(call: impl FnOnce() -> R) -> Option<R> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        if info.payload().downcast_ref::<Crashed>().is_none() {
            eprintln!("{info}");
        }
    }));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
    std::panic::set_hook(hook);
    match outcome {
        Ok(result) => Some(result),
        Err(payload) if payload.is::<Crashed>() => {
            RECORDER.with_borrow_mut(|r| {
                r.resume = r.checkpoints.last().cloned();
                r.crash_after = None;
            });
            None
        }
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// The checkpoints recorded on this thread so far, oldest first (and forgets them).
pub fn checkpoints() -> Vec<Vec<u8>> {
    RECORDER.with_borrow_mut(|r| std::mem::take(&mut r.checkpoints))
}

/// Makes `resume()` return `state` on this thread: a run after an interruption.
pub fn resume_with(state: Option<Vec<u8>>) {
    RECORDER.with_borrow_mut(|r| r.resume = state);
}

/// Forgets logs and progress and makes `cancelled()` false again.
pub fn reset() {
    RECORDER.with_borrow_mut(|r| *r = Recorder::default());
}

/// Panics, saying why, if the host would refuse these tools: a name that is not 1-64 characters
/// of `A-Za-z0-9_-`, a name used twice, or a schema whose root is not `"type": "object"`.
pub fn check(tools: &[Tool]) {
    let mut seen = HashSet::new();
    for tool in tools {
        let name = tool.name();
        let name_ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        assert!(name_ok, "tool name {name:?} must be 1-64 characters of A-Z, a-z, 0-9, `_` and `-`");
        assert!(seen.insert(name.to_owned()), "tool name `{name}` is used twice");
        assert_object_schema(name, "input", &tool.input_schema());
        if let Some(schema) = tool.output_schema() {
            assert_object_schema(name, "output", &schema);
        }
    }
}

fn assert_object_schema(tool: &str, which: &str, schema: &Value) {
    assert!(
        schema.get("type") == Some(&Value::from("object")),
        "tool `{tool}`: the {which} schema must have `\"type\": \"object\"` at its root (use a struct), got {schema}"
    );
}
