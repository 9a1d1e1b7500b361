//! wasmtime: compiling plugins and running one call in one fresh, limited store.
//!
//! The runtime knows components, not MCP. It takes a plugin, a tool name, JSON arguments and a
//! [`CallContext`], and gives back the guest's result or a [`Failure`].

mod bindings;
mod cache;
mod call;
mod code;
mod connections;
mod denials;
mod engine;
mod exports;
mod failure;
mod files;
mod input;
mod inspect;
mod instances;
mod network;
mod output;
mod redact;
mod source;
mod stamp;
mod ticker;
mod time_limit;
mod tool_list;
mod v3_values;

pub use bindings::*;
pub use cache::CacheOutcome;
// The engine and the compile cache are public so that a bench can run bare wasmtime under
// exactly the host's configuration (`benches/compare/floor.rs`): a copy would drift.
pub use cache::CompileCache;
pub use call::{CallContext, CallObserver, ClientAnswer, ResourceUpdate, Silent, Usage};
pub use connections::{Connection, Connections, Door, Totals};
pub use denials::Denials;
pub use engine::build as build_engine;
pub use engine::{Compiler, EngineSettings};
pub use exports::Contract;
pub use failure::Failure;
pub use input::{check_keys as check_input_keys, InputRequest, InputResponse, Keyed, MAX_KEY_LEN};
pub use inspect::Interfaces;
pub use redact::{redacted, SecretVars, MIN_REDACTED};
pub use time_limit::TimeLimit;
pub use tool_list::Lists;

pub use code::{LoadError, PluginCode};
pub use instances::{Runtime, RuntimeSettings};
pub use source::PluginSource;
