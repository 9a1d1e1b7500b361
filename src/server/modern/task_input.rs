//! Input for tasks of the extension (SEP-2663): a task whose guest asks turns `input_required`,
//! `tasks/get` shows its outstanding `inputRequests`, and `tasks/update` delivers the answers to
//! the guest, which has been waiting in the host meanwhile.
//!
//! The questions are kept with the task in the store ([`Inputs`]), so any replica shows them and
//! takes their answers: `tasks/update` on another replica checks each answer against its stored
//! question, records it, and the replica whose guest waits is woken (see `tasks::input`). The
//! replica that runs the guest also holds its questions in memory, so that its own `tasks/get`
//! shows them from the moment the task is `input_required` (the store write runs beside the
//! status write). Keys are unique over the task's life: a plugin that asks under a key it used
//! before gets `KEY-2`, `KEY-3`, … on the wire, and its own key back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::input::Question;
use crate::mcp::modern::ClientCapabilities;
use crate::mcp::RpcError;
use crate::runtime::{
    CallObserver, ClientAnswer, ElicitResponse, InputRequest, InputResponse, Keyed, LogLevel, RequestError, Root, SamplingRequest, SamplingResponse,
};
use crate::server::task_view::engine_error;
use crate::tasks::Inputs;

/// The capabilities a task's creating request declared, as kept with the task: in the wire's own
/// `clientCapabilities` form (only what a task may ask), so [`ClientCapabilities::read`] reads
/// them back on whichever replica runs it.
pub(in crate::server) fn kept(capabilities: ClientCapabilities) -> Value {
    let mut kept = Map::new();
    for (declared, name) in [(capabilities.elicitation, "elicitation"), (capabilities.sampling, "sampling"), (capabilities.roots, "roots")] {
        if declared {
            kept.insert(name.into(), Value::Object(Map::new()));
        }
    }
    Value::Object(kept)
}

/// One question waiting here for its answer.
struct Waiting {
    key: String,
    question: Arc<Question>,
    /// Turns true once the question is in the store: an answer taken here before that waits.
    kept: watch::Receiver<bool>,
}

/// The questions of this replica's running tasks, by task id (a task without questions has no
/// entry), and the store's side of every task's questions.
pub struct TaskInputs {
    waiting: Mutex<HashMap<String, Vec<Waiting>>>,
    store: Inputs,
}

/// What refuses an update whose answer does not fit its question.
fn misfit(key: &str, why: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params(format!("inputResponses.{key} does not answer its request: {why}"))
}

impl TaskInputs {
    /// Questions asked and answered through `store` (the engine's [`Inputs`]).
    pub fn new(store: Inputs) -> TaskInputs {
        TaskInputs { waiting: Mutex::default(), store }
    }

    /// The task's outstanding `inputRequests`: from memory when its guest waits here (less those
    /// another replica has taken answers to), else from the store (it waits on another replica).
    /// `None` when it has none.
    pub(in crate::server) async fn outstanding(&self, task: &str) -> Result<Option<Map<String, Value>>, RpcError> {
        if let Some(mut here) = self.outstanding_here(task) {
            // Those answered on another replica wait here only until the guest reads them.
            for asked in self.store.questions(task).await.map_err(engine_error)? {
                if asked.answer.is_some() {
                    here.remove(&asked.key);
                }
            }
            return Ok((!here.is_empty()).then_some(here));
        }
        let stored = self.store.outstanding(task).await.map_err(engine_error)?;
        Ok((!stored.is_empty()).then(|| stored.into_iter().map(|q| (q.key, q.request)).collect()))
    }

    /// Forgets the questions an earlier attempt of the task left in the store (its host died
    /// while it waited): the attempt that runs now asks afresh.
    pub(in crate::server) async fn forget_earlier(&self, task: &str) -> Result<(), RpcError> {
        let left: Vec<String> = self.store.questions(task).await.map_err(engine_error)?.into_iter().map(|q| q.key).collect();
        if !left.is_empty() {
            self.store.withdraw(task, left);
        }
        Ok(())
    }

    fn outstanding_here(&self, task: &str) -> Option<Map<String, Value>> {
        let tasks = self.waiting.lock().unwrap();
        let waiting = tasks.get(task).filter(|w| !w.is_empty())?;
        Some(waiting.iter().map(|w| (w.key.clone(), w.question.request.clone())).collect())
    }

    /// Delivers `responses` to the task's outstanding questions, wherever its guest waits: keys
    /// not outstanding are ignored, and an answer that does not fit its question refuses the
    /// whole update (nothing delivered).
    pub(in crate::server) async fn deliver(&self, task: &str, responses: &Map<String, Value>) -> Result<(), RpcError> {
        let answers = match self.check_here(task, responses)? {
            Some((answers, kept)) => {
                for mut kept in kept {
                    // Err: the store refused the questions; the answer below finds nothing.
                    let _ = kept.wait_for(|kept| *kept).await;
                }
                answers
            }
            None => {
                let outstanding = self.store.outstanding(task).await.map_err(engine_error)?;
                let mut answers = Vec::new();
                for (key, response) in responses {
                    let Some(asked) = outstanding.iter().find(|q| &q.key == key) else { continue };
                    let question = Question::from_request(&asked.request).ok_or_else(|| misfit(key, "the stored question cannot be read"))?;
                    question.read(response).map_err(|why| misfit(key, why))?;
                    answers.push((key.clone(), response.clone()));
                }
                answers
            }
        };
        if answers.is_empty() {
            return Ok(());
        }
        let recorded = self.store.answer(task, answers).await.map_err(engine_error)?;
        // Answered here: gone from this replica's `tasks/get` at once.
        let mut tasks = self.waiting.lock().unwrap();
        if let Some(questions) = tasks.get_mut(task) {
            questions.retain(|w| !recorded.contains(&w.key));
            if questions.is_empty() {
                tasks.remove(task);
            }
        }
        Ok(())
    }

    /// The answers among `responses` to the questions the task's guest waits for here, checked;
    /// `None` when it waits for none here. With them, whether each question is in the store yet.
    #[allow(clippy::type_complexity)]
    fn check_here(&self, task: &str, responses: &Map<String, Value>) -> Result<Option<(Vec<(String, Value)>, Vec<watch::Receiver<bool>>)>, RpcError> {
        let tasks = self.waiting.lock().unwrap();
        let Some(questions) = tasks.get(task) else { return Ok(None) };
        let (mut answers, mut kept) = (Vec::new(), Vec::new());
        for (key, response) in responses {
            if let Some(waiting) = questions.iter().find(|w| &w.key == key) {
                waiting.question.read(response).map_err(|why| misfit(key, why))?;
                answers.push((key.clone(), response.clone()));
                kept.push(waiting.kept.clone());
            }
        }
        Ok(Some((answers, kept)))
    }

    /// Holds `questions` (wire key, question) of `task` here, for this replica's `tasks/get`.
    fn park(&self, task: &str, questions: &[(String, Arc<Question>)], kept: watch::Receiver<bool>) {
        let mut tasks = self.waiting.lock().unwrap();
        let waiting = tasks.entry(task.to_owned()).or_default();
        waiting.extend(questions.iter().map(|(key, question)| Waiting { key: key.clone(), question: question.clone(), kept: kept.clone() }));
    }

    /// Withdraws the task's waiting questions `keys` from memory (the guest stopped waiting).
    fn withdraw(&self, task: &str, keys: &[String]) {
        let mut tasks = self.waiting.lock().unwrap();
        if let Some(waiting) = tasks.get_mut(task) {
            waiting.retain(|w| !keys.contains(&w.key));
            if waiting.is_empty() {
                tasks.remove(task);
            }
        }
    }
}

/// Withdraws parked questions when the guest stops waiting (answered, cancelled, out of time);
/// unless they were answered, from the store too.
struct Parked {
    inputs: Arc<TaskInputs>,
    task: String,
    keys: Vec<String>,
    answered: bool,
}

impl Parked {
    /// The questions were answered (and the store forgot them as their answers were read).
    fn settle(&mut self) {
        self.answered = true;
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.inputs.withdraw(&self.task, &self.keys);
        if !self.answered {
            self.inputs.store.withdraw(&self.task, std::mem::take(&mut self.keys));
        }
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

    /// For a task this replica runs without its creating request (another replica admitted it,
    /// or it runs again after a crash): what that request declared, as [`kept`] stored it. The
    /// client holds the task id and polls, so its questions wait in the store like any other's.
    pub(in crate::server) fn stored(inputs: Arc<TaskInputs>, kept: &Value) -> TaskInput {
        let declared = kept.as_object().map(ClientCapabilities::read).unwrap_or_default();
        TaskInput::new(inputs, declared)
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
        super::input::declares(self.capabilities, request)
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
        let questions: Vec<(String, Arc<Question>)> = wire.iter().cloned().zip(questions.into_iter().map(Arc::new)).collect();
        let (kept_tx, kept_rx) = watch::channel(false);
        self.inputs.park(task, &questions, kept_rx);
        // Kept with the task at once (beside the `input_required` write), for every replica.
        let store = self.inputs.store.clone();
        let (id, asked) = (task.to_owned(), questions.iter().map(|(key, q)| (key.clone(), q.request.clone())).collect());
        let kept = tokio::spawn(async move {
            let kept = store.ask(&id, asked).await;
            kept_tx.send_replace(kept.is_ok());
            kept
        });
        let mut guard = Parked { inputs: self.inputs.clone(), task: task.to_owned(), keys: wire.clone(), answered: false };
        Box::pin(async move {
            let unavailable = |e: &dyn std::fmt::Display| RequestError::Unavailable(format!("the task store failed: {e}"));
            kept.await.map_err(|e| unavailable(&e))?.map_err(|e| unavailable(&e))?;
            let answers = guard.inputs.store.answers(&guard.task, &wire).await.map_err(|e| unavailable(&e))?;
            guard.settle();
            let mut read = Vec::with_capacity(answers.len());
            for ((key, (_, question)), (_, answer)) in keys.into_iter().zip(&questions).zip(answers) {
                // Checked when it was recorded, on whichever replica took it.
                read.push((key, question.read(&answer).map_err(RequestError::Refused)?));
            }
            Ok(read)
        })
    }
}
