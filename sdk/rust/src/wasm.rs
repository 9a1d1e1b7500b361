//! The component glue: wit-bindgen's bindings for `wit/v0.3/plugin.wit` and the conversions
//! between them and this crate's types. Used by [`crate::export!`]; not meant to be used directly.
//!
//! One crate embeds one world, so the world is the `full` feature's choice, not the macro's:
//! `plugin` (tools) by default, `full` (tools, resources, prompts, completions) with it.

#![allow(missing_docs)]

#[cfg(not(feature = "full"))]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit/v0.3",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__corral_wit_export",
        default_bindings_module: "corral_plugin::wasm::bindings",
        runtime_path: "corral_plugin::wasm::rt",
    });
}

#[cfg(feature = "full")]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit/v0.3",
        world: "full",
        pub_export_macro: true,
        export_macro_name: "__corral_wit_export",
        default_bindings_module: "corral_plugin::wasm::bindings",
        runtime_path: "corral_plugin::wasm::rt",
    });
}

pub use bindings::exports::corral::plugin::tools::{CallResult as WitCallResult, Guest, Tool as WitTool};
pub use wit_bindgen::rt;

use bindings::corral::plugin::types as wit;

use crate::output::{CallResult, Content};
use crate::tool::{dispatch, TaskSupport, Tool};

pub fn list_tools(tools: &[Tool]) -> Vec<WitTool> {
    tools.iter().map(describe).collect()
}

pub fn call_tool(tools: &[Tool], name: &str, arguments: &str) -> WitCallResult {
    to_wit(dispatch(tools, name, arguments))
}

fn describe(tool: &Tool) -> WitTool {
    let info = tool.describe();
    let a = info.annotations;
    WitTool {
        name: info.name,
        title: info.title,
        description: info.description,
        input_schema: info.input_schema.to_string(),
        output_schema: info.output_schema.map(|s| s.to_string()),
        annotations: wit::Annotations {
            title: a.title,
            read_only: a.read_only,
            destructive: a.destructive,
            idempotent: a.idempotent,
            open_world: a.open_world,
        },
        task_support: match info.task_support {
            TaskSupport::Forbidden => wit::TaskSupport::Forbidden,
            TaskSupport::Optional => wit::TaskSupport::Optional,
            TaskSupport::Required => wit::TaskSupport::Required,
        },
    }
}

fn to_wit(result: CallResult) -> WitCallResult {
    WitCallResult { content: result.content.into_iter().map(content_to_wit).collect(), structured: result.structured, is_error: result.is_error }
}

pub(crate) fn content_to_wit(c: Content) -> wit::Content {
    match c {
        Content::Text(text) => wit::Content::Text(text),
        Content::Image { data, mime_type } => wit::Content::Image(wit::Blob { data, mime_type }),
        Content::Audio { data, mime_type } => wit::Content::Audio(wit::Blob { data, mime_type }),
        Content::Link { uri, name, description, mime_type } => wit::Content::Link(wit::ResourceLink { uri, name, description, mime_type }),
        Content::EmbeddedText { uri, mime_type, text } => wit::Content::Embedded(wit::EmbeddedResource { uri, mime_type, body: wit::ResourceBody::Text(text) }),
        Content::EmbeddedBytes { uri, mime_type, bytes } => {
            wit::Content::Embedded(wit::EmbeddedResource { uri, mime_type, body: wit::ResourceBody::Bytes(bytes) })
        }
    }
}

pub(crate) fn content_from_wit(c: wit::Content) -> Content {
    match c {
        wit::Content::Text(text) => Content::Text(text),
        wit::Content::Image(b) => Content::Image { data: b.data, mime_type: b.mime_type },
        wit::Content::Audio(b) => Content::Audio { data: b.data, mime_type: b.mime_type },
        wit::Content::Link(l) => Content::Link { uri: l.uri, name: l.name, description: l.description, mime_type: l.mime_type },
        wit::Content::Embedded(e) => match e.body {
            wit::ResourceBody::Text(text) => Content::EmbeddedText { uri: e.uri, mime_type: e.mime_type, text },
            wit::ResourceBody::Bytes(bytes) => Content::EmbeddedBytes { uri: e.uri, mime_type: e.mime_type, bytes },
        },
    }
}

/// The exports of world `full`, from a [`crate::Surface`].
#[cfg(feature = "full")]
pub mod full {
    use std::collections::BTreeMap;

    use super::bindings::corral::plugin::messages as wm;
    use super::bindings::exports::corral::plugin::{completions as wc, prompts as wp, resources as wr};
    use super::{content_to_wit, wit};
    use crate::message::Role;
    use crate::prompt::PromptError;
    use crate::resource::{Body, ReadError, ResourceInfo};
    use crate::surface::{Reference, Surface};

    pub use wc::{Completion as WitCompletion, Guest as CompletionsGuest, Reference as WitReference};
    pub use wp::{Guest as PromptsGuest, Prompt as WitPrompt, PromptError as WitPromptError, PromptResult as WitPromptResult};
    pub use wr::{
        Contents as WitContents, Guest as ResourcesGuest, ReadError as WitReadError, Resource as WitResource, ResourceTemplate as WitResourceTemplate,
    };

    pub fn list_resources(surface: &Surface) -> Vec<WitResource> {
        let one = |r: ResourceInfo| WitResource { uri: r.uri, name: r.name, title: r.title, description: r.description, mime_type: r.mime_type, size: r.size };
        surface.resources().into_iter().map(one).collect()
    }

    pub fn list_resource_templates(surface: &Surface) -> Vec<WitResourceTemplate> {
        let one =
            |t: ResourceInfo| WitResourceTemplate { uri_template: t.uri, name: t.name, title: t.title, description: t.description, mime_type: t.mime_type };
        surface.templates().into_iter().map(one).collect()
    }

    pub fn read_resource(surface: &Surface, uri: &str) -> Result<Vec<WitContents>, WitReadError> {
        match surface.read(uri) {
            Ok(contents) => Ok(contents
                .into_iter()
                .map(|c| WitContents {
                    uri: c.uri,
                    mime_type: c.mime_type,
                    body: match c.body {
                        Body::Text(text) => wit::ResourceBody::Text(text),
                        Body::Bytes(bytes) => wit::ResourceBody::Bytes(bytes),
                    },
                })
                .collect()),
            Err(ReadError::NotFound) => Err(WitReadError::NotFound),
            Err(ReadError::Failed(why)) => Err(WitReadError::Failed(why)),
        }
    }

    pub fn list_prompts(surface: &Surface) -> Vec<WitPrompt> {
        surface
            .prompts()
            .into_iter()
            .map(|p| WitPrompt {
                name: p.name,
                title: p.title,
                description: p.description,
                arguments: p
                    .arguments
                    .into_iter()
                    .map(|a| wp::PromptArgument { name: a.name, title: a.title, description: a.description, required: a.required })
                    .collect(),
            })
            .collect()
    }

    pub fn get_prompt(surface: &Surface, name: &str, arguments: Vec<(String, String)>) -> Result<WitPromptResult, WitPromptError> {
        let arguments: BTreeMap<String, String> = arguments.into_iter().collect();
        match surface.get_prompt(name, &arguments) {
            Ok(messages) => Ok(WitPromptResult {
                description: None,
                messages: messages
                    .into_iter()
                    .map(|m| wm::Message {
                        role: match m.role {
                            Role::User => wm::Role::User,
                            Role::Assistant => wm::Role::Assistant,
                        },
                        content: content_to_wit(m.content),
                    })
                    .collect(),
            }),
            Err(PromptError::InvalidArguments(why)) => Err(WitPromptError::InvalidArguments(why)),
            Err(PromptError::Failed(why)) => Err(WitPromptError::Failed(why)),
        }
    }

    pub fn complete(surface: &Surface, reference: WitReference, argument: &str, value: &str, context: Vec<(String, String)>) -> WitCompletion {
        let reference = match reference {
            WitReference::Prompt(name) => Reference::Prompt(name),
            WitReference::ResourceTemplate(template) => Reference::Template(template),
        };
        let c = surface.complete(&reference, argument, value, &context.into_iter().collect());
        WitCompletion { values: c.values, total: c.total, has_more: c.has_more }
    }
}

/// Exports world `full`'s other interfaces from `$surface`, for `export!`.
#[cfg(feature = "full")]
#[doc(hidden)]
#[macro_export]
macro_rules! __corral_export_surface {
    ($ty:ident, empty) => {
        $crate::__corral_export_surface!($ty, given $crate::Surface::new());
    };
    ($ty:ident, given $surface:expr) => {
        impl $crate::wasm::full::ResourcesGuest for $ty {
            fn list_resources() -> ::std::vec::Vec<$crate::wasm::full::WitResource> {
                $crate::wasm::full::list_resources(&$surface)
            }
            fn list_resource_templates() -> ::std::vec::Vec<$crate::wasm::full::WitResourceTemplate> {
                $crate::wasm::full::list_resource_templates(&$surface)
            }
            fn read_resource(uri: ::std::string::String) -> ::std::result::Result<::std::vec::Vec<$crate::wasm::full::WitContents>, $crate::wasm::full::WitReadError> {
                $crate::wasm::full::read_resource(&$surface, &uri)
            }
        }
        impl $crate::wasm::full::PromptsGuest for $ty {
            fn list_prompts() -> ::std::vec::Vec<$crate::wasm::full::WitPrompt> {
                $crate::wasm::full::list_prompts(&$surface)
            }
            fn get_prompt(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::result::Result<$crate::wasm::full::WitPromptResult, $crate::wasm::full::WitPromptError> {
                $crate::wasm::full::get_prompt(&$surface, &name, arguments)
            }
        }
        impl $crate::wasm::full::CompletionsGuest for $ty {
            fn complete(
                reference: $crate::wasm::full::WitReference,
                argument: ::std::string::String,
                value: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> $crate::wasm::full::WitCompletion {
                $crate::wasm::full::complete(&$surface, reference, &argument, &value, context)
            }
        }
    };
}

/// World `plugin` exports tools only: a surface has nowhere to go.
#[cfg(not(feature = "full"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __corral_export_surface {
    ($ty:ident, empty) => {};
    ($ty:ident, given $surface:expr) => {
        ::core::compile_error!("exporting resources, prompts or completions needs world `full`: enable the corral-plugin crate's `full` feature");
    };
}
