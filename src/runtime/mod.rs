//! wasmtime: compiling plugins and running one call in one fresh, limited store.
//!
//! The runtime knows components, not MCP. It takes a plugin, a tool name, JSON arguments and a
//! [`CallContext`], and gives back the guest's result or a [`Failure`].

mod bindings;
mod cache;
mod call;
mod engine;
mod failure;
mod files;
mod network;
mod output;
mod ticker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

pub use bindings::{Annotations, Blob, CallResult, Content, LogLevel, ResourceBody, TaskSupport, Tool};
pub use cache::CacheOutcome;
pub use call::{CallContext, CallObserver, Denials, Silent};
pub use engine::EngineSettings;
pub use failure::Failure;
use failure::Stopped;

use crate::config::Permissions;
use cache::CompileCache;
use network::{GuardedLookup, HttpGuard, NetGuard};

use bindings::{Plugin, PluginPre};
use call::CallState;
use output::PluginOutput;

/// Runtime settings the host exposes as flags.
#[derive(Clone, Debug)]
pub struct RuntimeSettings {
    pub engine: EngineSettings,
    /// How often the epoch advances: the granularity of deadlines and cancellation.
    pub epoch_tick: Duration,
    /// Largest result (sum of its strings and bytes) passed back to a client.
    pub max_output: u64,
    /// Where precompiled plugins are kept; `None` compiles every plugin at every start.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeSettings {
    fn default() -> RuntimeSettings {
        RuntimeSettings { engine: EngineSettings::default(), epoch_tick: Duration::from_millis(1), max_output: 16 << 20, cache_dir: None }
    }
}

/// A compiled plugin and what its instances may reach, ready to instantiate.
#[derive(Clone)]
pub struct PluginCode {
    name: Arc<str>,
    pre: PluginPre<CallState>,
    permissions: Arc<Permissions>,
    network: Arc<[crate::config::NetPattern]>,
}

impl PluginCode {
    /// The same code, granted `permissions` (default: none).
    pub fn with_permissions(mut self, permissions: Permissions) -> PluginCode {
        self.network = permissions.network.clone().into();
        self.permissions = Arc::new(permissions);
        self
    }

    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }
}

/// Why a plugin's bytes could not become a [`PluginCode`].
#[derive(Debug)]
pub enum LoadError {
    /// Not a valid WebAssembly component.
    InvalidComponent(String),
    /// It imports something the host does not provide.
    MissingImport(String),
}

pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    cache: Option<CompileCache>,
    ticker: ticker::Ticker,
    settings: RuntimeSettings,
    instances: tokio::sync::Semaphore,
}

enum Op<'a> {
    ListTools,
    CallTool { name: &'a str, arguments: &'a str },
}

enum Answer {
    Tools(Vec<Tool>),
    Result(CallResult),
}

impl Runtime {
    pub fn new(settings: RuntimeSettings) -> anyhow::Result<Runtime> {
        let engine = engine::build(&settings.engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        // Name lookups go through the network allow-list instead of wasmtime-wasi's resolver.
        linker.allow_shadowing(true);
        wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::add_to_linker::<CallState, GuardedLookup>(&mut linker, network::lookup_view)?;
        files::guard_writes(&mut linker)?;
        linker.allow_shadowing(false);
        Plugin::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
        let cache = match &settings.cache_dir {
            Some(dir) => Some(CompileCache::open(dir, &engine).map_err(|e| anyhow::anyhow!("compile cache {}: {e} (pass --no-cache to run without one)", dir.display()))?),
            None => None,
        };
        let ticker = ticker::Ticker::start(engine.clone(), settings.epoch_tick);
        let instances = tokio::sync::Semaphore::new(settings.engine.max_instances as usize);
        Ok(Runtime { engine, linker, cache, ticker, settings, instances })
    }

    /// The directory this engine's precompiled plugins are kept in, if there is a cache.
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        self.cache.as_ref().map(|c| c.dir())
    }

    /// Compiles a component (or maps it from the cache) and resolves its imports against what
    /// the host provides. The code has no permissions until [`PluginCode::with_permissions`].
    pub fn compile(&self, name: &str, bytes: &[u8]) -> Result<PluginCode, LoadError> {
        self.compile_cached(name, bytes).map(|(code, _)| code)
    }

    /// Like [`Runtime::compile`], also saying how the cache served it (`None`: no cache).
    pub fn compile_cached(&self, name: &str, bytes: &[u8]) -> Result<(PluginCode, Option<CacheOutcome>), LoadError> {
        let invalid = |e: wasmtime::Error| LoadError::InvalidComponent(format!("{e:#}"));
        let (component, outcome) = match &self.cache {
            Some(cache) => {
                let (component, outcome) = cache.load(&self.engine, bytes).map_err(invalid)?;
                match &outcome {
                    CacheOutcome::Hit => tracing::debug!(plugin = name, "loaded from the compile cache"),
                    CacheOutcome::Stored => tracing::debug!(plugin = name, "compiled and cached"),
                    CacheOutcome::Replaced(why) => tracing::warn!(plugin = name, "discarded a cache entry ({why}); compiled again"),
                    CacheOutcome::NotStored(why) => tracing::warn!(plugin = name, "compiled, but could not cache it: {why}"),
                }
                (component, Some(outcome))
            }
            None => (Component::new(&self.engine, bytes).map_err(invalid)?, None),
        };
        let instance_pre = self.linker.instantiate_pre(&component).map_err(|e| LoadError::MissingImport(format!("{e:#}")))?;
        let pre = PluginPre::new(instance_pre).map_err(invalid)?;
        Ok((PluginCode { name: name.into(), pre, permissions: Arc::default(), network: Arc::new([]) }, outcome))
    }

    /// Makes the epoch advance now, so a guest that was just cancelled stops without waiting
    /// for the next tick.
    pub fn interrupt(&self) {
        self.engine.increment_epoch();
    }

    /// Calls `list-tools` in a fresh instance.
    pub async fn list_tools(&self, code: &PluginCode, ctx: CallContext) -> Result<Vec<Tool>, Failure> {
        match self.run(code, ctx, Op::ListTools).await? {
            Answer::Tools(tools) => Ok(tools),
            Answer::Result(_) => unreachable!("list-tools answers with tools"),
        }
    }

    /// Calls `call-tool` in a fresh instance under the context's limits.
    pub async fn call_tool(&self, code: &PluginCode, name: &str, arguments: &str, ctx: CallContext) -> Result<CallResult, Failure> {
        let result = match self.run(code, ctx, Op::CallTool { name, arguments }).await? {
            Answer::Result(result) => result,
            Answer::Tools(_) => unreachable!("call-tool answers with a result"),
        };
        let size = result_size(&result);
        if size > self.settings.max_output {
            return Err(Failure::OutputTooLarge { size: Some(size), limit: self.settings.max_output });
        }
        Ok(result)
    }

    /// Number of calls running now.
    pub fn active_calls(&self) -> usize {
        self.ticker.active_calls()
    }

    async fn run(&self, code: &PluginCode, ctx: CallContext, op: Op<'_>) -> Result<Answer, Failure> {
        let _active = self.ticker.activate();
        let limit = ctx.limits.timeout;
        let deadline = Instant::now() + limit;
        let (stdout, stderr) = PluginOutput::pair(code.name.clone());
        let mut store = self.new_store(code, &ctx, deadline, &stdout, &stderr)?;
        let outcome = {
            let work = async {
                let _permit = self.instances.acquire().await.expect("the instance semaphore is never closed");
                invoke(&mut store, &code.pre, op).await
            };
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(Failure::Cancelled),
                _ = tokio::time::sleep_until(deadline.into()) => Err(Failure::Timeout { limit }),
                answer = work => Ok(answer),
            }
        };
        stdout.flush_partial();
        stderr.flush_partial();
        // A guest that saw `cancelled()` turn true may return in the same poll that the
        // cancellation or the deadline landed in; it still counts as cancelled or late.
        if ctx.cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        if Instant::now() >= deadline {
            return Err(Failure::Timeout { limit });
        }
        match outcome? {
            Ok(answer) => Ok(answer),
            Err(e) => Err(Failure::from_wasmtime(&e, &ctx.limits, store.data().memory_cap_hit, self.settings.max_output)),
        }
    }

    fn new_store(&self, code: &PluginCode, ctx: &CallContext, deadline: Instant, stdout: &PluginOutput, stderr: &PluginOutput) -> Result<Store<CallState>, Failure> {
        // Default deny: no arguments, and only the directories, variables and destinations the
        // manifest grants. TCP and name lookups stay switched on so that a refused connect is
        // seen (and reported) by the network guard rather than failing silently in the guest.
        let net = Arc::new(NetGuard::new(code.network.clone(), ctx.denials.clone()));
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(stdout.clone()).stderr(stderr.clone()).allow_udp(false).allow_tcp(true).allow_ip_name_lookup(true);
        let check = net.clone();
        wasi.socket_addr_check(move |addr, usage| {
            let allowed = check.check(addr, usage);
            Box::pin(async move { allowed })
        });
        for var in &code.permissions.env {
            wasi.env(&var.name, &var.value);
        }
        for dir in &code.permissions.dirs {
            let perms = if dir.writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
            wasi.preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| Failure::Trap { message: format!("the granted directory {} cannot be opened: {e:#}", dir.host.display()) })?;
        }
        let state = CallState {
            wasi: wasi.build(),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            http_guard: HttpGuard(net.clone()),
            net,
            denials: ctx.denials.clone(),
            table: ResourceTable::new(),
            plugin: code.name.clone(),
            observer: ctx.observer.clone(),
            cancel: ctx.cancel.clone(),
            deadline,
            memory_cap: ctx.limits.memory,
            memory_cap_hit: false,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| state);
        store.set_fuel(ctx.limits.fuel).expect("fuel is enabled on the engine");
        // Bounds what the host copies out of the guest in one go (results, log lines), so a
        // result of many aliased pointers cannot make the host allocate gigabytes.
        store.set_hostcall_fuel(usize::try_from(self.settings.max_output.saturating_mul(2)).unwrap_or(usize::MAX).max(1 << 20));
        // At every epoch tick (and at once after `interrupt`), a computing guest comes here:
        // stop it if it was cancelled or is past its deadline, else let the runtime breathe.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| {
            let state = store.data();
            if state.cancel.is_cancelled() {
                return Err(Stopped::Cancelled.into());
            }
            if Instant::now() >= state.deadline {
                return Err(Stopped::DeadlinePassed.into());
            }
            Ok(UpdateDeadline::Yield(1))
        });
        Ok(store)
    }
}

async fn invoke(store: &mut Store<CallState>, pre: &PluginPre<CallState>, op: Op<'_>) -> wasmtime::Result<Answer> {
    let plugin = pre.instantiate_async(&mut *store).await?;
    let tools = plugin.corral_plugin_tools();
    Ok(match op {
        Op::ListTools => Answer::Tools(tools.call_list_tools(&mut *store).await?),
        Op::CallTool { name, arguments } => Answer::Result(tools.call_call_tool(&mut *store, name, arguments).await?),
    })
}

/// Bytes of text and data in a result: what a client would receive, before encoding.
fn result_size(result: &CallResult) -> u64 {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len());
    let content: usize = result
        .content
        .iter()
        .map(|c| match c {
            Content::Text(t) => t.len(),
            Content::Image(b) | Content::Audio(b) => b.data.len() + b.mime_type.len(),
            Content::Link(l) => l.uri.len() + l.name.len() + opt(&l.description) + opt(&l.mime_type),
            Content::Embedded(r) => {
                r.uri.len() + opt(&r.mime_type) + match &r.body {
                    ResourceBody::Text(t) => t.len(),
                    ResourceBody::Bytes(b) => b.len(),
                }
            }
        })
        .sum();
    (content + opt(&result.structured)) as u64
}
