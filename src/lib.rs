//! corral: an MCP host that serves tools implemented as sandboxed WebAssembly components.
//!
//! Data flows one way: [`transport`] frames messages for a [`server::Session`], which serves MCP
//! methods from the [`registry`] of loaded plugins and runs calls in the [`runtime`], directly or
//! as [`tasks`].

#![warn(missing_docs)]

pub mod cancel;
pub mod cli;
pub mod config;
pub mod identity;
pub mod mcp;
pub mod oci;
pub mod principal;
pub mod registry;
pub mod runtime;
pub mod server;
pub mod tasks;
pub mod transport;
