//! `server/discover`: who the server is, what it can do and which versions it speaks.
//!
//! Built from the host's settings alone, never from the registry: a client probing a host that
//! is still loading (compiling) its plugins gets its answer at once, and a stdio client that
//! probes and then sends `initialize` finds the connection still open to either era.

use serde_json::{json, Value};

use crate::mcp::modern::wire::{self, CacheScope, Caching, COMPLETE};
use crate::mcp::modern::{supported_versions, TASKS_EXTENSION};
use crate::server::ServerOptions;

/// How long a client may keep the discovery answer.
const DISCOVER_TTL_MS: u64 = 60 * 60 * 1000;

/// The `DiscoverResult`.
pub(in crate::server) fn discover(options: &ServerOptions) -> Value {
    let list_changed = options.list_changed;
    let result = json!({
        "supportedVersions": supported_versions(),
        "capabilities": {
            "tools": { "listChanged": list_changed },
            "resources": { "listChanged": list_changed },
            "prompts": { "listChanged": list_changed },
            "completions": {},
            // Exactly `{}`: clients (ext-tasks 0.2.2) check for an empty object.
            "extensions": { TASKS_EXTENSION: {} },
        },
        "instructions": "Tools served by corral run in sandboxed WebAssembly plugins with time, fuel and memory limits.",
    });
    wire::result(result, COMPLETE, Some(Caching { ttl_ms: DISCOVER_TTL_MS, scope: CacheScope::Public }))
}
