//! Which contract a component speaks and which of its optional interfaces it exports, found
//! once when it is compiled; and calling one export in a fresh instance.
//!
//! A 0.1.0 plugin exports `corral:plugin/tools@0.1.0`; a 0.2.0 plugin exports
//! `corral:plugin/tools@0.2.0` and any of `resources`, `prompts`, `completions` of 0.2.0; a 0.3.0
//! plugin the same interfaces of 0.3.0 (whose answers are converted to 0.2.0's types).

use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::component::{ComponentExportIndex, InstancePre, TypedFunc};
use wasmtime::Store;

use super::bindings::{
    v1, v2, v3, CallResult, Completion, Contents, Prompt, PromptError, PromptResult, ReadError, Reference, Resource, ResourceTemplate, Tool,
};
use super::call::CallState;

/// The contract version a plugin was built against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contract {
    /// `corral:plugin@0.1.0`: tools only.
    V0_1,
    /// `corral:plugin@0.2.0`: tools, resources, prompts, completions, requests to the client.
    V0_2,
    /// `corral:plugin@0.3.0`: 0.2.0 plus input under plugin-chosen keys (with roots) and checkpoints.
    V0_3,
}

impl Contract {
    /// `0.1.0`, `0.2.0` or `0.3.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "0.1.0",
            Contract::V0_2 => "0.2.0",
            Contract::V0_3 => "0.3.0",
        }
    }
}

enum Tools {
    V1(v1::exports::corral::plugin::tools::GuestIndices),
    V2(v2::exports::corral::plugin::tools::GuestIndices),
    V3(v3::exports::corral::plugin::tools::GuestIndices),
}

/// One optional interface of 0.2.0 or of 0.3.0.
enum Optional<A, B> {
    V2(A),
    V3(B),
}

type Resources = Optional<v2::exports::corral::plugin::resources::GuestIndices, v3::exports::corral::plugin::resources::GuestIndices>;
type Prompts = Optional<v2::exports::corral::plugin::prompts::GuestIndices, v3::exports::corral::plugin::prompts::GuestIndices>;
type Completions = Optional<v2::exports::corral::plugin::completions::GuestIndices, v3::exports::corral::plugin::completions::GuestIndices>;

/// Where a component's exports are, looked up by name once.
pub(crate) struct Exports {
    tools: Tools,
    resources: Option<Resources>,
    prompts: Option<Prompts>,
    completions: Option<Completions>,
    call_tool: CallTool,
}

/// `call-tool`, the export called most, reached without the bindings' per-instance checks: they
/// look up and type-check every function of the interface (`list-tools`' list of records too)
/// on every call, about 3 % of a call's instructions. Its type is checked on the first call;
/// it has the same type in each instance of the component, so later calls skip the check.
struct CallTool {
    index: ComponentExportIndex,
    checked: AtomicBool,
}

impl CallTool {
    fn find(pre: &InstancePre<CallState>, interface: &str) -> Result<CallTool, String> {
        let component = pre.component();
        let index = component
            .get_export_index(None, interface)
            .and_then(|tools| component.get_export_index(Some(&tools), "call-tool"))
            .ok_or_else(|| format!("{interface} exports no call-tool"))?;
        Ok(CallTool { index, checked: AtomicBool::new(false) })
    }
}

impl Exports {
    /// Finds the exports of a linked component; an error names what is missing.
    pub fn find(pre: &InstancePre<CallState>) -> Result<Exports, String> {
        if let Ok(tools) = v3::exports::corral::plugin::tools::GuestIndices::new(pre) {
            return Ok(Exports {
                call_tool: CallTool::find(pre, "corral:plugin/tools@0.3.0")?,
                tools: Tools::V3(tools),
                resources: v3::exports::corral::plugin::resources::GuestIndices::new(pre).ok().map(Optional::V3),
                prompts: v3::exports::corral::plugin::prompts::GuestIndices::new(pre).ok().map(Optional::V3),
                completions: v3::exports::corral::plugin::completions::GuestIndices::new(pre).ok().map(Optional::V3),
            });
        }
        if let Ok(tools) = v2::exports::corral::plugin::tools::GuestIndices::new(pre) {
            return Ok(Exports {
                call_tool: CallTool::find(pre, "corral:plugin/tools@0.2.0")?,
                tools: Tools::V2(tools),
                resources: v2::exports::corral::plugin::resources::GuestIndices::new(pre).ok().map(Optional::V2),
                prompts: v2::exports::corral::plugin::prompts::GuestIndices::new(pre).ok().map(Optional::V2),
                completions: v2::exports::corral::plugin::completions::GuestIndices::new(pre).ok().map(Optional::V2),
            });
        }
        match v1::exports::corral::plugin::tools::GuestIndices::new(pre) {
            Ok(tools) => Ok(Exports {
                call_tool: CallTool::find(pre, "corral:plugin/tools@0.1.0")?,
                tools: Tools::V1(tools),
                resources: None,
                prompts: None,
                completions: None,
            }),
            Err(e) => Err(format!("{e:#} (a plugin exports corral:plugin/tools@0.1.0, corral:plugin/tools@0.2.0 or corral:plugin/tools@0.3.0)")),
        }
    }

    pub fn contract(&self) -> Contract {
        match self.tools {
            Tools::V1(_) => Contract::V0_1,
            Tools::V2(_) => Contract::V0_2,
            Tools::V3(_) => Contract::V0_3,
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

/// One export, called in a fresh instance of `pre` in `store`.
///
/// Each method has the export's own return type, so the runtime needs no answer enum to match
/// on. An optional export the component lacks answers "nothing" without instantiating: the
/// registry never asks for one, and a stale caller stays harmless.
impl Exports {
    /// `list-tools`.
    pub async fn list_tools(&self, store: &mut Store<CallState>, pre: &InstancePre<CallState>) -> wasmtime::Result<Vec<Tool>> {
        let instance = pre.instantiate_async(&mut *store).await?;
        match &self.tools {
            Tools::V1(indices) => indices.load(&mut *store, &instance)?.call_list_tools(store).await,
            Tools::V2(indices) => indices.load(&mut *store, &instance)?.call_list_tools(store).await,
            Tools::V3(indices) => indices.load(&mut *store, &instance)?.call_list_tools(store).await,
        }
    }

    /// `call-tool` (see [`CallTool`]).
    pub async fn call_tool(&self, store: &mut Store<CallState>, pre: &InstancePre<CallState>, name: &str, arguments: &str) -> wasmtime::Result<CallResult> {
        let instance = pre.instantiate_async(&mut *store).await?;
        let func = instance.get_func(&mut *store, self.call_tool.index).ok_or_else(|| wasmtime::Error::msg("the instance lacks its call-tool export"))?;
        // `call-tool`'s parameters and result are the same Rust types in every contract version.
        let typed: TypedFunc<(&str, &str), (CallResult,)> = if self.call_tool.checked.load(Ordering::Relaxed) {
            // SAFETY: `func` is the export at `index` of an instance of the component `index`
            // was found in (`get_func` checks that), whose type an earlier call checked against
            // these Rust types. Only resource types differ between instances of a component, and
            // `call-tool` takes and returns none (strings, records, variants, lists, options).
            unsafe { TypedFunc::new_unchecked(func) }
        } else {
            let typed = func.typed(&*store)?;
            self.call_tool.checked.store(true, Ordering::Relaxed);
            typed
        };
        let (result,) = typed.call_async(&mut *store, (name, arguments)).await?;
        Ok(result)
    }

    /// `list-resources` (none without `resources`).
    pub async fn list_resources(&self, store: &mut Store<CallState>, pre: &InstancePre<CallState>) -> wasmtime::Result<Vec<Resource>> {
        let Some(indices) = &self.resources else { return Ok(Vec::new()) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_list_resources(store).await,
            Optional::V3(indices) => indices.load(&mut *store, &instance)?.call_list_resources(store).await.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }

    /// `list-resource-templates` (none without `resources`).
    pub async fn list_resource_templates(&self, store: &mut Store<CallState>, pre: &InstancePre<CallState>) -> wasmtime::Result<Vec<ResourceTemplate>> {
        let Some(indices) = &self.resources else { return Ok(Vec::new()) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_list_resource_templates(store).await,
            Optional::V3(indices) => {
                indices.load(&mut *store, &instance)?.call_list_resource_templates(store).await.map(|v| v.into_iter().map(Into::into).collect())
            }
        }
    }

    /// `read-resource` (not found without `resources`).
    pub async fn read_resource(
        &self,
        store: &mut Store<CallState>,
        pre: &InstancePre<CallState>,
        uri: &str,
    ) -> wasmtime::Result<Result<Vec<Contents>, ReadError>> {
        let Some(indices) = &self.resources else { return Ok(Err(ReadError::NotFound)) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_read_resource(store, uri).await,
            Optional::V3(indices) => indices
                .load(&mut *store, &instance)?
                .call_read_resource(store, uri)
                .await
                .map(|r| r.map(|v| v.into_iter().map(Into::into).collect()).map_err(Into::into)),
        }
    }

    /// `list-prompts` (none without `prompts`).
    pub async fn list_prompts(&self, store: &mut Store<CallState>, pre: &InstancePre<CallState>) -> wasmtime::Result<Vec<Prompt>> {
        let Some(indices) = &self.prompts else { return Ok(Vec::new()) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_list_prompts(store).await,
            Optional::V3(indices) => indices.load(&mut *store, &instance)?.call_list_prompts(store).await.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }

    /// `get-prompt` (a failure without `prompts`).
    pub async fn get_prompt(
        &self,
        store: &mut Store<CallState>,
        pre: &InstancePre<CallState>,
        name: &str,
        arguments: &[(String, String)],
    ) -> wasmtime::Result<Result<PromptResult, PromptError>> {
        let Some(indices) = &self.prompts else { return Ok(Err(PromptError::Failed("the plugin offers no prompts".into()))) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_get_prompt(store, name, arguments).await,
            Optional::V3(indices) => {
                indices.load(&mut *store, &instance)?.call_get_prompt(store, name, arguments).await.map(|r| r.map(Into::into).map_err(Into::into))
            }
        }
    }

    /// `complete` (no values without `completions`).
    pub async fn complete(
        &self,
        store: &mut Store<CallState>,
        pre: &InstancePre<CallState>,
        reference: &Reference,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> wasmtime::Result<Completion> {
        let Some(indices) = &self.completions else { return Ok(Completion { values: Vec::new(), total: None, has_more: false }) };
        let instance = pre.instantiate_async(&mut *store).await?;
        match indices {
            Optional::V2(indices) => indices.load(&mut *store, &instance)?.call_complete(store, reference, argument, value, context).await,
            Optional::V3(indices) => {
                let reference = super::v3_values::reference(reference);
                indices.load(&mut *store, &instance)?.call_complete(store, &reference, argument, value, context).await.map(Into::into)
            }
        }
    }
}
