//! What a plugin offers besides tools: resources, resource templates, prompts and their
//! completions, gathered in one [`Surface`] that `export!(tools, surface)` exports (world
//! `full`, the crate's `full` feature).

use std::collections::BTreeMap;

use crate::message::Message;
use crate::prompt::{Prompt, PromptError, PromptInfo};
use crate::resource::{Completer, Contents, ReadError, Resource, ResourceInfo, ResourceTemplate};

/// The resources, templates and prompts of a plugin, built with the `with_*` methods.
#[derive(Default)]
pub struct Surface {
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
}

/// What is being completed (the WIT `completions.reference`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    /// An argument of the prompt with this name.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    Template(String),
}

/// Suggestions for what the user is typing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The suggestions (the host passes on at most 100).
    pub values: Vec<String>,
    /// How many there are in all.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

impl Surface {
    /// Nothing yet.
    pub fn new() -> Surface {
        Surface::default()
    }

    /// With a resource at a fixed URI.
    pub fn with_resource(mut self, resource: Resource) -> Surface {
        self.resources.push(resource);
        self
    }

    /// With a resource template.
    pub fn with_template(mut self, template: ResourceTemplate) -> Surface {
        self.templates.push(template);
        self
    }

    /// With a prompt.
    pub fn with_prompt(mut self, prompt: Prompt) -> Surface {
        self.prompts.push(prompt);
        self
    }

    /// What `list-resources` answers.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        self.resources.iter().map(|r| r.info().clone()).collect()
    }

    /// What `list-resource-templates` answers (`uri` holds the template).
    pub fn templates(&self) -> Vec<ResourceInfo> {
        self.templates.iter().map(|t| t.info().clone()).collect()
    }

    /// What `list-prompts` answers.
    pub fn prompts(&self) -> Vec<PromptInfo> {
        self.prompts.iter().map(|p| p.info().clone()).collect()
    }

    /// Reads `uri`: a fixed resource first, then the first template that matches it.
    pub fn read(&self, uri: &str) -> Result<Vec<Contents>, ReadError> {
        let fixed = self.resources.iter().find_map(|r| r.read(uri));
        fixed.or_else(|| self.templates.iter().find_map(|t| t.read(uri))).unwrap_or(Err(ReadError::NotFound))
    }

    /// Renders prompt `name`; an unknown name is `InvalidArguments` naming the prompts there are.
    pub fn get_prompt(&self, name: &str, arguments: &BTreeMap<String, String>) -> Result<Vec<Message>, PromptError> {
        match self.prompts.iter().find(|p| p.info().name == name) {
            Some(prompt) => prompt.render(arguments),
            None => {
                let known: Vec<String> = self.prompts.iter().map(|p| format!("`{}`", p.info().name)).collect();
                Err(PromptError::InvalidArguments(format!("unknown prompt `{name}`; this plugin has {}", known.join(", "))))
            }
        }
    }

    /// Completes `argument` of `reference`; nothing to suggest is an empty completion.
    pub fn complete(&self, reference: &Reference, argument: &str, value: &str, context: &BTreeMap<String, String>) -> Completion {
        let completers: &[(String, Completer)] = match reference {
            Reference::Prompt(name) => self.prompts.iter().find(|p| &p.info().name == name).map_or(&[], |p| &p.completers),
            Reference::Template(template) => self.templates.iter().find(|t| &t.info().uri == template).map_or(&[], |t| &t.completers),
        };
        let values = completers.iter().find(|(name, _)| name == argument).map(|(_, complete)| complete(value, context)).unwrap_or_default();
        let total = u32::try_from(values.len()).ok();
        Completion { has_more: values.len() > 100, total, values }
    }
}
