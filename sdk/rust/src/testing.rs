//! Testing tools on the host target, without wasm: call them, read what they logged and
//! reported, make `cancelled()` turn true, answer their questions to the client, crash them at
//! a checkpoint and resume them, read their resources and prompts.
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
//! A tool that asks the client (`elicit`, `sample`, `roots`, `ask`) gets the answers the test
//! queued, in order ([`answer_elicit`], [`decline_elicit`], [`answer_sample`], [`answer_roots`],
//! [`refuse_next`]); [`questions`] shows what it asked. A question with no answer queued, or
//! whose queued answer is of another kind, panics naming both: the test forgot one.
//!
//! Everything recorded is per thread, and each `#[test]` runs on a thread of its own.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet, VecDeque};

use serde::Serialize;
use serde_json::Value;

use crate::host::LogLevel;
use crate::input::{Answer, Form, FormAction, RequestError, Root, Sampled, Sampling};
use crate::message::{Message, Role};
use crate::output::{CallResult, Content};
use crate::prompt::PromptError;
use crate::resource::{Contents, ReadError};
use crate::surface::{Completion, Reference, Surface};
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
    pub updated: Vec<String>,
    pub answers: VecDeque<Result<Answer, RequestError>>,
    pub asked: Vec<Asked>,
}

/// A question a tool asked the client, as [`questions`] shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Asked {
    /// A form: its message and requested schema (what `elicit::<T>` made of `T`).
    Elicit {
        /// What the user was asked.
        message: String,
        /// The requested schema.
        schema: Value,
    },
    /// A request for the client's model.
    Sample(Sampling),
    /// `roots/list`.
    Roots,
}

#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
impl Asked {
    fn describe(&self) -> String {
        match self {
            Asked::Elicit { message, .. } => format!("elicit {message:?}"),
            Asked::Sample(s) => format!("sample {:?}", s.messages.last().and_then(Message::text).unwrap_or("")),
            Asked::Roots => "roots".into(),
        }
    }
}

#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
fn kind(answer: &Answer) -> &'static str {
    match answer {
        Answer::Form(_) => "elicit",
        Answer::Sampled(_) => "sample",
        Answer::Roots(_) => "roots",
    }
}

/// The answer queued for `asked`; panics when there is none or it answers another kind.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn next_answer(asked: Asked) -> Result<Answer, RequestError> {
    let what = asked.describe();
    let queued = RECORDER.with_borrow_mut(|r| {
        r.asked.push(asked.clone());
        r.answers.pop_front()
    });
    let Some(queued) = queued else {
        panic!("the tool asked the client ({what}) but no answer is queued: queue one with testing::answer_elicit, decline_elicit, answer_sample, answer_roots or refuse_next");
    };
    let answer = queued?;
    let expected = match asked {
        Asked::Elicit { .. } => "elicit",
        Asked::Sample(_) => "sample",
        Asked::Roots => "roots",
    };
    assert_eq!(kind(&answer), expected, "the tool asked the client ({what}) but the next queued answer is for `{}`", kind(&answer));
    Ok(answer)
}

fn queue(answer: Result<Answer, RequestError>) {
    RECORDER.with_borrow_mut(|r| r.answers.push_back(answer));
}

/// Queues the user's answer to the next form: `content` (any serde value, usually the form's
/// struct or a `json!` object), accepted.
pub fn answer_elicit(content: impl Serialize) {
    let content = serde_json::to_value(content).expect("the queued form answer serialises");
    queue(Ok(Answer::Form(Form { action: FormAction::Accept, content: Some(content) })));
}

/// Queues a "no" to the next form.
pub fn decline_elicit() {
    queue(Ok(Answer::Form(Form { action: FormAction::Decline, content: None })));
}

/// Queues a dismissal of the next form.
pub fn cancel_elicit() {
    queue(Ok(Answer::Form(Form { action: FormAction::Cancel, content: None })));
}

/// Queues the model's answer to the next sampling request: one text block from model `test`.
pub fn answer_sample(text: impl Into<String>) {
    let sampled = Sampled { role: Role::Assistant, content: vec![Content::Text(text.into())], model: "test".into(), stop_reason: Some("endTurn".into()) };
    queue(Ok(Answer::Sampled(sampled)));
}

/// Queues the client's roots for the next `roots()` (or roots question of an `ask`).
pub fn answer_roots(uris: &[&str]) {
    queue(Ok(Answer::Roots(uris.iter().map(|u| Root { uri: (*u).to_owned(), name: None }).collect())));
}

/// Makes the next question, whatever its kind, fail with `error`: a client without the
/// capability (`RequestError::Unsupported`), one that refused, ...
pub fn refuse_next(error: RequestError) {
    queue(Err(error));
}

/// The questions asked on this thread so far, oldest first (and forgets them).
pub fn questions() -> Vec<Asked> {
    RECORDER.with_borrow_mut(|r| std::mem::take(&mut r.asked))
}

/// The URIs the tools reported changed with `resource_updated`, oldest first (and forgets them).
pub fn resource_updates() -> Vec<String> {
    RECORDER.with_borrow_mut(|r| std::mem::take(&mut r.updated))
}

/// Reads `uri` from `surface`, as the host's `resources/read` would.
pub fn read(surface: &Surface, uri: &str) -> Result<Vec<Contents>, ReadError> {
    surface.read(uri)
}

/// Renders prompt `name` of `surface` with `arguments` (name, value pairs).
pub fn get_prompt(surface: &Surface, name: &str, arguments: &[(&str, &str)]) -> Result<Vec<Message>, PromptError> {
    let arguments: BTreeMap<String, String> = arguments.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    surface.get_prompt(name, &arguments)
}

/// Completes `argument` of `reference` whose text so far is `value`, with no other arguments.
pub fn complete(surface: &Surface, reference: Reference, argument: &str, value: &str) -> Completion {
    surface.complete(&reference, argument, value, &BTreeMap::new())
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

/// Forgets everything recorded and queued and makes `cancelled()` false again.
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
