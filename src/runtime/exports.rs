//! Which contract a component speaks and which of its optional interfaces it exports, found
//! once when it is compiled; and calling one export in a fresh instance.
//!
//! A 0.1.0 plugin exports `corral:plugin/tools@0.1.0`; a 0.2.0 plugin exports
//! `corral:plugin/tools@0.2.0` and any of `resources`, `prompts`, `completions` of 0.2.0.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::bindings::{v1, v2, CallResult, Completion, Contents, Prompt, PromptError, PromptResult, ReadError, Reference, Resource, ResourceTemplate, Tool};
use super::call::CallState;

/// The contract version a plugin was built against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contract {
    V0_1,
    V0_2,
}

impl Contract {
    /// `0.1.0` or `0.2.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "0.1.0",
            Contract::V0_2 => "0.2.0",
        }
    }
}

enum Tools {
    V1(v1::exports::corral::plugin::tools::GuestIndices),
    V2(v2::exports::corral::plugin::tools::GuestIndices),
}

/// Where a component's exports are, looked up by name once.
pub(crate) struct Exports {
    tools: Tools,
    resources: Option<v2::exports::corral::plugin::resources::GuestIndices>,
    prompts: Option<v2::exports::corral::plugin::prompts::GuestIndices>,
    completions: Option<v2::exports::corral::plugin::completions::GuestIndices>,
}

impl Exports {
    /// Finds the exports of a linked component; an error names what is missing.
    pub fn find(pre: &InstancePre<CallState>) -> Result<Exports, String> {
        if let Ok(tools) = v2::exports::corral::plugin::tools::GuestIndices::new(pre) {
            return Ok(Exports {
                tools: Tools::V2(tools),
                resources: v2::exports::corral::plugin::resources::GuestIndices::new(pre).ok(),
                prompts: v2::exports::corral::plugin::prompts::GuestIndices::new(pre).ok(),
                completions: v2::exports::corral::plugin::completions::GuestIndices::new(pre).ok(),
            });
        }
        match v1::exports::corral::plugin::tools::GuestIndices::new(pre) {
            Ok(tools) => Ok(Exports { tools: Tools::V1(tools), resources: None, prompts: None, completions: None }),
            Err(e) => Err(format!("{e:#} (a plugin exports corral:plugin/tools@0.1.0 or corral:plugin/tools@0.2.0)")),
        }
    }

    pub fn contract(&self) -> Contract {
        match self.tools {
            Tools::V1(_) => Contract::V0_1,
            Tools::V2(_) => Contract::V0_2,
        }
    }

    pub fn has_resources(&self) -> bool {
        self.resources.is_some()
    }

    pub fn has_prompts(&self) -> bool {
        self.prompts.is_some()
    }

    pub fn has_completions(&self) -> bool {
        self.completions.is_some()
    }
}

/// One call of one export.
pub(crate) enum Op<'a> {
    ListTools,
    CallTool { name: &'a str, arguments: &'a str },
    ListResources,
    ListResourceTemplates,
    ReadResource { uri: &'a str },
    ListPrompts,
    GetPrompt { name: &'a str, arguments: &'a [(String, String)] },
    Complete { reference: &'a Reference, argument: &'a str, value: &'a str, context: &'a [(String, String)] },
}

/// What an export answered.
pub(crate) enum Answer {
    Tools(Vec<Tool>),
    Result(CallResult),
    Resources(Vec<Resource>),
    Templates(Vec<ResourceTemplate>),
    Read(Result<Vec<Contents>, ReadError>),
    Prompts(Vec<Prompt>),
    Prompt(Result<PromptResult, PromptError>),
    Completion(Completion),
}

/// An export the component does not have. The registry never asks for one; answering "nothing"
/// keeps a stale caller harmless.
fn absent(op: &Op<'_>) -> Answer {
    match op {
        Op::ListResources => Answer::Resources(Vec::new()),
        Op::ListResourceTemplates => Answer::Templates(Vec::new()),
        Op::ReadResource { .. } => Answer::Read(Err(ReadError::NotFound)),
        Op::ListPrompts => Answer::Prompts(Vec::new()),
        Op::GetPrompt { .. } => Answer::Prompt(Err(PromptError::Failed("the plugin offers no prompts".into()))),
        Op::Complete { .. } => Answer::Completion(Completion { values: Vec::new(), total: None, has_more: false }),
        Op::ListTools | Op::CallTool { .. } => unreachable!("every plugin exports tools"),
    }
}

/// Instantiates the component in `store` and calls one export.
pub(crate) async fn invoke(store: &mut Store<CallState>, pre: &InstancePre<CallState>, exports: &Exports, op: Op<'_>) -> wasmtime::Result<Answer> {
    let missing = match op {
        Op::ListTools | Op::CallTool { .. } => false,
        Op::ListResources | Op::ListResourceTemplates | Op::ReadResource { .. } => exports.resources.is_none(),
        Op::ListPrompts | Op::GetPrompt { .. } => exports.prompts.is_none(),
        Op::Complete { .. } => exports.completions.is_none(),
    };
    if missing {
        return Ok(absent(&op));
    }
    let instance = pre.instantiate_async(&mut *store).await?;
    let store = &mut *store;
    Ok(match op {
        Op::ListTools | Op::CallTool { .. } => match &exports.tools {
            Tools::V1(indices) => {
                let tools = indices.load(&mut *store, &instance)?;
                match op {
                    Op::ListTools => Answer::Tools(tools.call_list_tools(store).await?),
                    Op::CallTool { name, arguments } => Answer::Result(tools.call_call_tool(store, name, arguments).await?),
                    _ => unreachable!(),
                }
            }
            Tools::V2(indices) => {
                let tools = indices.load(&mut *store, &instance)?;
                match op {
                    Op::ListTools => Answer::Tools(tools.call_list_tools(store).await?),
                    Op::CallTool { name, arguments } => Answer::Result(tools.call_call_tool(store, name, arguments).await?),
                    _ => unreachable!(),
                }
            }
        },
        Op::ListResources | Op::ListResourceTemplates | Op::ReadResource { .. } => match &exports.resources {
            None => absent(&op),
            Some(indices) => {
                let resources = indices.load(&mut *store, &instance)?;
                match op {
                    Op::ListResources => Answer::Resources(resources.call_list_resources(store).await?),
                    Op::ListResourceTemplates => Answer::Templates(resources.call_list_resource_templates(store).await?),
                    Op::ReadResource { uri } => Answer::Read(resources.call_read_resource(store, uri).await?),
                    _ => unreachable!(),
                }
            }
        },
        Op::ListPrompts | Op::GetPrompt { .. } => match &exports.prompts {
            None => absent(&op),
            Some(indices) => {
                let prompts = indices.load(&mut *store, &instance)?;
                match op {
                    Op::ListPrompts => Answer::Prompts(prompts.call_list_prompts(store).await?),
                    Op::GetPrompt { name, arguments } => Answer::Prompt(prompts.call_get_prompt(store, name, arguments).await?),
                    _ => unreachable!(),
                }
            }
        },
        Op::Complete { reference, argument, value, context } => match &exports.completions {
            None => absent(&op),
            Some(indices) => {
                let completions = indices.load(&mut *store, &instance)?;
                Answer::Completion(completions.call_complete(store, reference, argument, value, context).await?)
            }
        },
    })
}
