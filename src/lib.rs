//! corral: an MCP host that serves tools implemented as sandboxed WebAssembly components.
//!
//! Data flows one way: [`transport`] frames messages for a [`server::Session`], which serves MCP
//! methods from the [`registry`] of loaded plugins and runs calls in the [`runtime`], directly or
//! as [`tasks`]. The operator's console ([`admin`]) is a listener of its own beside the
//! transports, reading the host through `server::operator`.

#![warn(missing_docs)]

pub mod admin;
pub mod audit;
pub mod cancel;
pub mod cli;
pub mod config;
pub mod identity;
pub mod mcp;
pub mod oci;
pub mod policy;
pub mod principal;
pub mod registry;
pub mod runtime;
pub mod secrets;
pub mod server;
pub mod tasks;
pub mod telemetry;
pub mod transport;
pub mod uri;
