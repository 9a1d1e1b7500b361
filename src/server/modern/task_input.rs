//! Input for tasks of the extension (SEP-2663): a task whose guest asks turns `input_required`,
//! `tasks/get` shows its outstanding `inputRequests`, and `tasks/update` delivers the answers to
//! the guest, which has been waiting in the host meanwhile.
//!
//! The questions wait here, in the memory of the replica that runs the guest, keyed by task id:
//! a `tasks/get` or `tasks/update` that reaches another replica sees the task `input_required`
//! (from the store) but not its questions. Keys are unique over the task's life: a plugin that
//! asks under a key it used before gets `KEY-2`, `KEY-3`, … on the wire, and its own key back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::input::Question;
use crate::mcp::modern::ClientCapabilities;
use crate::mcp::RpcError;
use crate::runtime::{
    CallObserver, ClientAnswer, ElicitResponse, InputRequest, InputResponse, Keyed, LogLevel, RequestError, Root, SamplingRequest, SamplingResponse,
};

/// One question waiting for its answer.
struct Waiting {
    key: String,
    question: Question,
    answer: oneshot::Sender<InputResponse>,
}

/// The questions of this replica's running tasks, by task id (a task without questions has no
/// entry).
#[derive(Default)]
pub struct TaskInputs(Mutex<HashMap<String, Vec<Waiting>>>);

impl TaskInputs {
    /// The task's outstanding `inputRequests`, when it has any here.
    pub(in crate::server) fn outstanding(&self, task: &str) -> Option<Map<String, Value>> {
        let tasks = self.0.lock().unwrap();
        let waiting = tasks.get(task).filter(|w| !w.is_empty())?;
        Some(waiting.iter().map(|w| (w.key.clone(), w.question.request.clone())).collect())
    }

    /// Delivers `responses` to the task's waiting questions: keys not outstanding are ignored,
    /// and an answer that does not fit its question refuses the whole update (nothing delivered).
    pub(in crate::server) fn deliver(&self, task: &str, responses: &Map<String, Value>) -> Result<(), RpcError> {
        let mut tasks = self.0.lock().unwrap();
        let Some(questions) = tasks.get_mut(task) else { return Ok(()) };
        let mut answers = Vec::new();
        for (key, response) in responses {
            if let Some(waiting) = questions.iter().find(|w| &w.key == key) {
                let answer = waiting
                    .question
                    .read(response)
                    .map_err(|why| RpcError::invalid_params(format!("inputResponses.{key} does not answer its request: {why}")))?;
                answers.push((key.clone(), answer));
            }
        }
        for (key, answer) in answers {
            if let Some(at) = questions.iter().position(|w| w.key == key) {
                let waiting = questions.remove(at);
                let _ = waiting.answer.send(answer);
            }
        }
        if questions.is_empty() {
            tasks.remove(task);
        }
        Ok(())
    }

    /// Parks `questions` (wire key, question) for `task`.
    fn park(&self, task: &str, questions: Vec<(String, Question)>) -> Vec<oneshot::Receiver<InputResponse>> {
        let mut tasks = self.0.lock().unwrap();
        let waiting = tasks.entry(task.to_owned()).or_default();
        questions
            .into_iter()
            .map(|(key, question)| {
                let (answer, answered) = oneshot::channel();
                waiting.push(Waiting { key, question, answer });
                answered
            })
            .collect()
    }

    /// Withdraws the task's waiting questions `keys` (the guest stopped waiting).
    fn withdraw(&self, task: &str, keys: &[String]) {
        let mut tasks = self.0.lock().unwrap();
        if let Some(waiting) = tasks.get_mut(task) {
            waiting.retain(|w| !keys.contains(&w.key));
            if waiting.is_empty() {
                tasks.remove(task);
            }
        }
    }
}

/// Withdraws parked questions when the guest stops waiting (answered, cancelled, out of time).
struct Parked {
    inputs: Arc<TaskInputs>,
    task: String,
    keys: Vec<String>,
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.inputs.withdraw(&self.task, &self.keys);
    }
}

/// A 2026-07-28 task's requestor: the guest's questions wait in [`TaskInputs`] for
/// `tasks/update`, for the capabilities the creating request declared.
pub(in crate::server) struct TaskInput {
    inputs: Arc<TaskInputs>,
    capabilities: ClientCapabilities,
    /// Every wire key the task has used: keys are unique over its life.
    used: Mutex<HashSet<String>>,
}

impl TaskInput {
    pub(in crate::server) fn new(inputs: Arc<TaskInputs>, capabilities: ClientCapabilities) -> TaskInput {
        TaskInput { inputs, capabilities, used: Mutex::default() }
    }

    /// `key`, or `key-2`, `key-3`, … when the task used it before.
    fn wire_key(&self, key: &str) -> String {
        let mut used = self.used.lock().unwrap();
        let mut wire = key.to_owned();
        let mut n = 1;
        while used.contains(&wire) {
            n += 1;
            wire = format!("{key}-{n}");
        }
        used.insert(wire.clone());
        wire
    }

    fn declared(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicit { .. } => self.capabilities.elicitation,
            InputRequest::Sample(_) => self.capabilities.sampling,
            InputRequest::ListRoots => self.capabilities.roots,
        }
    }

    fn single<T: Send + 'static>(&self, task: Option<&str>, key: &str, request: InputRequest, pick: fn(InputResponse) -> Option<T>) -> ClientAnswer<T> {
        let answer = self.ask(task, vec![(key.to_owned(), request)]);
        Box::pin(async move {
            let (_, answer) = answer.await?.into_iter().next().ok_or_else(|| RequestError::Refused("no answer".into()))?;
            pick(answer).ok_or_else(|| RequestError::Refused("the answer is of another kind".into()))
        })
    }
}

impl CallObserver for TaskInput {
    // Nobody reads a task's stream: progress messages reach the task's record through the
    // engine's observer, logs only the host's log.
    fn log(&self, _: LogLevel, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}

    fn elicit(&self, task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        self.single(task, "elicitation", InputRequest::Elicit { message, requested_schema }, |a| if let InputResponse::Elicit(e) = a { Some(e) } else { None })
    }

    fn sample(&self, task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        self.single(task, "sampling", InputRequest::Sample(request), |a| if let InputResponse::Sample(s) = a { Some(s) } else { None })
    }

    fn roots(&self, task: Option<&str>) -> ClientAnswer<Vec<Root>> {
        self.single(task, "roots", InputRequest::ListRoots, |a| if let InputResponse::Roots(r) = a { Some(r) } else { None })
    }

    fn ask(&self, task: Option<&str>, requests: Keyed<InputRequest>) -> ClientAnswer<Keyed<InputResponse>> {
        let refuse = |e: RequestError| -> ClientAnswer<Keyed<InputResponse>> { Box::pin(std::future::ready(Err(e))) };
        let Some(task) = task else { return refuse(RequestError::Unavailable("no task to wait in".into())) };
        if let Some((_, undeclared)) = requests.iter().find(|(_, r)| !self.declared(r)) {
            let capability = undeclared.capability();
            return refuse(RequestError::Unsupported(format!(
                "the request that created the task did not declare the `{capability}` capability, so the client was not asked"
            )));
        }
        let mut questions = Vec::with_capacity(requests.len());
        for (_, request) in &requests {
            match Question::of(request.clone()) {
                Ok(question) => questions.push(question),
                Err(e) => return refuse(e),
            }
        }
        let keys: Vec<String> = requests.into_iter().map(|(key, _)| key).collect();
        let wire: Vec<String> = keys.iter().map(|k| self.wire_key(k)).collect();
        let parked = self.inputs.park(task, wire.iter().cloned().zip(questions).collect());
        let guard = Parked { inputs: self.inputs.clone(), task: task.to_owned(), keys: wire };
        Box::pin(async move {
            let _guard = guard;
            let mut answers = Vec::with_capacity(parked.len());
            for (key, answered) in keys.into_iter().zip(parked) {
                let answer = answered.await.map_err(|_| RequestError::Unavailable("the task ended before the client answered".into()))?;
                answers.push((key, answer));
            }
            Ok(answers)
        })
    }
}
