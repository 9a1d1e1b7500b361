//! Asking the client while a tool runs (contract 0.3.0): a form for the user ([`elicit`]), a
//! message from the client's model ([`sample`]), the client's [`roots`], or several at once
//! under keys the tool chooses ([`ask`]).
//!
//! Every question may make the host run the call again from the start: a 2026-07-28 client
//! answers by retrying the request, and the retried call gets the recorded answers at once. So
//! whatever a tool did before it asked is done again: ask first, act after the last answer.
//!
//! Off wasm, answers come from the queue of [`crate::testing`] (`answer_elicit`,
//! `answer_sample`, `answer_roots`, `refuse_next`); a question with nothing queued panics,
//! naming the question.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::message::{Message, Role};
use crate::output::Content;
use crate::schema;

/// Why the client gave no answer. The call goes on: the tool decides what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// The client did not declare the capability (`elicitation`, `sampling`, `roots`).
    Unsupported(String),
    /// The host refused the question before sending it (a schema that is no object schema, ...).
    Invalid(String),
    /// The client answered with an error, or with an answer that does not fit the question.
    Refused(String),
    /// No client can be asked (a task whose client left, `corral call`).
    Unavailable(String),
}

impl RequestError {
    /// The kind as one word: `unsupported`, `invalid`, `refused` or `unavailable`.
    pub fn kind(&self) -> &'static str {
        match self {
            RequestError::Unsupported(_) => "unsupported",
            RequestError::Invalid(_) => "invalid",
            RequestError::Refused(_) => "refused",
            RequestError::Unavailable(_) => "unavailable",
        }
    }

    /// What the host said.
    pub fn message(&self) -> &str {
        match self {
            RequestError::Unsupported(m) | RequestError::Invalid(m) | RequestError::Refused(m) | RequestError::Unavailable(m) => m,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.kind())
    }
}

impl std::error::Error for RequestError {}

/// What the user did with a form, the answers typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elicited<T> {
    /// Submitted it: the answers, as the struct whose schema was asked.
    Accepted(T),
    /// Said no.
    Declined,
    /// Dismissed it without choosing.
    Cancelled,
}

/// Asks the user to fill in the form `T` describes: `T`'s [`JsonSchema`] is the requested
/// schema (keep it flat: strings, numbers, booleans, unit enums; `Option` fields are optional),
/// its doc comments the labels' descriptions. Never ask for secrets.
///
/// In a task the task is `input_required` while the user answers.
pub fn elicit<T: DeserializeOwned + JsonSchema>(message: &str) -> Result<Elicited<T>, RequestError> {
    let form = imp::elicit(message, &schema::elicitation::<T>())?;
    form.typed()
}

/// A request for the client's model to write the next message; built with [`Sampling::new`].
#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    /// The conversation so far: at least one message of text, image or audio.
    pub messages: Vec<Message>,
    /// The system prompt the tool suggests (the client may ignore it).
    pub system_prompt: Option<String>,
    /// The most tokens to generate; more than 0.
    pub max_tokens: u32,
    /// Sampling temperature, when the tool cares.
    pub temperature: Option<f64>,
    /// Texts that end generation.
    pub stop_sequences: Vec<String>,
    /// Model names or families the tool prefers, most preferred first; only hints.
    pub model_hints: Vec<String>,
}

impl Sampling {
    /// A request for at most `max_tokens` tokens answering `prompt`, said by the user.
    pub fn new(prompt: impl Into<String>, max_tokens: u32) -> Sampling {
        Sampling { messages: vec![Message::user(prompt)], system_prompt: None, max_tokens, temperature: None, stop_sequences: vec![], model_hints: vec![] }
    }

    /// With a system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Sampling {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// With one more message after the ones so far.
    pub fn then(mut self, message: Message) -> Sampling {
        self.messages.push(message);
        self
    }
}

/// The client model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    /// Usually [`Role::Assistant`].
    pub role: Role,
    /// Usually one text block.
    pub content: Vec<Content>,
    /// The model the client used.
    pub model: String,
    /// Why generation stopped: "endTurn", "stopSequence", "maxTokens" or the client's word.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// The text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(|c| if let Content::Text(t) = c { Some(t.as_str()) } else { None }).collect();
        texts.join("\n")
    }
}

/// Asks the client's model for a message and waits for it; the client (and its user) may
/// refuse. In a task the task is `input_required` meanwhile.
pub fn sample(request: &Sampling) -> Result<Sampled, RequestError> {
    imp::sample(request)
}

/// A directory or file the client exposes (MCP `roots/list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name to show, when the client gave one.
    pub name: Option<String>,
}

/// The client's roots. A client that did not declare `roots` is not asked: `Unsupported`.
pub fn roots() -> Result<Vec<Root>, RequestError> {
    imp::roots()
}

/// One question of an [`ask`].
#[derive(Clone, Debug, PartialEq)]
pub enum Question {
    /// A form: the message and the requested schema.
    Elicit {
        /// What the user is asked.
        message: String,
        /// The form's JSON Schema.
        schema: Value,
    },
    /// A message from the client's model.
    Sample(Sampling),
    /// The client's roots.
    Roots,
}

impl Question {
    /// A form described by `T`, as [`elicit`] asks it; read the answer with [`Answers::elicited`].
    pub fn elicit<T: JsonSchema>(message: impl Into<String>) -> Question {
        Question::Elicit { message: message.into(), schema: schema::elicitation::<T>() }
    }
}

/// What the user did with a form, untyped: read it typed with [`Answers::elicited`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Form {
    pub action: FormAction,
    /// The answers (a JSON object) when accepted.
    pub content: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FormAction {
    Accept,
    Decline,
    Cancel,
}

impl Form {
    fn typed<T: DeserializeOwned>(self) -> Result<Elicited<T>, RequestError> {
        match self.action {
            FormAction::Accept => {
                let content = self.content.unwrap_or(Value::Object(Default::default()));
                serde_json::from_value(content.clone())
                    .map(Elicited::Accepted)
                    .map_err(|e| RequestError::Refused(format!("the answer {content} does not fit the form's type: {e}")))
            }
            FormAction::Decline => Ok(Elicited::Declined),
            FormAction::Cancel => Ok(Elicited::Cancelled),
        }
    }
}

/// One answer of an [`ask`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Answer {
    Form(Form),
    Sampled(Sampled),
    Roots(Vec<Root>),
}

/// The answers of an [`ask`], under the keys asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers(pub(crate) BTreeMap<String, Answer>);

impl Answers {
    /// The answer to form `key`, typed. An unknown key, or one that was no form, is `Invalid`.
    pub fn elicited<T: DeserializeOwned>(&self, key: &str) -> Result<Elicited<T>, RequestError> {
        match self.0.get(key) {
            Some(Answer::Form(form)) => form.clone().typed(),
            _ => Err(self.missing(key, "a form")),
        }
    }

    /// The model's answer under `key`.
    pub fn sampled(&self, key: &str) -> Result<&Sampled, RequestError> {
        match self.0.get(key) {
            Some(Answer::Sampled(sampled)) => Ok(sampled),
            _ => Err(self.missing(key, "a sampling request")),
        }
    }

    /// The roots under `key`.
    pub fn roots(&self, key: &str) -> Result<&[Root], RequestError> {
        match self.0.get(key) {
            Some(Answer::Roots(roots)) => Ok(roots),
            _ => Err(self.missing(key, "a roots request")),
        }
    }

    fn missing(&self, key: &str, what: &str) -> RequestError {
        let keys: Vec<&str> = self.0.keys().map(String::as_str).collect();
        RequestError::Invalid(format!("no answer to {what} under key `{key}`; the answers are under {keys:?}"))
    }
}

/// Asks several questions at once, each under a key of 1-64 characters of `A-Za-z0-9_.-`
/// unique within the call. A question for a capability the client did not declare fails the
/// whole `ask` (`Unsupported`, naming it), so the tool can ask again without it.
pub fn ask(questions: Vec<(&str, Question)>) -> Result<Answers, RequestError> {
    imp::ask(questions).map(|answers| Answers(answers.into_iter().collect()))
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;
    use crate::wasm::bindings::corral::plugin::{host, input};
    use crate::wasm::{content_from_wit, content_to_wit};

    fn error(e: host::RequestError) -> RequestError {
        match e {
            host::RequestError::Unsupported(m) => RequestError::Unsupported(m),
            host::RequestError::Invalid(m) => RequestError::Invalid(m),
            host::RequestError::Refused(m) => RequestError::Refused(m),
            host::RequestError::Unavailable(m) => RequestError::Unavailable(m),
        }
    }

    fn form(response: host::ElicitResponse) -> Form {
        let action = match response.action {
            host::ElicitAction::Accept => FormAction::Accept,
            host::ElicitAction::Decline => FormAction::Decline,
            host::ElicitAction::Cancel => FormAction::Cancel,
        };
        Form { action, content: response.content.and_then(|c| serde_json::from_str(&c).ok()) }
    }

    fn role(role: Role) -> crate::wasm::bindings::corral::plugin::messages::Role {
        use crate::wasm::bindings::corral::plugin::messages::Role as W;
        match role {
            Role::User => W::User,
            Role::Assistant => W::Assistant,
        }
    }

    fn request(s: &Sampling) -> host::SamplingRequest {
        use crate::wasm::bindings::corral::plugin::messages::Message as W;
        host::SamplingRequest {
            messages: s.messages.iter().map(|m| W { role: role(m.role), content: content_to_wit(m.content.clone()) }).collect(),
            system_prompt: s.system_prompt.clone(),
            max_tokens: s.max_tokens,
            temperature: s.temperature,
            stop_sequences: s.stop_sequences.clone(),
            model_preferences: (!s.model_hints.is_empty()).then(|| host::ModelPreferences {
                hints: s.model_hints.clone(),
                cost_priority: None,
                speed_priority: None,
                intelligence_priority: None,
            }),
        }
    }

    fn sampled(r: host::SamplingResponse) -> Sampled {
        use crate::wasm::bindings::corral::plugin::messages::Role as W;
        Sampled {
            role: match r.role {
                W::User => Role::User,
                W::Assistant => Role::Assistant,
            },
            content: r.content.into_iter().map(content_from_wit).collect(),
            model: r.model,
            stop_reason: r.stop_reason,
        }
    }

    fn root(r: input::Root) -> Root {
        Root { uri: r.uri, name: r.name }
    }

    pub fn elicit(message: &str, schema: &Value) -> Result<Form, RequestError> {
        host::elicit(message, &schema.to_string()).map(form).map_err(error)
    }

    pub fn sample(request: &Sampling) -> Result<Sampled, RequestError> {
        host::sample(&self::request(request)).map(sampled).map_err(error)
    }

    pub fn roots() -> Result<Vec<Root>, RequestError> {
        input::roots().map(|roots| roots.into_iter().map(root).collect()).map_err(error)
    }

    pub fn ask(questions: Vec<(&str, Question)>) -> Result<Vec<(String, Answer)>, RequestError> {
        let requests: Vec<(String, input::InputRequest)> = questions
            .into_iter()
            .map(|(key, q)| {
                let request = match q {
                    Question::Elicit { message, schema } => input::InputRequest::Elicit(input::ElicitRequest { message, requested_schema: schema.to_string() }),
                    Question::Sample(s) => input::InputRequest::Sample(self::request(&s)),
                    Question::Roots => input::InputRequest::ListRoots,
                };
                (key.to_owned(), request)
            })
            .collect();
        let answers = input::ask(&requests).map_err(error)?;
        Ok(answers
            .into_iter()
            .map(|(key, a)| {
                let answer = match a {
                    input::InputResponse::Elicit(e) => Answer::Form(form(e)),
                    input::InputResponse::Sample(s) => Answer::Sampled(sampled(s)),
                    input::InputResponse::Roots(r) => Answer::Roots(r.into_iter().map(root).collect()),
                };
                (key, answer)
            })
            .collect())
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;
    use crate::testing::{next_answer, Asked};

    pub fn elicit(message: &str, schema: &Value) -> Result<Form, RequestError> {
        match next_answer(Asked::Elicit { message: message.to_owned(), schema: schema.clone() })? {
            Answer::Form(form) => Ok(form),
            _ => unreachable!("next_answer matches the answer to the question"),
        }
    }

    pub fn sample(request: &Sampling) -> Result<Sampled, RequestError> {
        match next_answer(Asked::Sample(request.clone()))? {
            Answer::Sampled(sampled) => Ok(sampled),
            _ => unreachable!("next_answer matches the answer to the question"),
        }
    }

    pub fn roots() -> Result<Vec<Root>, RequestError> {
        match next_answer(Asked::Roots)? {
            Answer::Roots(roots) => Ok(roots),
            _ => unreachable!("next_answer matches the answer to the question"),
        }
    }

    /// One question after the other, as a 2025-11-25 host asks them.
    pub fn ask(questions: Vec<(&str, Question)>) -> Result<Vec<(String, Answer)>, RequestError> {
        let mut seen = std::collections::HashSet::new();
        for (key, _) in &questions {
            let valid = (1..=64).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
            if !valid {
                return Err(RequestError::Invalid(format!("input key {key:?} must be 1-64 characters of A-Za-z0-9_.-")));
            }
            if !seen.insert(*key) {
                return Err(RequestError::Invalid(format!("input key {key:?} is used twice in one `ask`")));
            }
        }
        questions
            .into_iter()
            .map(|(key, q)| {
                let asked = match q {
                    Question::Elicit { message, schema } => Asked::Elicit { message, schema },
                    Question::Sample(s) => Asked::Sample(s),
                    Question::Roots => Asked::Roots,
                };
                next_answer(asked).map(|a| (key.to_owned(), a))
            })
            .collect()
    }
}
