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
//!
//! Everything contract `corral:plugin@0.3.0` offers is here, typed:
//!
//! - tools ([`Tool`]), with [`log`], [`progress`] and [`cancelled`] while they run;
//! - questions to the client: [`elicit`] (a form from a serde struct, the answer as that struct),
//!   [`sample`], [`roots`] and [`ask`] (several at once, under keys);
//! - durable progress: [`checkpoint`], [`resume::<State>()`](resume), [`write_atomically`];
//! - with the `full` feature, resources, templates, prompts and completions ([`Surface`]), and
//!   [`resource_updated`].

#![warn(missing_docs)]

// The generated bindings name this crate by its path, from inside it as from the plugin.
extern crate self as corral_plugin;

mod checkpoint;
mod host;
mod input;
mod message;
mod output;
mod prompt;
mod resource;
mod schema;
mod surface;
pub mod testing;
mod tool;
mod uri_template;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod wasm;

pub use checkpoint::{checkpoint, checkpoint_bytes, resume, resume_bytes, write_atomically};
pub use host::{cancelled, log, progress, resource_updated, LogLevel};
pub use input::{ask, elicit, roots, sample, Answers, Elicited, Question, RequestError, Root, Sampled, Sampling};
pub use message::{Message, Role};
pub use output::{CallResult, Content, Json, Output};
pub use prompt::{Prompt, PromptArgument, PromptError, PromptInfo};
pub use resource::{Body, Contents, ReadError, Resource, ResourceInfo, ResourceTemplate};
pub use surface::{Completion, Reference, Surface};
pub use tool::{Annotations, NoArgs, TaskSupport, Tool, ToolInfo};

/// Exports the plugin: `export!(tools)` exports the tools a `fn() -> Vec<Tool>` returns (world
/// `plugin`); `export!(tools, surface)` also exports the resources, templates, prompts and
/// completions a `fn() -> Surface` returns (world `full`: enable the crate's `full` feature).
///
/// Use it once, in the crate's `lib.rs`. It does nothing outside wasm builds.
#[macro_export]
macro_rules! export {
    (@world $tools:path, $($surface:tt)+) => {
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
            $crate::__corral_export_surface!(CorralPluginExports, $($surface)+);
            $crate::wasm::bindings::__corral_wit_export!(CorralPluginExports with_types_in $crate::wasm::bindings);
        };
    };
    ($tools:path) => {
        $crate::export!(@world $tools, empty);
    };
    ($tools:path, $surface:path) => {
        $crate::export!(@world $tools, given $surface());
    };
}
