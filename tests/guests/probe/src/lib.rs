//! A guest that tries everything a default-deny sandbox must refuse, and reports what it got.

wit_bindgen::generate!({ path: "../../../wit", world: "plugin" });

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};

struct Probe;

impl Guest for Probe {
    fn list_tools() -> Vec<Tool> {
        let schema = json!({"type": "object", "properties": {"connect": {"type": "string"}}});
        vec![Tool {
            name: "probe".into(),
            title: None,
            description: "Reports what the sandbox lets it see.".into(),
            input_schema: schema.to_string(),
            output_schema: None,
            annotations: Annotations { title: None, read_only: None, destructive: None, idempotent: None, open_world: None },
            task_support: TaskSupport::Forbidden,
        }]
    }

    fn call_tool(_name: String, arguments: String) -> CallResult {
        println!("probe says hello on stdout");
        eprintln!("probe says hello on stderr");
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        let connect = args["connect"].as_str().and_then(|a| a.parse::<SocketAddr>().ok()).map(|addr| {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(_) => "connected".to_string(),
                Err(e) => format!("denied: {e}"),
            }
        });
        let report = json!({
            "env": std::env::vars().count(),
            "args": std::env::args().count(),
            "root_dir": std::fs::read_dir("/").map(|d| d.count().to_string()).unwrap_or_else(|e| format!("denied: {e}")),
            "cwd_file": std::fs::read_to_string("Cargo.toml").map(|_| "read".to_string()).unwrap_or_else(|e| format!("denied: {e}")),
            "etc_passwd": std::fs::read_to_string("/etc/passwd").map(|_| "read".to_string()).unwrap_or_else(|e| format!("denied: {e}")),
            "connect": connect,
            "now": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        });
        CallResult { content: vec![Content::Text(report.to_string())], structured: None, is_error: false }
    }
}

export!(Probe);
