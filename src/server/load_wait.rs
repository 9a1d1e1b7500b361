//! What a request waits for while the plugins load at start.
//!
//! The plugins load in the background and each is served as soon as it is ready. A request
//! that names one thing (a tool to call, a resource to read, a prompt to get or complete) waits
//! only for that thing to be served: a call of a quick plugin's tool goes on while a big one
//! still compiles. A list waits for the whole load, because most clients list once, right
//! after `initialize`, and a partial first list would hide tools from them for the session
//! (README, "Loading in the background"). Either wait is bounded by `--load-wait`; then the
//! request is answered from the catalog as it stands.

use serde_json::{Map, Value};

use super::result_links;
use crate::mcp::{Method, Params};
use crate::registry::{Catalog, Registry};

/// What a request needs of the catalog before it can be answered during the first load.
pub(super) enum Needs {
    /// Nothing: it does not read the catalog, or its parameters are refused whatever loads.
    Nothing,
    /// Every plugin: a list.
    Everything,
    /// The plugin that serves this one thing.
    One(Target),
}

/// The one thing a request names.
pub(super) enum Target {
    /// A tool, by its served name.
    Tool(String),
    /// A resource URI: a plugin's resource, or one a template of it matches.
    Resource(String),
    /// A prompt, by its served name.
    Prompt(String),
    /// A resource template, by its URI template (what completion refers to).
    Template(String),
}

impl Target {
    fn served(&self, catalog: &Catalog) -> bool {
        match self {
            Target::Tool(name) => catalog.tool(name).is_some(),
            Target::Resource(uri) => catalog.resource_owner(uri).is_some(),
            Target::Prompt(name) => catalog.prompt(name).is_some(),
            Target::Template(uri) => catalog.templates.contains_key(uri),
        }
    }
}

impl Needs {
    /// What `method` with `params` waits for (the same for both protocol eras).
    pub(super) fn of(method: Method, params: &Map<String, Value>) -> Needs {
        let p = Params::new(params);
        let one = |target: Option<Target>| target.map_or(Needs::Nothing, Needs::One);
        match method {
            Method::ToolsList | Method::ResourcesList | Method::ResourcesTemplatesList | Method::PromptsList => Needs::Everything,
            Method::ToolsCall => one(p.get_str("name").map(|n| Target::Tool(n.to_owned()))),
            // A result kept by reference is read from the task store, not from a plugin.
            Method::ResourcesRead | Method::ResourcesSubscribe => match p.get_str("uri") {
                Some(uri) if result_links::is_result_uri(uri) => Needs::Nothing,
                // Waited for as it will be routed: in its canonical form.
                uri => one(uri.map(|u| Target::Resource(crate::uri::canonical(u).unwrap_or_else(|_| u.to_owned())))),
            },
            Method::PromptsGet => one(p.get_str("name").map(|n| Target::Prompt(n.to_owned()))),
            Method::CompletionComplete => {
                let reference = params.get("ref");
                let field = |key: &str| reference.and_then(|r| r.get(key)).and_then(Value::as_str).map(str::to_owned);
                match reference.and_then(|r| r.get("type")).and_then(Value::as_str) {
                    Some("ref/prompt") => one(field("name").map(Target::Prompt)),
                    Some("ref/resource") => one(field("uri").map(Target::Template)),
                    _ => Needs::Nothing,
                }
            }
            Method::Ping
            | Method::Initialize
            | Method::LoggingSetLevel
            | Method::ResourcesUnsubscribe
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel => Needs::Nothing,
        }
    }

    /// Whether the request can be answered now.
    pub(super) fn met(&self, registry: &Registry) -> bool {
        match self {
            Needs::Nothing => true,
            _ if registry.is_loaded() => true,
            Needs::Everything => false,
            Needs::One(target) => target.served(&registry.snapshot()),
        }
    }

    /// Waits until the request can be answered, at most the registry's load wait.
    pub(super) async fn wait(&self, registry: &Registry) {
        match self {
            Needs::Nothing => {}
            Needs::Everything => {
                registry.wait_loaded().await;
            }
            Needs::One(target) => {
                registry.wait_for(|catalog| target.served(catalog)).await;
            }
        }
    }
}
