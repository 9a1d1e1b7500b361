//! A task's call observer: what a guest reports while it runs as a task goes to the client that
//! created the task (while it is connected) and onto the task's record.
//!
//! It sits here, not in the engine, because it joins the two sides the engine must not know: the
//! runtime's [`CallObserver`] and the session's notifier below, the engine's [`TaskControl`]
//! above. A request to the client (elicitation, sampling) turns the task `input_required` until
//! the answer is in.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::runtime::{
    CallObserver, ClientAnswer, ElicitResponse, InputRequest, InputResponse, Keyed, LogLevel, RequestError, Root, SamplingRequest, SamplingResponse,
};
use crate::tasks::{Progress, TaskControl};

/// Forwards a task's logs and progress to its requestor, records progress messages as its
/// status message, and brackets requests to the client with `input_required` / `working`.
pub(super) struct TaskObserver {
    control: TaskControl,
    /// The session's notifier; `None` once the requestor is gone (a task recovered after a
    /// restart).
    forward: Option<Arc<dyn CallObserver>>,
    /// The last checkpoint, when the task runs again after an interruption.
    resume: Option<Vec<u8>>,
    /// Whether progress is passed on through the store, for a requestor on another replica.
    publish: bool,
    /// Where the operator's console reads the task's last progress.
    board: Option<Arc<super::progress_board::ProgressBoard>>,
}

impl TaskObserver {
    pub(super) fn new(control: TaskControl, forward: Option<Arc<dyn CallObserver>>) -> TaskObserver {
        TaskObserver { control, forward, resume: None, publish: false, board: None }
    }

    /// The observer of a run that resumes from `state`, the task's last checkpoint.
    pub(super) fn resuming(self, state: Option<Vec<u8>>) -> TaskObserver {
        TaskObserver { resume: state, ..self }
    }

    /// The observer of a run whose requestor, having asked for progress, is on the replica that
    /// admitted the task (this one took it over): progress goes through the store to it.
    pub(super) fn publishing(self, publish: bool) -> TaskObserver {
        TaskObserver { publish, ..self }
    }

    /// The observer of a run whose progress is also kept on `board`.
    pub(super) fn reporting(self, board: Arc<super::progress_board::ProgressBoard>) -> TaskObserver {
        TaskObserver { board: Some(board), ..self }
    }

    /// Runs a request to the requestor with the task `input_required` meanwhile. The request is
    /// made at once (a 2026-07-28 requestor parks its questions then, so that a `tasks/get`
    /// that sees `input_required` finds them); a 2025-11-25 one sends it only when awaited.
    fn bracket<T, F>(&self, waiting_for: String, ask: F) -> ClientAnswer<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn CallObserver, &str) -> ClientAnswer<T> + Send + 'static,
    {
        let Some(forward) = self.forward.clone() else {
            let why = "the client that started this task is not connected (the host restarted since), so nobody can be asked";
            return Box::pin(std::future::ready(Err(RequestError::Unavailable(why.into()))));
        };
        if self.control.cancel().is_cancelled() {
            return Box::pin(std::future::ready(Err(RequestError::Unavailable("the task was cancelled".into()))));
        }
        let control = self.control.clone();
        let answer = ask(forward.as_ref(), control.id());
        Box::pin(async move {
            // Stored before the client is asked, so a client that sees the request and polls
            // finds the task waiting for it.
            control.set_input_required(waiting_for).await;
            let answer = answer.await;
            // Cancelled or out of time, the task ends from `input_required`: this write is refused.
            control.set_working().await;
            answer
        })
    }
}

impl CallObserver for TaskObserver {
    fn checkpoint(&self, state: &[u8]) -> Option<BoxFuture<'static, Result<(), String>>> {
        let (control, state) = (self.control.clone(), state.to_vec());
        Some(Box::pin(async move {
            match control.checkpoint(state).await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err("the task has ended (or another host took it over): the checkpoint was not stored".into()),
                Err(e) => Err(format!("the checkpoint could not be stored: {e}")),
            }
        }))
    }

    fn resume(&self) -> Option<Vec<u8>> {
        self.resume.clone()
    }

    fn log(&self, level: LogLevel, message: &str) {
        if let (Some(forward), false) = (&self.forward, self.control.cancel().is_cancelled()) {
            forward.log(level, message);
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if self.control.cancel().is_cancelled() {
            return;
        }
        if let Some(text) = &message {
            self.control.set_message(text.clone());
        }
        if let Some(board) = &self.board {
            board.report(self.control.id(), Progress { progress, total, message: message.clone() });
        }
        if let Some(forward) = &self.forward {
            forward.progress(progress, total, message);
        } else if self.publish {
            self.control.publish_progress(Progress { progress, total, message });
        }
    }

    fn elicit(&self, _task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        let waiting = format!("waiting for the user: {message}");
        self.bracket(waiting, move |forward, id| forward.elicit(Some(id), message, requested_schema))
    }

    fn sample(&self, _task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        self.bracket("waiting for the client's model to answer".into(), move |forward, id| forward.sample(Some(id), request))
    }

    fn roots(&self, _task: Option<&str>) -> ClientAnswer<Vec<Root>> {
        self.bracket("waiting for the client's roots".into(), move |forward, id| forward.roots(Some(id)))
    }

    fn ask(&self, _task: Option<&str>, requests: Keyed<InputRequest>) -> ClientAnswer<Keyed<InputResponse>> {
        self.bracket("waiting for the client's input".into(), move |forward, id| forward.ask(Some(id), requests))
    }
}
