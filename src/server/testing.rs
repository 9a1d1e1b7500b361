//! What the in-process tests of the server and the transports share: the one function that
//! builds a [`Host`], an [`Outlet`] that collects what it is sent, and the plugin fixtures of
//! the black-box suites (`tests/common/fixture.rs`, compiled here too).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{Host, Metrics, Outlet, ServerOptions, ToolRunner};
use crate::config::Limits;
use crate::mcp::jsonrpc::Outgoing;
use crate::registry::{load_dir, LoadSettings, Registry};
use crate::runtime::{EngineSettings, Runtime, RuntimeSettings};
use crate::tasks::{Durability, Engine, Runners, SqliteStore, TaskSettings};

#[allow(dead_code)]
#[path = "../../tests/common/fixture.rs"]
pub mod fixture;

/// How long a test waits for a message before it fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A host serving the plugins `(name, component)`, with tasks in memory. Every in-process
/// test builds its host here, so a change to how a host is put together is made once.
pub async fn host(plugins: &[(&str, Vec<u8>)], options: ServerOptions) -> Arc<Host> {
    let dir = tempfile::tempdir().expect("a temporary plugin directory");
    for (name, bytes) in plugins {
        std::fs::write(dir.path().join(format!("{name}.wasm")), bytes).expect("writing a plugin");
    }
    // A small pool: tests run side by side and each has its own engine.
    let memory_ceiling = 64 << 20;
    let settings = RuntimeSettings { engine: EngineSettings { memory_ceiling, max_instances: 8, ..EngineSettings::default() }, ..RuntimeSettings::default() };
    let runtime = Runtime::new(settings).expect("a runtime");
    let defaults = Limits { memory: 16 << 20, ..Limits::default() };
    let load = LoadSettings { defaults, memory_ceiling, protected: Vec::new() };
    let catalog = load_dir(dir.path(), &runtime, &load).await.expect("loading the plugins");
    assert!(catalog.refused.is_empty(), "a test plugin was refused: {:?}", catalog.refused.iter().map(|r| &r.message).collect::<Vec<_>>());
    let registry = Arc::new(Registry::new(catalog));
    let runtime = Arc::new(runtime);
    let memory = Path::new(":memory:");
    let store = Arc::new(SqliteStore::open(memory, Durability::Process).expect("an in-memory task store"));
    let metrics = Arc::new(Metrics::default());
    let runner = ToolRunner::new(registry.clone(), runtime.clone(), metrics.clone());
    let runners = Runners::register(memory).expect("registering the runner");
    let engine = Engine::start(store, runners, TaskSettings::default(), Arc::new(runner.clone()), runtime.waker(), tokio_util::sync::CancellationToken::new())
        .await
        .expect("the task engine");
    Arc::new(Host::new(registry, runtime, engine, options, metrics, runner))
}

/// An outlet that keeps every message, for a test to read.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<Value>>);

impl Outlet for Collect {
    fn send(&self, message: Outgoing) {
        self.0.lock().unwrap().push(message.to_value());
    }
}

impl Collect {
    /// Everything sent so far.
    pub fn messages(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until a message satisfies `found`, and returns it.
    pub async fn wait_for(&self, what: &str, found: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(m) = self.0.lock().unwrap().iter().find(|m| found(m)) {
                return m.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "no {what} within {PATIENCE:?}; got {:?}", self.messages());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits for the answer to request `id`.
    pub async fn answer(&self, id: Value) -> Value {
        self.wait_for(&format!("answer to {id}"), |m| m.get("id") == Some(&id) && (m.get("result").is_some() || m.get("error").is_some())).await
    }
}
