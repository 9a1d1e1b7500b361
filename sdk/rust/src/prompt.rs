//! Prompts: message templates a client offers its user, with typed arguments. Exported with
//! `export!(tools, surface)` under the crate's `full` feature.

use std::collections::BTreeMap;
use std::fmt::Display;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::message::Message;
use crate::resource::Completer;
use crate::schema;

/// Why a prompt could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptError {
    /// The arguments are unusable; the text says why (-32602).
    InvalidArguments(String),
    /// Making the prompt failed; the text goes to the client (-32603).
    Failed(String),
}

impl PromptError {
    /// Bad arguments, explained by `e`.
    pub fn invalid(e: impl Display) -> PromptError {
        PromptError::InvalidArguments(e.to_string())
    }
}

impl From<String> for PromptError {
    fn from(message: String) -> PromptError {
        PromptError::Failed(message)
    }
}

impl From<&str> for PromptError {
    fn from(message: &str) -> PromptError {
        PromptError::Failed(message.to_owned())
    }
}

/// One argument as `list-prompts` declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name: the field's name.
    pub name: String,
    /// A name for people (`#[schemars(title = "...")]`).
    pub title: Option<String>,
    /// The field's doc comment.
    pub description: Option<String>,
    /// Whether the client must give it: every field that is not an `Option` or `#[serde(default)]`.
    pub required: bool,
}

/// What `list-prompts` says about a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptInfo {
    /// 1-64 characters of `A-Za-z0-9_-`, unique across the host.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What the prompt is for.
    pub description: Option<String>,
    /// Its arguments, from the argument type.
    pub arguments: Vec<PromptArgument>,
}

type Render = Box<dyn Fn(&BTreeMap<String, String>) -> Result<Vec<Message>, PromptError>>;

/// One prompt: built with [`Prompt::new`].
pub struct Prompt {
    info: PromptInfo,
    render: Render,
    pub(crate) completers: Vec<(String, Completer)>,
}

impl Prompt {
    /// A prompt named `name` that `render` makes from arguments `A`. Prompt arguments are
    /// strings, so `A`'s fields are `String` (required) or `Option<String>` (optional); their
    /// doc comments describe them to the user. Arguments that do not fit `A` are
    /// `InvalidArguments` naming the problem, before `render` runs.
    pub fn new<A, F>(name: impl Into<String>, description: impl Into<String>, render: F) -> Prompt
    where
        A: DeserializeOwned + JsonSchema,
        F: Fn(A) -> Result<Vec<Message>, PromptError> + 'static,
    {
        let name = name.into();
        let info = PromptInfo { name: name.clone(), title: None, description: Some(description.into()), arguments: arguments::<A>() };
        let render = move |given: &BTreeMap<String, String>| {
            let object: serde_json::Map<String, Value> = given.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
            let args: A = serde_json::from_value(Value::Object(object))
                .map_err(|e| PromptError::InvalidArguments(format!("invalid arguments for prompt `{name}`: {e}")))?;
            render(args)
        };
        Prompt { info, render: Box::new(render), completers: vec![] }
    }

    /// A name for people.
    pub fn title(mut self, title: impl Into<String>) -> Prompt {
        self.info.title = Some(title.into());
        self
    }

    /// Suggestions for argument `argument` while the user types it: `complete(typed_so_far,
    /// arguments_already_filled)`. The host passes on at most 100.
    pub fn complete(mut self, argument: impl Into<String>, complete: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + 'static) -> Prompt {
        self.completers.push((argument.into(), Box::new(complete)));
        self
    }

    /// What `list-prompts` says about it.
    pub fn info(&self) -> &PromptInfo {
        &self.info
    }

    pub(crate) fn render(&self, arguments: &BTreeMap<String, String>) -> Result<Vec<Message>, PromptError> {
        (self.render)(arguments)
    }
}

/// The prompt arguments `A`'s schema declares: its properties, required as the schema says.
fn arguments<A: JsonSchema>() -> Vec<PromptArgument> {
    let schema = schema::of::<A>();
    let required: Vec<&str> = schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return vec![];
    };
    properties
        .iter()
        .map(|(name, p)| PromptArgument {
            name: name.clone(),
            title: p["title"].as_str().map(str::to_owned),
            description: p["description"].as_str().map(str::to_owned),
            required: required.contains(&name.as_str()),
        })
        .collect()
}
