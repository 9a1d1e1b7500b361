//! JSON-RPC 2.0 messages as MCP uses them: one object per message, no batches.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// The message is not JSON (or, over stdio, not UTF-8).
pub const PARSE_ERROR: i32 = -32700;
/// The JSON is not a JSON-RPC message corral accepts, or not now (before `initialize`).
pub const INVALID_REQUEST: i32 = -32600;
/// No such method (or a tool called the way its task policy forbids).
pub const METHOD_NOT_FOUND: i32 = -32601;
/// The method exists but its params do not fit.
pub const INVALID_PARAMS: i32 = -32602;
/// Something failed on corral's side.
pub const INTERNAL_ERROR: i32 = -32603;
/// corral: the policy (`--policy`) does not let the principal use what the request names
/// (`data.kind` is `denied`, `data.rule` the rule kind). HTTP keeps 200: the request was
/// understood and authenticated; it is the target that is refused.
pub const FORBIDDEN: i32 = -32003;
/// corral: the principal's call rate (`[[limit]] rate`) is spent; `data.retryAfterSeconds` says
/// when a call will be taken again. Over HTTP the answer is a 429 with `Retry-After`.
pub const RATE_LIMITED: i32 = -32029;

/// A request id. MCP allows strings and integers; `null` is not an id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (`0` included).
    Int(i64),
    /// A string id.
    Str(String),
    /// Any other JSON number (2^64-1, a fraction) that a [`Number`] holds exactly as the
    /// client wrote it, so the answer echoes the same text.
    Num(Number),
}

impl RequestId {
    fn from_json(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::Str(s.clone())),
            Value::Number(n) => Some(n.as_i64().map_or_else(|| RequestId::Num(n.clone()), RequestId::Int)),
            _ => None,
        }
    }
}

/// The text of the message's top-level `id`, as the client wrote it.
#[derive(Deserialize)]
struct RawId<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
}

/// Whether `id`, read from `text`, would be echoed as the client wrote it. Integers always
/// are; another number only when its shortest rendering is its text (`1.5` is, `1.50` and
/// `1e2` are not, and neither are digits beyond what a 64-bit float holds).
fn echoes_exactly(id: &RequestId, text: &str) -> Result<(), String> {
    let RequestId::Num(n) = id else { return Ok(()) };
    let raw = serde_json::from_str::<RawId<'_>>(text).map(|r| r.id.get().to_owned()).unwrap_or_default();
    match raw == n.to_string() {
        true => Ok(()),
        false => Err(raw),
    }
}

/// A request id as another message names it (`notifications/cancelled`'s `requestId`):
/// deserializes from a string or a number, and refuses anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdKey(pub RequestId);

impl<'de> Deserialize<'de> for IdKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IdKey, D::Error> {
        RequestId::from_json(&Value::deserialize(d)?).map(IdKey).ok_or_else(|| serde::de::Error::custom("request ids are strings or numbers"))
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Int(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
            RequestId::Num(n) => write!(f, "{n}"),
        }
    }
}

/// An error answer: a JSON-RPC code, a message that names the problem, optional data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcError {
    /// The JSON-RPC code (the constants above, or MCP's and corral's own).
    pub code: i32,
    /// What is wrong, in words a person can act on: tests and clients read it.
    pub message: String,
    /// Structured detail (a failure's `kind`, schema violations...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }
    /// [`INVALID_PARAMS`] with `message`.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }
    /// [`METHOD_NOT_FOUND`] with `message`.
    pub fn method_not_found(message: impl Into<String>) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, message)
    }
    /// [`INVALID_REQUEST`] with `message`.
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_REQUEST, message)
    }
    /// [`INTERNAL_ERROR`] with `message`.
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(INTERNAL_ERROR, message)
    }
    /// The same error with `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }
}

/// One message received from a client.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered under `id`. The method stays a string here: a name corral
    /// does not serve is the session's to refuse, with the id to refuse it under.
    Request {
        /// What the answer is sent under.
        id: RequestId,
        /// The method's name; [`super::Method`] parses it.
        method: String,
        /// The params object (`{}` when absent or `null`).
        params: Map<String, Value>,
    },
    /// A notification: never answered.
    Notification {
        /// The notification's name.
        method: String,
        /// The params object (`{}` when absent or `null`).
        params: Map<String, Value>,
    },
    /// A response to a request the server sent (`elicitation/create`, `sampling/createMessage`):
    /// its id (absent when the client could not read ours) and the result or the error.
    Response {
        /// The id of the request it answers, when the client could read it.
        id: Option<RequestId>,
        /// The client's result, or its error.
        outcome: Result<Value, RpcError>,
    },
}

/// A message that could not be accepted, and the id to answer it under when one was readable.
#[derive(Debug)]
pub struct Rejected {
    /// The message's id, when it had a usable one.
    pub id: Option<RequestId>,
    /// Why it was refused.
    pub error: RpcError,
    /// False for a notification (a message with a `method` and no `id`): JSON-RPC never answers
    /// one, not even to refuse it.
    pub answer: bool,
}

/// Parses one framed message (a stdio line or an HTTP body).
pub fn parse(text: &str) -> Result<Incoming, Rejected> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| Rejected { id: None, error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")), answer: true })?;
    let message = classify(value)?;
    let id = match &message {
        Incoming::Request { id, .. } | Incoming::Response { id: Some(id), .. } => id,
        _ => return Ok(message),
    };
    match echoes_exactly(id, text) {
        Ok(()) => Ok(message),
        Err(raw) => Err(Rejected {
            id: None,
            error: RpcError::invalid_request(format!(
                "`id` {raw} cannot be echoed exactly as written: use a string, an integer, or a number in its shortest form"
            )),
            answer: true,
        }),
    }
}

fn classify(value: Value) -> Result<Incoming, Rejected> {
    let reject = |id: Option<RequestId>, message: &str| Rejected { id, error: RpcError::invalid_request(message), answer: true };
    let Value::Object(mut object) = value else {
        let what = if value.is_array() { "batches are not supported: send one JSON-RPC message at a time" } else { "a JSON-RPC message must be a JSON object" };
        return Err(reject(None, what));
    };
    let raw_id = object.remove("id");
    let is_response = !object.contains_key("method") && (object.contains_key("result") || object.contains_key("error"));
    let id = match &raw_id {
        None => None,
        // A client's error response to a message of ours it could not read has a null id.
        Some(Value::Null) if is_response => None,
        Some(v) => match RequestId::from_json(v) {
            Some(id) => Some(id),
            None => return Err(reject(None, "`id` must be a string or a number")),
        },
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(reject(id, "`jsonrpc` must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return Err(reject(id, "`method` must be a string")),
        None if object.contains_key("result") || object.contains_key("error") => {
            let outcome = match (object.remove("result"), object.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(RpcError {
                    code: error.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok()).unwrap_or(INTERNAL_ERROR),
                    message: error.get("message").and_then(Value::as_str).unwrap_or("(the client gave no message)").to_owned(),
                    data: error.get("data").cloned(),
                }),
                _ => return Err(reject(id, "a response carries `result` or `error`, not both")),
            };
            return Ok(Incoming::Response { id, outcome });
        }
        None => return Err(reject(id, "missing `method`")),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => {
            let answer = id.is_some();
            return Err(Rejected { id, error: RpcError::invalid_params("`params` must be an object"), answer });
        }
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// A message on its way to the client, serialised once where it is made. Every outlet that
/// carries it (a stdout line, a JSON response, an SSE event, a buffered event replayed later, a
/// broadcast to every session) shares that text; what a transport must know of it, whether it
/// answers a request and with which error, is kept beside the text so it is never parsed again.
#[derive(Clone, Debug)]
pub struct Outgoing {
    // A `String` behind the `Arc`, not an `Arc<str>`: making one of those would copy the text,
    // and a large result's text is most of what a call costs to answer.
    text: Arc<String>,
    kind: Kind,
}

/// Which of JSON-RPC's three messages an [`Outgoing`] is.
#[derive(Clone, Debug)]
enum Kind {
    /// A response, and what it says about itself.
    Response(ResponseFacts),
    /// A request to the client: its answer is awaited, so it is never dropped.
    Request,
    /// A notification: a transport whose client does not read may drop it (and count it).
    Notification,
}

/// What a response says about itself.
#[derive(Clone, Debug)]
struct ResponseFacts {
    /// The request it answers (`None`: one whose id could not be read).
    id: Option<RequestId>,
    /// Its error's code, and the error's `data.retryAfterSeconds` when it has one.
    error: Option<(i32, Option<u64>)>,
}

/// The fields of a response: the id first, where a reader of a long answer finds it soonest.
#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    id: Option<&'a RequestId>,
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
}

/// A request or a notification: `id` is absent from a notification.
#[derive(Serialize)]
struct Call<'a, P: Serialize> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

impl Outgoing {
    fn new(message: &impl Serialize, kind: Kind) -> Outgoing {
        let text = serde_json::to_string(message).expect("messages serialize: their maps have string keys");
        Outgoing { text: Arc::new(text), kind }
    }

    fn answer(&self) -> Option<&ResponseFacts> {
        match &self.kind {
            Kind::Response(answer) => Some(answer),
            Kind::Request | Kind::Notification => None,
        }
    }

    /// Whether this is a notification (no response, no request awaiting one).
    pub fn is_notification(&self) -> bool {
        matches!(self.kind, Kind::Notification)
    }

    /// The message's JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The message's JSON text, without a copy when nothing else holds it (an HTTP response's
    /// body, which has it alone).
    pub fn into_text(self) -> String {
        Arc::try_unwrap(self.text).unwrap_or_else(|shared| String::clone(&shared))
    }

    /// The message as a JSON value, for code that looks inside it (tests, mostly).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text).expect("an outgoing message is JSON")
    }

    /// Whether this is the response to request `id`.
    pub fn answers(&self, id: &RequestId) -> bool {
        self.answer().is_some_and(|a| a.id.as_ref() == Some(id))
    }

    /// A response's error code, when it is an error response.
    pub fn error_code(&self) -> Option<i32> {
        self.answer().and_then(|a| a.error).map(|(code, _)| code)
    }

    /// The seconds an error response's `data.retryAfterSeconds` asks a client to wait.
    pub fn retry_after(&self) -> Option<u64> {
        self.answer().and_then(|a| a.error).and_then(|(_, retry)| retry)
    }
}

/// The answer to request `id`: `result`.
pub fn result_message(id: &RequestId, result: &impl Serialize) -> Outgoing {
    let message = Response { id: Some(id), jsonrpc: "2.0", error: None, result: Some(result) };
    Outgoing::new(&message, Kind::Response(ResponseFacts { id: Some(id.clone()), error: None }))
}

/// The error answer to request `id` (`null` when the id could not be read).
pub fn error_message(id: Option<&RequestId>, error: &RpcError) -> Outgoing {
    let message = Response::<()> { id, jsonrpc: "2.0", error: Some(error), result: None };
    let retry_after = error.data.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(Value::as_u64);
    Outgoing::new(&message, Kind::Response(ResponseFacts { id: id.cloned(), error: Some((error.code, retry_after)) }))
}

/// A request from corral to the client (`elicitation/create`, `sampling/createMessage`, …).
pub fn request_message(id: &RequestId, method: &str, params: &impl Serialize) -> Outgoing {
    Outgoing::new(&Call { id: Some(id), jsonrpc: "2.0", method, params }, Kind::Request)
}

/// A notification from corral to the client.
pub fn notification(method: &str, params: &impl Serialize) -> Outgoing {
    Outgoing::new(&Call { id: None, jsonrpc: "2.0", method, params }, Kind::Notification)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_outgoing_message_knows_what_it_answers_and_its_error() {
        let ok = result_message(&RequestId::Int(7), &json!({ "content": [] }));
        assert_eq!(ok.text(), r#"{"id":7,"jsonrpc":"2.0","result":{"content":[]}}"#);
        assert!(ok.answers(&RequestId::Int(7)) && !ok.answers(&RequestId::Str("7".into())));
        assert_eq!((ok.error_code(), ok.retry_after()), (None, None));
        let limited = RpcError::new(RATE_LIMITED, "slow down").with_data(json!({ "retryAfterSeconds": 3 }));
        let refused = error_message(Some(&RequestId::Str("a".into())), &limited);
        assert_eq!(
            refused.to_value(),
            json!({ "jsonrpc": "2.0", "id": "a", "error": { "code": RATE_LIMITED, "message": "slow down", "data": { "retryAfterSeconds": 3 } } })
        );
        assert_eq!((refused.error_code(), refused.retry_after()), (Some(RATE_LIMITED), Some(3)));
        let unreadable = error_message(None, &RpcError::new(PARSE_ERROR, "parse error"));
        assert_eq!(unreadable.to_value()["id"], Value::Null);
        assert!(!unreadable.answers(&RequestId::Int(0)));
        let note = notification("notifications/progress", &json!({ "progress": 1 }));
        assert_eq!(note.text(), r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#);
        assert_eq!(note.error_code(), None);
        let ask = request_message(&RequestId::Int(2), "elicitation/create", &json!({}));
        assert_eq!(ask.text(), r#"{"id":2,"jsonrpc":"2.0","method":"elicitation/create","params":{}}"#);
        assert!(!ask.answers(&RequestId::Int(2)), "a request of ours answers nothing");
    }

    fn rejected(text: &str) -> Rejected {
        parse(text).expect_err(text)
    }

    #[test]
    fn requests_keep_integer_zero_and_string_ids() {
        let Incoming::Request { id, method, .. } = parse(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#).unwrap() else { panic!() };
        assert_eq!((id, method.as_str()), (RequestId::Int(0), "ping"));
        let Incoming::Request { id, .. } = parse(r#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#).unwrap() else { panic!() };
        assert_eq!(id, RequestId::Str("a-1".into()));
    }

    #[test]
    fn malformed_messages_get_precise_codes() {
        assert_eq!(rejected("{nope").error.code, PARSE_ERROR);
        assert_eq!(rejected("[]").error.code, INVALID_REQUEST);
        assert_eq!(rejected(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).error.code, INVALID_REQUEST);
        assert_eq!(rejected(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#).id, Some(RequestId::Int(3)));
        let bad_params = rejected(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#);
        assert_eq!((bad_params.id, bad_params.error.code), (Some(RequestId::Int(4)), INVALID_PARAMS));
    }

    #[test]
    fn notifications_and_responses_are_told_apart() {
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(Incoming::Notification { .. })));
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#), Ok(Incoming::Response { id: Some(RequestId::Int(9)), outcome: Ok(_) })));
        let Ok(Incoming::Response { outcome: Err(e), .. }) = parse(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}"#) else { panic!() };
        assert_eq!((e.code, e.message.as_str()), (-1, "no"));
    }

    #[test]
    fn a_client_error_with_a_null_id_is_a_response_not_a_bad_request() {
        let parsed = parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
        assert!(matches!(parsed, Ok(Incoming::Response { id: None, outcome: Err(_) })), "{parsed:?}");
    }

    #[test]
    fn a_notification_is_never_answered_even_when_refused() {
        let bad = rejected(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"soon"}"#);
        assert_eq!(bad.error.code, INVALID_PARAMS);
        assert!(!bad.answer, "a notification gets no answer");
        assert!(rejected(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#).answer, "a request is answered");
    }

    #[test]
    fn number_ids_are_echoed_with_the_text_the_client_wrote() {
        for id in ["18446744073709551615", "-9223372036854775808", "-7", "1.5", "-0.25", "1e-7", "123456789.125"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Ok(Incoming::Request { id: parsed, .. }) = parse(&text) else { panic!("{id} was refused") };
            let answer = result_message(&parsed, &json!({})).text().to_owned();
            assert!(answer.contains(&format!(r#""id":{id},"#)), "{id} came back as {answer}");
            let error = error_message(Some(&parsed), &RpcError::internal("x")).text().to_owned();
            assert!(error.contains(&format!(r#""id":{id},"#)), "{id} came back as {error}");
        }
    }

    #[test]
    fn a_number_id_that_would_come_back_altered_is_refused_with_its_text() {
        for id in ["1.50", "1e2", "123456789012345678901234567890", "0.1000000000000000000001"] {
            let bad = rejected(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            assert_eq!(bad.error.code, INVALID_REQUEST, "{id}");
            assert_eq!(bad.error.message, format!("`id` {id} cannot be echoed exactly as written: use a string, an integer, or a number in its shortest form"));
        }
        // Beyond a 64-bit float the JSON parser itself gives up: a parse error, not a wrong id.
        assert_eq!(rejected(r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#).error.code, PARSE_ERROR);
    }
}
