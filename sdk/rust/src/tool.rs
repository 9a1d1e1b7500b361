//! A tool: its description for `list-tools` and the function that runs it.

use std::fmt::Display;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::output::{CallResult, Output};
use crate::schema;

/// How MCP clients may call a tool (`execution.taskSupport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Plain calls only (the default).
    #[default]
    Forbidden,
    /// Plain calls, or as an MCP task for clients that want to poll.
    Optional,
    /// Only as an MCP task: for calls that take long.
    Required,
}

/// Hints for clients about what a tool does. `None` leaves a hint unstated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// A name for people (the tool's own title wins when both are set).
    pub title: Option<String>,
    /// It changes nothing outside the call.
    pub read_only: Option<bool>,
    /// It may delete or overwrite things.
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect (corral also reruns
    /// idempotent tasks that a host restart interrupted).
    pub idempotent: Option<bool>,
    /// It talks to things outside the plugin (the network, other systems).
    pub open_world: Option<bool>,
}

/// Arguments of a tool that takes none: the input schema is an empty object.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// What `list-tools` says about a tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    /// 1-64 characters of `A-Za-z0-9_-`.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// The argument type's JSON Schema.
    pub input_schema: Value,
    /// The structured output's JSON Schema, when the output is structured.
    pub output_schema: Option<Value>,
    /// Hints for clients.
    pub annotations: Annotations,
    /// Whether it may, must or must not run as an MCP task.
    pub task_support: TaskSupport,
}

type Handler = Box<dyn Fn(&str) -> CallResult>;

/// One tool: built with [`Tool::new`], refined with the builder methods.
pub struct Tool {
    name: String,
    title: Option<String>,
    description: String,
    annotations: Annotations,
    task_support: TaskSupport,
    input_schema: fn() -> Value,
    output_schema: fn() -> Option<Value>,
    handler: Handler,
}

impl Tool {
    /// A tool named `name` (1-64 characters of `A-Za-z0-9_-`) that runs `run`.
    ///
    /// `A` gives the input schema; its doc comments become the properties' descriptions, which
    /// the model reads. `O` decides the result: a `String` is one text block, a [`Json`] value
    /// is structured output with an output schema. An `Err` becomes an `isError` result whose
    /// text is the error's `Display`.
    pub fn new<A, O, E, F>(name: impl Into<String>, description: impl Into<String>, run: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema,
        O: Output,
        E: Display,
        F: Fn(A) -> Result<O, E> + 'static,
    {
        let name = name.into();
        let tool_name = name.clone();
        let handler = move |arguments: &str| -> CallResult {
            let args: A = match serde_json::from_str(arguments) {
                Ok(args) => args,
                Err(e) => return CallResult::error(format!("invalid arguments for `{tool_name}`: {e}")),
            };
            match run(args) {
                Ok(output) => output.into_result(),
                Err(e) => CallResult::error(format!("{e:#}")),
            }
        };
        Tool {
            name,
            title: None,
            description: description.into(),
            annotations: Annotations::default(),
            task_support: TaskSupport::Forbidden,
            input_schema: schema::input::<A>,
            output_schema: O::output_schema,
            handler: Box::new(handler),
        }
    }

    /// A human-readable name for clients' user interfaces.
    pub fn title(mut self, title: impl Into<String>) -> Tool {
        self.title = Some(title.into());
        self
    }

    /// Whether clients may (or must) call it as an MCP task. Default: [`TaskSupport::Forbidden`].
    pub fn task_support(mut self, task_support: TaskSupport) -> Tool {
        self.task_support = task_support;
        self
    }

    /// All hints at once.
    pub fn annotations(mut self, annotations: Annotations) -> Tool {
        self.annotations = annotations;
        self
    }

    /// The tool changes nothing outside the call.
    pub fn read_only(mut self, yes: bool) -> Tool {
        self.annotations.read_only = Some(yes);
        self
    }

    /// The tool may delete or overwrite things.
    pub fn destructive(mut self, yes: bool) -> Tool {
        self.annotations.destructive = Some(yes);
        self
    }

    /// Calling it again with the same arguments has no further effect.
    pub fn idempotent(mut self, yes: bool) -> Tool {
        self.annotations.idempotent = Some(yes);
        self
    }

    /// The tool reaches things outside the plugin.
    pub fn open_world(mut self, yes: bool) -> Tool {
        self.annotations.open_world = Some(yes);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Everything `list-tools` says about the tool.
    pub fn describe(&self) -> ToolInfo {
        ToolInfo {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema(),
            output_schema: self.output_schema(),
            annotations: self.annotations.clone(),
            task_support: self.task_support,
        }
    }

    /// The input schema (JSON Schema 2020-12, an object schema), as `list-tools` declares it.
    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }

    /// The output schema, for tools whose output is structured.
    pub fn output_schema(&self) -> Option<Value> {
        (self.output_schema)()
    }

    /// Runs the tool on `arguments` (a JSON object as text).
    pub fn call(&self, arguments: &str) -> CallResult {
        (self.handler)(arguments)
    }
}

/// Finds `name` among `tools` and runs it; an unknown name is an `isError` result naming the
/// tools there are.
pub(crate) fn dispatch(tools: &[Tool], name: &str, arguments: &str) -> CallResult {
    match tools.iter().find(|t| t.name == name) {
        Some(tool) => tool.call(arguments),
        None => {
            let known: Vec<String> = tools.iter().map(|t| format!("`{}`", t.name)).collect();
            CallResult::error(format!("unknown tool `{name}`; this plugin has {}", known.join(", ")))
        }
    }
}
