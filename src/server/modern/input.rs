//! Input the 2026-07-28 way (MRTR): a plain request that needs the client's input ends with an
//! `InputRequiredResult`, and the client retries the same request with `inputResponses` and the
//! `requestState` it got.
//!
//! The retry runs the call again from the start, on whichever replica it reaches: a guest's
//! questions are answered from the answers recorded in the (signed) `requestState` and the
//! retry's `inputResponses`; the first question without an answer stops the guest, and every
//! question of that `ask` without an answer goes out in a new `InputRequiredResult`, with a new
//! state recording every answer the guest used. No replica keeps anything between rounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::state::{self, StateSecret};
use crate::mcp::modern::wire;
use crate::mcp::modern::ClientCapabilities;
use crate::mcp::RpcError;
use crate::runtime::{InputRequest, InputResponse, Keyed, RequestError};
use crate::server::ask;

/// `resultType` of a request that needs input first.
pub const INPUT_REQUIRED: &str = "input_required";

/// What a request brought for its input, checked before the guest runs.
pub(in crate::server) struct Round {
    capabilities: ClientCapabilities,
    secret: StateSecret,
    owner: String,
    request: String,
    /// Recorded answers and the retry's `inputResponses`, under their keys.
    offered: Map<String, Value>,
    /// Whether the method may answer with an input-required result (`tools/call`,
    /// `prompts/get`, `resources/read`); elsewhere every question is refused.
    enabled: bool,
    /// The answers the guest used in this run: the next state records them.
    used: Mutex<Map<String, Value>>,
    /// What the guest asked and nobody answered yet, in the order asked, as `{method, params}`.
    asked: Mutex<Vec<(String, Value)>>,
    /// An offered answer that does not fit its question: the request ends -32602 with this.
    malformed: Mutex<Option<String>>,
    /// Numbers the 0.2.0 `elicit` / `sample` calls of a run, for the keys the host chooses.
    calls: AtomicUsize,
}

impl Round {
    /// Reads `inputResponses` and `requestState` of `method`'s `params` for `owner`; a bad
    /// state or a malformed `inputResponses` is the request's -32602.
    pub(in crate::server) fn open(
        secret: &StateSecret,
        owner: &str,
        method: &str,
        params: &Map<String, Value>,
        capabilities: ClientCapabilities,
    ) -> Result<Round, RpcError> {
        let mut subject = params.clone();
        for key in ["_meta", "inputResponses", "requestState"] {
            subject.remove(key);
        }
        let request = state::request_digest(method, &Value::Object(subject));
        let mut offered = match params.get("requestState") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::String(text)) => state::open(secret, text, owner, &request, SystemTime::now()).map_err(|e| RpcError::invalid_params(e.to_string()))?,
            Some(_) => return Err(RpcError::invalid_params("requestState must be a string, as the server sent it")),
        };
        match params.get("inputResponses") {
            None => {}
            Some(Value::Object(responses)) => {
                for (key, answer) in responses {
                    if !answer.is_object() {
                        return Err(RpcError::invalid_params(format!(
                            "inputResponses.{key} must be an object (the result of the request under that key), not {answer}"
                        )));
                    }
                    // What an earlier round recorded stays: the guest already acted on it.
                    offered.entry(key.clone()).or_insert_with(|| answer.clone());
                }
            }
            Some(other) => return Err(RpcError::invalid_params(format!("inputResponses must be an object of answers under their keys, not {other}"))),
        }
        Ok(Round {
            capabilities,
            secret: secret.clone(),
            owner: owner.to_owned(),
            request,
            offered,
            enabled: true,
            used: Mutex::default(),
            asked: Mutex::default(),
            malformed: Mutex::default(),
            calls: AtomicUsize::new(0),
        })
    }

    /// A round for a method that cannot ask the client (`completion/complete`).
    pub(in crate::server) fn closed(capabilities: ClientCapabilities) -> Round {
        Round {
            capabilities,
            secret: StateSecret::random(),
            owner: String::new(),
            request: String::new(),
            offered: Map::new(),
            enabled: false,
            used: Mutex::default(),
            asked: Mutex::default(),
            malformed: Mutex::default(),
            calls: AtomicUsize::new(0),
        }
    }

    /// Whether the request declared what `request` needs.
    fn declared(&self, request: &InputRequest) -> bool {
        declares(self.capabilities, request)
    }

    /// The key the host chooses for a 0.2.0 `elicit` or `sample`: its kind and its place in the
    /// run (a retried run asks in the same order, so it finds its answers under the same keys).
    pub(in crate::server) fn host_key(&self, capability: &str) -> String {
        format!("{capability}-{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Answers `requests` (keys checked) from what the request offered. `Ok(None)`: something
    /// is missing or malformed, and the guest must stop ([`Round::stops`]). An undeclared
    /// capability or an unusable request is the guest's `Err`, nothing asked.
    pub(in crate::server) fn answer(&self, requests: Keyed<InputRequest>) -> Result<Option<Keyed<InputResponse>>, RequestError> {
        if !self.enabled {
            return Err(RequestError::Unavailable("this request cannot ask the client (only tools/call, prompts/get and resources/read can)".into()));
        }
        if let Some((_, undeclared)) = requests.iter().find(|(_, r)| !self.declared(r)) {
            let capability = undeclared.capability();
            return Err(RequestError::Unsupported(format!("the request did not declare the `{capability}` capability, so the client was not asked")));
        }
        let mut wire = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            wire.push((key, Question::of(request)?));
        }
        let mut answers = Vec::with_capacity(wire.len());
        let mut missing = Vec::new();
        for (key, question) in wire {
            match self.offered.get(&key) {
                Some(offered) => match question.read(offered) {
                    Ok(answer) => {
                        self.used.lock().unwrap().insert(key.clone(), offered.clone());
                        answers.push((key, answer));
                    }
                    Err(why) => {
                        self.malformed.lock().unwrap().get_or_insert(format!("inputResponses.{key} does not answer its request: {why}"));
                        return Ok(None);
                    }
                },
                None => missing.push((key, question.request)),
            }
        }
        if !missing.is_empty() {
            self.asked.lock().unwrap().extend(missing);
            return Ok(None);
        }
        Ok(Some(answers))
    }

    /// Whether the guest must stop: it asked something unanswered, or an answer was malformed.
    pub(in crate::server) fn stops(&self) -> bool {
        !self.asked.lock().unwrap().is_empty() || self.malformed.lock().unwrap().is_some()
    }

    /// Asks the client, under `key`, to send its person to a URL (`params`: an
    /// `ElicitRequestURLParams`): the request ends with an `InputRequiredResult` carrying it.
    pub(in crate::server) fn ask_url(&self, key: String, params: Value) {
        self.asked.lock().unwrap().push((key, json!({ "method": "elicitation/create", "params": params })));
    }

    /// The request's answer when the guest stopped for input: -32602 for a malformed answer,
    /// else the `InputRequiredResult`; `None` when the guest did not stop.
    pub(in crate::server) fn outcome(&self) -> Option<Result<Value, RpcError>> {
        if let Some(why) = self.malformed.lock().unwrap().clone() {
            return Some(Err(RpcError::invalid_params(why)));
        }
        let asked = self.asked.lock().unwrap();
        if asked.is_empty() {
            return None;
        }
        let requests: Map<String, Value> = asked.iter().cloned().collect();
        let used = self.used.lock().unwrap().clone();
        let request_state = state::seal(&self.secret, &self.owner, &self.request, used, SystemTime::now());
        Some(Ok(wire::result(json!({ "inputRequests": requests, "requestState": request_state }), INPUT_REQUIRED, None)))
    }
}

/// One question as it goes to the client, and how to read its answer.
pub(in crate::server) struct Question {
    /// `{method, params}`, as `inputRequests` carries it.
    pub(in crate::server) request: Value,
    read: Reader,
}

enum Reader {
    Elicit(Box<jsonschema::Validator>),
    Sample,
    Roots,
}

impl Question {
    /// The question of `request`; an unusable one (a schema that is not an object schema, a
    /// sampling request without messages, ...) is the guest's `invalid`.
    pub(in crate::server) fn of(request: InputRequest) -> Result<Question, RequestError> {
        Ok(match request {
            InputRequest::Elicit { message, requested_schema } => {
                let (mut params, validator) = ask::elicit_params(message, &requested_schema)?;
                params.insert("mode".into(), json!("form"));
                Question { request: json!({ "method": "elicitation/create", "params": params }), read: Reader::Elicit(Box::new(validator)) }
            }
            InputRequest::Sample(sampling) => {
                let params = ask::sampling_params(sampling)?;
                Question { request: json!({ "method": "sampling/createMessage", "params": params }), read: Reader::Sample }
            }
            InputRequest::ListRoots => Question { request: json!({ "method": "roots/list", "params": {} }), read: Reader::Roots },
        })
    }

    /// The question a stored `request` (`{method, params}`, as [`Question::of`] made it) asks:
    /// what a replica other than the one whose guest asked checks an answer with. `None` for
    /// something no question of this corral makes.
    pub(in crate::server) fn from_request(request: &Value) -> Option<Question> {
        let read = match request.get("method")?.as_str()? {
            "elicitation/create" => Reader::Elicit(Box::new(jsonschema::validator_for(request.get("params")?.get("requestedSchema")?).ok()?)),
            "sampling/createMessage" => Reader::Sample,
            "roots/list" => Reader::Roots,
            _ => return None,
        };
        Some(Question { request: request.clone(), read })
    }

    /// The client's `answer`, checked against the question; the text says what is wrong.
    pub(in crate::server) fn read(&self, answer: &Value) -> Result<InputResponse, String> {
        match &self.read {
            Reader::Elicit(validator) => ask::elicit_answer(answer, validator).map(InputResponse::Elicit).map_err(|e| match e {
                RequestError::Refused(why) | RequestError::Invalid(why) | RequestError::Unsupported(why) | RequestError::Unavailable(why) => why,
            }),
            Reader::Sample => ask::sampling_response(answer).map(InputResponse::Sample),
            Reader::Roots => ask::roots_result(answer).map(InputResponse::Roots),
        }
    }
}

/// Whether a client that declared `capabilities` can answer `request`.
pub(super) fn declares(capabilities: ClientCapabilities, request: &InputRequest) -> bool {
    match request {
        InputRequest::Elicit { .. } => capabilities.elicitation,
        InputRequest::Sample(_) => capabilities.sampling,
        InputRequest::ListRoots => capabilities.roots,
    }
}
