//! The MCP wire format: JSON-RPC framing, error codes and the message types corral sends.
//!
//! Pure data: nothing here does I/O or knows about WebAssembly.

pub mod jsonrpc;
pub mod method;
pub mod modern;
pub mod params;
pub mod types;

pub use jsonrpc::{IdKey, Incoming, Rejected, RequestId, RpcError};
pub use method::{Method, Notification};
pub use params::Params;
