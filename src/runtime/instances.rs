//! The runtime itself: wasmtime's engine and linker with every host import, the compile cache,
//! the epoch ticker and the instance pool; it compiles plugins and runs each call in a fresh store
//! under the plugin's limits.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::*;
use super::cache::{CacheOutcome, CompileCache};
use super::call::{CallContext, CallState, ResourceUpdate};
use super::code::{LoadError, PluginCode};
use super::engine::EngineSettings;
use super::exports::Exports;
use super::failure::{Failure, Stopped};
use super::inspect::{self, Interfaces};
use super::network::{GuardedLookup, HttpGuard, NetGuard};
use super::output::PluginOutput;
use super::source::PluginSource;
use super::tool_list::Lists;
use super::{bindings, call, engine, files, stamp, ticker, tool_list};
use crate::cancel::{CancelHandle, Wake};
use crate::config::{defaults, Limits};

/// Runtime settings the host exposes as flags.
#[derive(Clone, Debug)]
pub struct RuntimeSettings {
    /// wasmtime's engine: the memory ceiling and the instance pool.
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
        RuntimeSettings {
            engine: EngineSettings::default(),
            epoch_tick: defaults::duration(defaults::EPOCH_TICK),
            max_output: defaults::size(defaults::MAX_OUTPUT),
            cache_dir: None,
        }
    }
}

/// Compiles plugins and runs calls, each in a fresh store under its limits; one per host.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    cache: Option<CompileCache>,
    ticker: ticker::Ticker,
    settings: RuntimeSettings,
    instances: tokio::sync::Semaphore,
    /// Plugins' `resource-updated` calls.
    updates: tokio::sync::broadcast::Sender<ResourceUpdate>,
}

impl Runtime {
    /// A runtime with `settings`: the engine, the linker with every host import, the compile cache and the epoch ticker.
    pub fn new(settings: RuntimeSettings) -> anyhow::Result<Runtime> {
        let engine = engine::build(&settings.engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        // Name lookups go through the network allow-list instead of wasmtime-wasi's resolver.
        linker.allow_shadowing(true);
        wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::add_to_linker::<CallState, GuardedLookup>(&mut linker, call::lookup_view)?;
        files::guard_writes(&mut linker)?;
        linker.allow_shadowing(false);
        // Every contract version: a component imports one of them.
        bindings::v1::Plugin::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
        bindings::v2::Full::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
        bindings::v3::Full::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
        // 0.2.0's and 0.3.0's `types` (and 0.3.0's `messages`) are bound to earlier Rust types;
        // their instances (types only) still need a name.
        linker.instance("corral:plugin/types@0.2.0")?;
        linker.instance("corral:plugin/types@0.3.0")?;
        linker.instance("corral:plugin/messages@0.3.0")?;
        let cache = match &settings.cache_dir {
            Some(dir) => Some(
                CompileCache::open_for(dir, &engine, settings.engine.compiler)
                    .map_err(|e| anyhow::anyhow!("compile cache {}: {e} (pass --no-cache to run without one)", dir.display()))?,
            ),
            None => None,
        };
        let ticker = ticker::Ticker::start(engine.clone(), settings.epoch_tick);
        let instances = tokio::sync::Semaphore::new(settings.engine.max_instances as usize);
        let updates = tokio::sync::broadcast::channel(1024).0;
        Ok(Runtime { engine, linker, cache, ticker, settings, instances, updates })
    }

    /// Compiles `bytes` and reads its imports and exports, without linking it: this works for a
    /// component whose imports the host cannot satisfy.
    pub fn interfaces_of(&self, bytes: &[u8]) -> Result<Interfaces, String> {
        let component = Component::new(&self.engine, bytes).map_err(|e| format!("{e:#}"))?;
        Ok(inspect::interfaces(&self.engine, &component))
    }

    /// The imports and exports of a plugin that is already compiled.
    pub fn interfaces_of_plugin(&self, code: &PluginCode) -> Interfaces {
        inspect::interfaces(&self.engine, code.pre.component())
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
        self.compile_source(name, &PluginSource::new(bytes.to_vec(), None))
    }

    /// Reads a plugin file, with its digest when the compile cache remembers it for the file as
    /// it is (see [`CompileCache::key_of`]): a warm start then hashes none of its bytes.
    pub fn read_plugin(&self, file: &std::path::Path) -> std::io::Result<PluginSource> {
        let (bytes, stamp) = stamp::read_stamped(file)?;
        let key = self.cache.as_ref().map(|cache| cache.key_of(&bytes, stamp));
        Ok(PluginSource::new(bytes, key))
    }

    /// Like [`Runtime::compile_cached`], for a plugin read by [`Runtime::read_plugin`].
    pub fn compile_source(&self, name: &str, source: &PluginSource) -> Result<(PluginCode, Option<CacheOutcome>), LoadError> {
        let invalid = |e: wasmtime::Error| LoadError::InvalidComponent(format!("{e:#}"));
        let bytes = source.bytes();
        let (component, outcome, key) = match &self.cache {
            Some(cache) => {
                let (component, outcome, key) = cache.load_with_key(&self.engine, bytes, source.key().to_owned()).map_err(invalid)?;
                match &outcome {
                    CacheOutcome::Hit => tracing::debug!(plugin = name, "loaded from the compile cache"),
                    CacheOutcome::Stored => tracing::debug!(plugin = name, "compiled and cached"),
                    CacheOutcome::Replaced(why) => tracing::warn!(plugin = name, "discarded a cache entry ({why}); compiled again"),
                    CacheOutcome::NotStored(why) => tracing::warn!(plugin = name, "compiled, but could not cache it: {why}"),
                }
                (component, Some(outcome), Some(key))
            }
            None => (Component::new(&self.engine, bytes).map_err(invalid)?, None, None),
        };
        let instance_pre = self.linker.instantiate_pre(&component).map_err(|e| LoadError::MissingImport(format!("{e:#}")))?;
        let exports = Exports::find(&instance_pre).map_err(LoadError::InvalidComponent)?;
        // The cache's key is that digest already; without a cache it is computed once, here or
        // where the caller checked it against a pin.
        let (key, digest): (Option<Arc<str>>, Arc<str>) = (key.map(Into::into), source.digest().into());
        Ok((
            PluginCode {
                name: name.into(),
                pre: instance_pre,
                exports: Arc::new(exports),
                permissions: Arc::default(),
                network: Arc::new([]),
                cache_key: key,
                digest,
            },
            outcome,
        ))
    }

    /// A stop button for one call: cancelling it also advances the epoch, so a guest that is
    /// computing stops at once instead of at the next tick.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(self.waker())
    }

    /// What wakes a computing guest (advancing the epoch), for cancel handles made elsewhere.
    pub fn waker(&self) -> Wake {
        let engine = self.engine.clone();
        Arc::new(move || engine.increment_epoch())
    }

    /// Calls `list-tools` in a fresh instance.
    pub async fn list_tools(&self, code: &PluginCode, ctx: CallContext) -> Result<Vec<Tool>, Failure> {
        self.run(code, ctx, async |exports, store, pre| exports.list_tools(store, pre).await).await
    }

    /// What the plugin's `list-*` exports answer (`list-tools`, and `list-resources`,
    /// `list-resource-templates`, `list-prompts` where it exports them), each in a fresh
    /// instance under a context from `ctx`: from the compile cache when an entry for this
    /// component is there, else called (then stored there). Only for a plugin granted nothing:
    /// then the exports see nothing but its own code, so the component's bytes (the key) decide
    /// their answers; a plugin that may read files, variables or the network could answer
    /// differently each start. A failure names the export that failed.
    pub async fn lists_cached(&self, code: &PluginCode, ctx: impl Fn() -> CallContext) -> Result<Lists, (&'static str, Failure)> {
        let entry = match (&self.cache, &code.cache_key) {
            (Some(cache), Some(key)) if code.permissions.is_empty() => Some((cache.dir(), key)),
            _ => None,
        };
        if let Some(lists) = entry.and_then(|(dir, key)| tool_list::read(dir, key)) {
            tracing::debug!(plugin = %code.name, "tool list from the compile cache");
            return Ok(lists);
        }
        let mut lists = Lists { tools: self.list_tools(code, ctx()).await.map_err(|f| ("list-tools", f))?, ..Lists::default() };
        if code.has_resources() {
            lists.resources = self.list_resources(code, ctx()).await.map_err(|f| ("list-resources", f))?;
            lists.templates = self.list_resource_templates(code, ctx()).await.map_err(|f| ("list-resource-templates", f))?;
        }
        if code.has_prompts() {
            lists.prompts = self.list_prompts(code, ctx()).await.map_err(|f| ("list-prompts", f))?;
        }
        if let Some((dir, key)) = entry {
            if let Err(e) = tool_list::write(dir, key, &lists) {
                tracing::warn!(plugin = %code.name, "could not cache the tool list: {e}");
            }
        }
        Ok(lists)
    }

    /// Calls `call-tool` in a fresh instance under the context's limits.
    pub async fn call_tool(&self, code: &PluginCode, name: &str, arguments: &str, ctx: CallContext) -> Result<CallResult, Failure> {
        let result = self.run(code, ctx, async |exports, store, pre| exports.call_tool(store, pre, name, arguments).await).await?;
        self.check_size(result_size(&result))?;
        Ok(result)
    }

    /// Calls `list-resources` in a fresh instance (nothing when the plugin has no `resources`).
    pub async fn list_resources(&self, code: &PluginCode, ctx: CallContext) -> Result<Vec<Resource>, Failure> {
        self.run(code, ctx, async |exports, store, pre| exports.list_resources(store, pre).await).await
    }

    /// Calls `list-resource-templates` in a fresh instance.
    pub async fn list_resource_templates(&self, code: &PluginCode, ctx: CallContext) -> Result<Vec<ResourceTemplate>, Failure> {
        self.run(code, ctx, async |exports, store, pre| exports.list_resource_templates(store, pre).await).await
    }

    /// Calls `read-resource` in a fresh instance under the context's limits.
    pub async fn read_resource(&self, code: &PluginCode, uri: &str, ctx: CallContext) -> Result<Result<Vec<Contents>, ReadError>, Failure> {
        let read = self.run(code, ctx, async |exports, store, pre| exports.read_resource(store, pre, uri).await).await?;
        if let Ok(contents) = &read {
            let size: usize = contents
                .iter()
                .map(|c| {
                    c.uri.len()
                        + c.mime_type.as_ref().map_or(0, |m| m.len())
                        + match &c.body {
                            ResourceBody::Text(t) => t.len(),
                            ResourceBody::Bytes(b) => b.len(),
                        }
                })
                .sum();
            self.check_size(size as u64)?;
        }
        Ok(read)
    }

    /// Calls `list-prompts` in a fresh instance (nothing when the plugin has no `prompts`).
    pub async fn list_prompts(&self, code: &PluginCode, ctx: CallContext) -> Result<Vec<Prompt>, Failure> {
        self.run(code, ctx, async |exports, store, pre| exports.list_prompts(store, pre).await).await
    }

    /// Calls `get-prompt` in a fresh instance under the context's limits.
    pub async fn get_prompt(
        &self,
        code: &PluginCode,
        name: &str,
        arguments: &[(String, String)],
        ctx: CallContext,
    ) -> Result<Result<PromptResult, PromptError>, Failure> {
        let got = self.run(code, ctx, async |exports, store, pre| exports.get_prompt(store, pre, name, arguments).await).await?;
        if let Ok(prompt) = &got {
            let size = prompt.description.as_ref().map_or(0, |d| d.len() as u64) + prompt.messages.iter().map(|m| content_size(&m.content) as u64).sum::<u64>();
            self.check_size(size)?;
        }
        Ok(got)
    }

    /// Calls `complete` in a fresh instance under the context's limits (no values when the
    /// plugin has no `completions`).
    pub async fn complete(
        &self,
        code: &PluginCode,
        reference: &Reference,
        argument: &str,
        value: &str,
        context: &[(String, String)],
        ctx: CallContext,
    ) -> Result<Completion, Failure> {
        let completion = self.run(code, ctx, async |exports, store, pre| exports.complete(store, pre, reference, argument, value, context).await).await?;
        self.check_size(completion.values.iter().map(|v| v.len() as u64).sum())?;
        Ok(completion)
    }

    /// Plugins' `resource-updated` calls, from now on.
    pub fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<ResourceUpdate> {
        self.updates.subscribe()
    }

    fn check_size(&self, size: u64) -> Result<(), Failure> {
        if size > self.settings.max_output {
            return Err(Failure::OutputTooLarge { size: Some(size), limit: self.settings.max_output });
        }
        Ok(())
    }

    /// Number of calls running now.
    pub fn active_calls(&self) -> usize {
        self.ticker.active_calls()
    }

    /// Runs one export in a fresh store under the context's limits: `call` gets the component's
    /// exports, the store and the instance-to-be, and its answer keeps its own type. The closure
    /// is an async closure (not a boxed future), so a call costs no allocation beyond the store.
    async fn run<R>(
        &self,
        code: &PluginCode,
        ctx: CallContext,
        call: impl AsyncFnOnce(&Exports, &mut Store<CallState>, &InstancePre<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, Failure> {
        let _active = self.ticker.activate();
        // The limit may be switched while the call runs (an adopted call gets its task's).
        let (start, base) = (Instant::now(), ctx.limits.timeout);
        let (stdout, stderr) = PluginOutput::pair(code.name.clone(), ctx.secret_env.clone());
        let mut store = self.new_store(code, &ctx, start, &stdout, &stderr)?;
        let outcome = {
            let work = async {
                let _permit = self.instances.acquire().await.expect("the instance semaphore is never closed");
                call(&code.exports, &mut store, &code.pre).await
            };
            // The work is polled before the timer, so a call that ends in its first poll never
            // registers one: a first timer wakes a parked runtime thread to rearm its clock, a
            // wake-up per call on the other core (BENCHMARKS.md, section 17). A call that ends
            // late still counts as late: the checks below look at the clock.
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(Failure::Cancelled),
                answer = work => Ok(answer),
                limit = ctx.time_limit.expired(start, base) => Err(Failure::Timeout { limit }),
            }
        };
        stdout.flush_partial();
        stderr.flush_partial();
        let left = store.get_fuel().unwrap_or(0);
        ctx.usage.record(ctx.limits.fuel.saturating_sub(left), store.data().peak_memory);
        // A guest that saw `cancelled()` turn true may return in the same poll that the
        // cancellation or the deadline landed in; it still counts as cancelled or late.
        if ctx.cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        let limit = ctx.time_limit.get(base);
        if start.elapsed() >= limit {
            return Err(Failure::Timeout { limit });
        }
        match outcome? {
            Ok(answer) => Ok(answer),
            Err(e) => {
                let limits = Limits { timeout: limit, ..ctx.limits.clone() };
                Err(Failure::from_wasmtime(&e, &limits, store.data().memory_cap_hit, self.settings.max_output))
            }
        }
    }

    fn new_store(
        &self,
        code: &PluginCode,
        ctx: &CallContext,
        start: Instant,
        stdout: &PluginOutput,
        stderr: &PluginOutput,
    ) -> Result<Store<CallState>, Failure> {
        // Default deny: no arguments, and only the directories, variables and destinations the
        // manifest grants. TCP and name lookups stay switched on so that a refused connect is
        // seen (and reported) by the network guard rather than failing silently in the guest.
        let net = Arc::new(NetGuard::new(code.network.clone(), ctx.denials.clone(), ctx.connections.clone()));
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
        // The secrets resolved for this call's caller, in this instance only.
        for (name, value) in ctx.secret_env.iter() {
            wasi.env(name, value.as_str());
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
            updates: self.updates.clone(),
            cancel: ctx.cancel.clone(),
            start,
            timeout: ctx.limits.timeout,
            time_limit: ctx.time_limit.clone(),
            memory_cap: ctx.limits.memory,
            memory_cap_hit: false,
            peak_memory: 0,
            checkpoint: None,
            checkpoint_cap: ctx.limits.checkpoint,
            secrets: ctx.secret_env.clone(),
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
            if state.past_deadline() {
                return Err(Stopped::DeadlinePassed.into());
            }
            Ok(UpdateDeadline::Yield(1))
        });
        Ok(store)
    }
}

/// Bytes of text and data in a result: what a client would receive, before encoding.
fn result_size(result: &CallResult) -> u64 {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len());
    (result.content.iter().map(content_size).sum::<usize>() + opt(&result.structured)) as u64
}

/// Bytes of text and data in one content block.
fn content_size(c: &Content) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len());
    match c {
        Content::Text(t) => t.len(),
        Content::Image(b) | Content::Audio(b) => b.data.len() + b.mime_type.len(),
        Content::Link(l) => l.uri.len() + l.name.len() + opt(&l.description) + opt(&l.mime_type),
        Content::Embedded(r) => {
            r.uri.len()
                + opt(&r.mime_type)
                + match &r.body {
                    ResourceBody::Text(t) => t.len(),
                    ResourceBody::Bytes(b) => b.len(),
                }
        }
    }
}
