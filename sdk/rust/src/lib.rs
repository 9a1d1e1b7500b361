//! Write corral tools as plain Rust functions.
//!
//! A tool is a function from a typed argument struct to a `Result`. The argument type's
//! [`JsonSchema`] becomes the tool's input schema, the output type decides the result (text, or
//! structured JSON with an output schema), and an `Err` becomes an `isError` result carrying the
//! error's text, which the model reads.
//!
//! ```ignore
//! use corral_plugin::{export, Tool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! fn greet(args: Greet) -> Result<String, String> {
//!     Ok(format!("Hello, {}!", args.name))
//! }
//!
//! fn tools() -> Vec<Tool> {
//!     vec![Tool::new("greet", "Greets someone by name.", greet).read_only(true)]
//! }
//!
//! export!(tools);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`: the crate (a `cdylib`) becomes a
//! component that corral serves. On any other target the same code compiles without the
//! component glue, so `cargo test` runs the tools' logic directly (see [`testing`]).

// The generated bindings name this crate by its path, from inside it as from the plugin.
extern crate self as corral_plugin;

mod checkpoint;
mod host;
mod output;
mod schema;
pub mod testing;
mod tool;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod wasm;

pub use checkpoint::{checkpoint, checkpoint_bytes, resume, resume_bytes, write_atomically};
pub use host::{cancelled, log, progress, LogLevel};
pub use output::{CallResult, Content, Json, Output};
pub use tool::{Annotations, NoArgs, TaskSupport, Tool, ToolInfo};

/// Exports the tools returned by a `fn() -> Vec<Tool>` as the plugin's `tools` interface.
///
/// Use it once, in the crate's `lib.rs`. It does nothing outside wasm builds.
#[macro_export]
macro_rules! export {
    ($tools:path) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct CorralPluginExports;
            impl $crate::wasm::Guest for CorralPluginExports {
                fn list_tools() -> ::std::vec::Vec<$crate::wasm::WitTool> {
                    $crate::wasm::list_tools(&$tools())
                }
                fn call_tool(name: ::std::string::String, arguments: ::std::string::String) -> $crate::wasm::WitCallResult {
                    $crate::wasm::call_tool(&$tools(), &name, &arguments)
                }
            }
    $crate::wasm::bindings::__corral_wit_export!(CorralPluginExports with_types_in $crate::wasm::bindings);
        };
    };
}
