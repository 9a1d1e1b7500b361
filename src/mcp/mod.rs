//! The MCP wire format: JSON-RPC framing, error codes and the message types corral sends.
//!
//! Pure data: nothing here does I/O or knows about WebAssembly.

pub mod jsonrpc;
pub mod types;

pub use jsonrpc::{Incoming, RequestId, RpcError};
