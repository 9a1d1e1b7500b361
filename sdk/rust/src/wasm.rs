//! The component glue: wit-bindgen's bindings for `wit/plugin.wit` and the conversions between
//! them and this crate's types. Used by [`crate::export!`]; not meant to be used directly.

#[cfg(feature = "v0_3")]
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

#[cfg(not(feature = "v0_3"))]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin",
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
    WitCallResult { content: result.content.into_iter().map(content).collect(), structured: result.structured, is_error: result.is_error }
}

fn content(c: Content) -> wit::Content {
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
