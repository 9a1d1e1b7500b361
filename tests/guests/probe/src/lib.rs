//! A guest that tries what a sandbox must refuse (or allow, when the manifest grants it) and
//! reports what it got. With no arguments it reports the whole default environment; each
//! argument asks for one more access: `read`, `write` (+`text`), `env`, `connect` (ip:port),
//! `connect_name` (host:port, through DNS), `http` (an authority for a GET). With `strict`,
//! any refused access makes the result an error.

wit_bindgen::generate!({ path: "../../../wit", world: "plugin" });

mod http;

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Map, Value};

struct Probe;

fn denied(e: impl std::fmt::Display) -> String {
    format!("denied: {e}")
}

fn connect(addr: SocketAddr) -> String {
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(_) => "connected".to_string(),
        Err(e) => denied(e),
    }
}

fn connect_name(target: &str) -> String {
    match target.to_socket_addrs() {
        Ok(mut addrs) => match addrs.next() {
            Some(addr) => connect(addr),
            None => denied("no address"),
        },
        Err(e) => denied(format!("lookup failed: {e}")),
    }
}

fn write(path: &str, text: &str) -> String {
    match std::fs::File::create(path).and_then(|mut f| f.write_all(text.as_bytes())) {
        Ok(()) => "wrote".to_string(),
        Err(e) => denied(e),
    }
}

impl Guest for Probe {
    fn list_tools() -> Vec<Tool> {
        let text = json!({"type": "string"});
        let schema = json!({"type": "object", "properties": {
            "connect": text, "connect_name": text, "http": text, "read": text, "write": text, "text": text, "env": text,
            "strict": {"type": "boolean"}, "echo": {"type": "boolean"},
        }});
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
        let arg = |key: &str| args[key].as_str();
        let mut report = Map::new();
        report.insert("env_count".into(), json!(std::env::vars().count()));
        let mut names: Vec<String> = std::env::vars().map(|(name, _)| name).collect();
        names.sort();
        report.insert("env_names".into(), json!(names));
        report.insert("args".into(), json!(std::env::args().count()));
        report.insert("root_dir".into(), json!(std::fs::read_dir("/").map(|d| d.count().to_string()).unwrap_or_else(denied)));
        report.insert("cwd_file".into(), json!(std::fs::read_to_string("Cargo.toml").map(|_| "read".to_string()).unwrap_or_else(denied)));
        report.insert("etc_passwd".into(), json!(std::fs::read_to_string("/etc/passwd").map(|_| "read".to_string()).unwrap_or_else(denied)));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        report.insert("now".into(), json!(now));
        if let Some(addr) = arg("connect") {
            report.insert("connect".into(), json!(addr.parse::<SocketAddr>().map(connect).unwrap_or_else(denied)));
        }
        if let Some(target) = arg("connect_name") {
            report.insert("connect_name".into(), json!(connect_name(target)));
        }
        if let Some(authority) = arg("http") {
            report.insert("http".into(), json!(http::get(authority).unwrap_or_else(denied)));
        }
        if let Some(path) = arg("read") {
            report.insert("read".into(), json!(std::fs::read_to_string(path).unwrap_or_else(denied)));
        }
        if let Some(path) = arg("write") {
            report.insert("write".into(), json!(write(path, arg("text").unwrap_or(""))));
        }
        if let Some(name) = arg("env") {
            let value = std::env::var(name).ok();
            // Reversed, it is no longer the value the host redacts: a test can tell whose it is.
            report.insert("env_reversed".into(), json!(value.as_ref().map(|v| v.chars().rev().collect::<String>())));
            if args["echo"] == true {
                // Everywhere a plugin could leak it: its log, its stderr, its progress and its result.
                if let Some(v) = &value {
                    eprintln!("probe leaks {v} on stderr");
                    corral::plugin::host::log(corral::plugin::host::LogLevel::Info, &format!("probe leaks {v} in a log"));
                    corral::plugin::host::progress(1.0, Some(2.0), Some(format!("probe leaks {v} in progress").as_str()));
                }
            }
            report.insert("env".into(), json!(value));
        }
        let refused = report.values().any(|v| v.as_str().is_some_and(|s| s.starts_with("denied")));
        let is_error = args["strict"] == true && refused;
        CallResult { content: vec![Content::Text(Value::Object(report).to_string())], structured: None, is_error }
    }
}

export!(Probe);
