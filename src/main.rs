//! The `corral` command line: parse flags and environment, build the host, run a command.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use corral::config::{self, Limits};
use corral::registry::{load_dir, Catalog, LoadSettings, Registry, Watcher};
use corral::runtime::{CacheOutcome, CallContext, EngineSettings, Runtime, RuntimeSettings, Silent};
use corral::server::{self, Host, ServerOptions, ToolExecutor};
use corral::tasks::{Durability, Engine, EngineSettings as TaskSettings, Runners, SqliteStore};
use corral::transport;

#[derive(Parser)]
#[command(name = "corral", version, about = "Serve WebAssembly component plugins as MCP tools, sandboxed and time-limited.")]
#[command(long_about = "Serve WebAssembly component plugins as MCP tools, sandboxed and time-limited.\n\n\
Each *.wasm file in the plugin directory is a component implementing the corral:plugin WIT world\n\
(wit/plugin.wit). A NAME.toml beside NAME.wasm may set [limits] (timeout, task-timeout, fuel,\n\
memory, max-concurrency) and [permissions] (dirs, env, network). Every call runs in a fresh\n\
instance under those limits, with nothing but what the manifest grants.\n\n\
Every flag can also be set through the environment variable named in its help.")]
struct Cli {
    /// Host log verbosity on stderr: error, warn, info, debug or trace (RUST_LOG overrides it).
    #[arg(long, global = true, env = "CORRAL_LOG_LEVEL", default_value = "info")]
    log_level: String,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the plugins' tools over MCP on stdin/stdout, or over HTTP with --http.
    Serve(ServeArgs),
    /// List the tools the plugins offer, with their task policy and limits.
    Tools(ToolsArgs),
    /// Call one tool locally and print its result; exits 1 when the tool reports an error.
    Call(CallArgs),
    /// Precompile every plugin into the compile cache, so the next start maps instead of compiling.
    Compile(CompileArgs),
    /// Show a plugin's contract version, imports, tools and whether the host would serve it;
    /// exits 1 when it would refuse it.
    Inspect(corral::cli::inspect::InspectArgs),
    /// Create a plugin project (Rust, JavaScript, Python or C) that builds on the first try.
    New(corral::cli::new::NewArgs),
    /// Fetch a plugin from an OCI registry, verify its digests and signature, and pin it in
    /// the plugin directory's corral.lock.
    Pull(corral::cli::pull::PullArgs),
    /// Publish a component (and its manifest) to an OCI registry, optionally signed with a cosign key.
    Publish(corral::cli::publish::PublishArgs),
}

#[derive(Args)]
struct HostArgs {
    /// Directory of plugins (*.wasm, with optional NAME.toml manifests).
    #[arg(long, env = "CORRAL_PLUGINS", value_name = "DIR")]
    plugins: PathBuf,
    /// Default wall-clock limit per call, e.g. 30s or 500ms.
    #[arg(long, env = "CORRAL_TIMEOUT", default_value = "30s", value_parser = config::parse_duration)]
    timeout: Duration,
    /// Default wall-clock limit of a call run as a task.
    #[arg(long, env = "CORRAL_TASK_TIMEOUT", default_value = "10m", value_parser = config::parse_duration)]
    task_timeout: Duration,
    /// Default fuel per call (about one unit per WebAssembly instruction).
    #[arg(long, env = "CORRAL_FUEL", default_value_t = Limits::default().fuel)]
    fuel: u64,
    /// Default memory cap per instance, e.g. 64MiB.
    #[arg(long, env = "CORRAL_MEMORY", default_value = "64MiB", value_parser = config::parse_size)]
    memory: u64,
    /// Default number of calls of one plugin that may run at once; more wait their turn.
    #[arg(long, env = "CORRAL_MAX_CONCURRENCY", default_value_t = Limits::default().max_concurrency)]
    max_concurrency: usize,
    /// The most memory any manifest may grant one instance.
    #[arg(long, env = "CORRAL_MEMORY_CEILING", default_value = "1GiB", value_parser = config::parse_size)]
    memory_ceiling: u64,
    /// Instances that may exist at once across all plugins.
    #[arg(long, env = "CORRAL_MAX_INSTANCES", default_value_t = EngineSettings::default().max_instances)]
    max_instances: u32,
    /// Epoch tick: how quickly a deadline or a cancellation stops a running guest.
    #[arg(long, env = "CORRAL_EPOCH_TICK", default_value = "1ms", value_parser = config::parse_duration)]
    epoch_tick: Duration,
    /// Largest tool result passed to a client, e.g. 16MiB.
    #[arg(long, env = "CORRAL_MAX_OUTPUT", default_value = "16MiB", value_parser = config::parse_size)]
    max_output: u64,
    /// Where precompiled plugins are kept, keyed by content and engine configuration.
    /// No plugin may be granted write access to it.
    /// [default: a per-user cache directory, e.g. ~/.cache/corral]
    #[arg(long, env = "CORRAL_CACHE_DIR", value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile every plugin at every start instead of using the compile cache.
    #[arg(long, env = "CORRAL_NO_CACHE", conflicts_with = "cache_dir")]
    no_cache: bool,
}

impl HostArgs {
    fn cache_dir(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.no_cache {
            return Ok(None);
        }
        match &self.cache_dir {
            Some(dir) => Ok(Some(dir.clone())),
            // The default is a convenience: where it cannot be made, corral compiles every time.
            None => match dirs::cache_dir().map(|base| base.join("corral")) {
                Some(dir) => match std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(&dir) {
                    Ok(()) => Ok(Some(dir)),
                    Err(e) => {
                        tracing::warn!("no compile cache: cannot create {}: {e} (pass --cache-dir DIR)", dir.display());
                        Ok(None)
                    }
                },
                None => {
                    tracing::warn!("no compile cache: no per-user cache directory is known here (pass --cache-dir DIR)");
                    Ok(None)
                }
            },
        }
    }
}

#[derive(Args)]
struct TaskArgs {
    /// Task database (SQLite). `:memory:` keeps tasks only while the host runs.
    /// [default: a per-user data directory, e.g. ~/.local/share/corral/tasks.db]
    #[arg(long, env = "CORRAL_DB", value_name = "PATH")]
    db: Option<PathBuf>,
    /// What a stored task survives: `process` (the host being killed) or `power` (power loss;
    /// every commit waits for fsync).
    #[arg(long, env = "CORRAL_DB_SYNC", default_value = "process", value_parser = ["process", "power"])]
    db_sync: String,
    /// Tasks running at once.
    #[arg(long, env = "CORRAL_MAX_RUNNING", default_value_t = TaskSettings::default().max_running)]
    max_running: usize,
    /// Tasks waiting for a worker; more are refused as overloaded.
    #[arg(long, env = "CORRAL_MAX_QUEUED", default_value_t = TaskSettings::default().max_queued)]
    max_queued: usize,
    /// Unfinished tasks one client (a session, or a token's holder) may have at once.
    #[arg(long, env = "CORRAL_MAX_TASKS_PER_CLIENT", default_value_t = TaskSettings::default().max_per_owner)]
    max_tasks_per_client: usize,
    /// How long a task and its result are kept when the client asks for no TTL.
    #[arg(long, env = "CORRAL_TASK_TTL", default_value = "1h", value_parser = config::parse_duration)]
    task_ttl: Duration,
    /// The longest TTL a client may ask for.
    #[arg(long, env = "CORRAL_TASK_MAX_TTL", default_value = "24h", value_parser = config::parse_duration)]
    task_max_ttl: Duration,
    /// Poll interval suggested to clients.
    #[arg(long, env = "CORRAL_TASK_POLL_INTERVAL", default_value = "1s", value_parser = config::parse_duration)]
    task_poll_interval: Duration,
    /// How often expired tasks are deleted.
    #[arg(long, env = "CORRAL_TASK_REAP_EVERY", default_value = "30s", value_parser = config::parse_duration)]
    task_reap_every: Duration,
}

impl TaskArgs {
    fn settings(&self) -> TaskSettings {
        TaskSettings {
            max_running: self.max_running.max(1),
            max_queued: self.max_queued,
            max_per_owner: self.max_tasks_per_client.max(1),
            default_ttl: self.task_ttl.min(self.task_max_ttl),
            max_ttl: self.task_max_ttl,
            poll_interval: self.task_poll_interval,
            reap_every: self.task_reap_every,
        }
    }

    fn db_path(&self) -> anyhow::Result<PathBuf> {
        match &self.db {
            Some(path) => Ok(path.clone()),
            None => {
                let base = dirs::data_local_dir().ok_or_else(|| anyhow::anyhow!("no per-user data directory is known here: pass --db PATH"))?;
                Ok(base.join("corral").join("tasks.db"))
            }
        }
    }
}

#[derive(Args)]
struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080.
    /// Binding anything but a loopback address is explicit and should come with --auth-tokens-file.
    #[arg(long, env = "CORRAL_HTTP", value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Extra Host names to accept besides localhost, 127.0.0.1 and [::1] (DNS rebinding protection).
    #[arg(long = "allowed-host", env = "CORRAL_ALLOWED_HOSTS", value_delimiter = ',', value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Extra browser origins to accept besides loopback ones, e.g. https://app.example.
    #[arg(long = "allowed-origin", env = "CORRAL_ALLOWED_ORIGINS", value_delimiter = ',', value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Bearer tokens, one per line as `NAME TOKEN` (or just `TOKEN`); turns authentication on.
    /// Tasks then belong to the token's NAME.
    #[arg(long, env = "CORRAL_AUTH_TOKENS_FILE", value_name = "PATH")]
    auth_tokens_file: Option<PathBuf>,
    /// Largest request body, e.g. 4MiB; bigger ones get 413.
    #[arg(long, env = "CORRAL_MAX_BODY", default_value = "4MiB", value_parser = config::parse_size)]
    max_body: u64,
    /// A session unused this long is ended.
    #[arg(long, env = "CORRAL_SESSION_IDLE", default_value = "30m", value_parser = config::parse_duration)]
    session_idle: Duration,
    /// Sessions open at once.
    #[arg(long, env = "CORRAL_MAX_SESSIONS", default_value_t = 1000)]
    max_sessions: usize,
    /// Server-initiated messages kept per session for clients that reconnect with Last-Event-ID.
    #[arg(long, env = "CORRAL_EVENT_BUFFER", default_value_t = 1024)]
    event_buffer: usize,
}

impl HttpArgs {
    fn settings(&self, addr: std::net::SocketAddr) -> anyhow::Result<transport::http::HttpSettings> {
        let mut tokens = Vec::new();
        if let Some(path) = &self.auth_tokens_file {
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--auth-tokens-file {}: {e}", path.display()))?;
            tokens = transport::http::parse_tokens(&text, &path.display().to_string());
            if tokens.is_empty() {
                anyhow::bail!("--auth-tokens-file {} holds no token", path.display());
            }
        }
        Ok(transport::http::HttpSettings {
            addr,
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            tokens,
            max_body: usize::try_from(self.max_body).unwrap_or(usize::MAX),
            session_idle: self.session_idle,
            event_buffer: self.event_buffer.max(1),
            max_sessions: self.max_sessions.max(1),
        })
    }
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    tasks: TaskArgs,
    #[command(flatten)]
    http: HttpArgs,
    /// Tools per tools/list page.
    #[arg(long, env = "CORRAL_PAGE_SIZE", default_value_t = ServerOptions::default().page_size, value_parser = clap::value_parser!(usize))]
    page_size: usize,
    /// Reload a plugin when its .wasm or manifest changes, and tell clients the tool list
    /// changed. Calls already running finish on the version they started on.
    #[arg(long, env = "CORRAL_WATCH")]
    watch: bool,
}

#[derive(Args)]
struct ToolsArgs {
    #[command(flatten)]
    host: HostArgs,
    /// Print JSON (tools, limits and refused plugins) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CompileArgs {
    #[command(flatten)]
    host: HostArgs,
}

#[derive(Args)]
struct CallArgs {
    #[command(flatten)]
    host: HostArgs,
    /// The tool to call.
    tool: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    arguments: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log_level);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("corral-worker").build().expect("starting the tokio runtime");
    match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("corral: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_target(false)
        .init();
}

async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Inspect(args) => corral::cli::inspect::run(args).await,
        Command::New(args) => corral::cli::new::run(args),
        Command::Pull(args) => corral::cli::pull::run(args).await,
        Command::Publish(args) => corral::cli::publish::run(args).await,
        Command::Serve(args) => {
            let durability = if args.tasks.db_sync == "power" { Durability::Power } else { Durability::Process };
            let db = args.tasks.db_path()?;
            let options = ServerOptions { page_size: args.page_size.max(1), list_changed: args.watch };
            let (host, load) = build_host(&args.host, options, &db, durability, args.tasks.settings()).await?;
            tracing::info!("tasks are kept in {}", db.display());
            server::announce_changes(&host);
            let _watcher: Option<Watcher> = match args.watch {
                true => Some(corral::registry::watch(&args.host.plugins, host.registry.clone(), host.runtime.clone(), load)?),
                false => None,
            };
            match args.http.http {
                Some(addr) => transport::http::serve(host, args.http.settings(addr)?).await?,
                None => transport::stdio::serve(host).await?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools(args) => {
            let host = build_local_host(&args.host).await?;
            let catalog = host.registry.snapshot();
            if args.json {
                println!("{}", serde_json::to_string_pretty(&tools_json(&catalog))?);
            } else {
                print_tools_table(&catalog)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Call(args) => {
            let arguments: serde_json::Value = serde_json::from_str(&args.arguments).map_err(|e| anyhow::anyhow!("ARGUMENTS is not JSON: {e}"))?;
            let host = build_local_host(&args.host).await?;
            let result = server::call_tool_once(&host, &args.tool, arguments, |entry| CallContext::new(entry.plugin.limits.clone(), Arc::new(Silent)))
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            println!("{}", serde_json::to_string_pretty(&result)?);
            Ok(if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Compile(args) => compile_all(&args.host),
    }
}

/// `corral compile`: fills the compile cache; exits 1 if any plugin is not a valid component.
fn compile_all(args: &HostArgs) -> anyhow::Result<ExitCode> {
    let Some(cache_dir) = args.cache_dir()? else { anyhow::bail!("corral compile fills the compile cache: it cannot run with --no-cache") };
    let runtime = Runtime::new(runtime_settings(args, Some(cache_dir)))?;
    let files = corral::registry::plugin_files(&args.plugins)?;
    let mut failed = 0;
    for file in &files {
        let started = std::time::Instant::now();
        let bytes = std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let name = file.file_stem().unwrap_or_default().to_string_lossy();
        let status = match runtime.compile_cached(&name, &bytes) {
            Ok((_, Some(CacheOutcome::Hit))) => "already cached".to_owned(),
            Ok((_, Some(CacheOutcome::Stored))) => "compiled and cached".to_owned(),
            Ok((_, Some(CacheOutcome::Replaced(why)))) => format!("compiled and cached (replaced an entry: {why})"),
            Ok((_, Some(CacheOutcome::NotStored(why)))) => format!("compiled, NOT cached: {why}"),
            Ok((_, None)) => unreachable!("the runtime has a cache"),
            Err(e) => {
                failed += 1;
                format!("refused: {e:?}")
            }
        };
        println!("{}: {status} in {:.1?}", file.display(), started.elapsed());
    }
    if let Some(dir) = runtime.cache_dir() {
        println!("cache: {}", dir.display());
    }
    Ok(if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A host for one local command: its tasks, if any, live in memory.
async fn build_local_host(args: &HostArgs) -> anyhow::Result<Arc<Host>> {
    Ok(build_host(args, ServerOptions::default(), std::path::Path::new(":memory:"), Durability::Process, TaskSettings::default()).await?.0)
}

fn runtime_settings(args: &HostArgs, cache_dir: Option<PathBuf>) -> RuntimeSettings {
    RuntimeSettings {
        engine: EngineSettings { memory_ceiling: args.memory_ceiling, max_instances: args.max_instances.max(1) },
        epoch_tick: args.epoch_tick,
        max_output: args.max_output,
        cache_dir,
    }
}

async fn build_host(
    args: &HostArgs,
    options: ServerOptions,
    db: &std::path::Path,
    durability: Durability,
    tasks: TaskSettings,
) -> anyhow::Result<(Arc<Host>, Arc<LoadSettings>)> {
    let defaults = Limits {
        timeout: args.timeout,
        task_timeout: args.task_timeout,
        fuel: args.fuel.max(1),
        memory: args.memory,
        max_concurrency: args.max_concurrency.max(1),
    };
    if defaults.memory > args.memory_ceiling {
        anyhow::bail!("--memory {} is above --memory-ceiling {}", config::display_size(defaults.memory), config::display_size(args.memory_ceiling));
    }
    let cache_dir = args.cache_dir()?;
    let runtime = Runtime::new(runtime_settings(args, cache_dir.clone()))?;
    // The cache exists now (the runtime created it), so it can be canonicalized.
    let protected = cache_dir.iter().filter_map(|d| d.canonicalize().ok()).collect();
    let load = Arc::new(LoadSettings { defaults, memory_ceiling: args.memory_ceiling, protected });
    let catalog = load_dir(&args.plugins, &runtime, &load).await?;
    if catalog.plugins.is_empty() {
        tracing::warn!("no plugin loaded from {}", args.plugins.display());
    }
    let registry = Arc::new(Registry::new(catalog));
    let runtime = Arc::new(runtime);
    let store = Arc::new(
        SqliteStore::open(db, durability)
            .map_err(|e| anyhow::anyhow!("{e:#} (choose another file with --db PATH, or --db :memory: to keep tasks in memory)"))?,
    );
    let metrics = Arc::new(server::Metrics::default());
    let executor = Arc::new(ToolExecutor { registry: registry.clone(), runtime: runtime.clone(), metrics: metrics.clone() });
    let runners = Runners::register(db).map_err(|e| anyhow::anyhow!("task store {}: cannot register this host: {e}", db.display()))?;
    let engine = Engine::start(store, runners, tasks, executor, runtime.waker())?;
    Ok((Arc::new(Host { registry, runtime, engine, options, metrics, sessions: Default::default() }), load))
}

fn tools_json(catalog: &Catalog) -> serde_json::Value {
    let plugins: Vec<serde_json::Value> = catalog
        .plugins
        .iter()
        .map(|p| {
            let tools: Vec<_> = catalog.tools.values().filter(|t| t.plugin.name == p.name).map(tool_json).collect();
            let resources: Vec<_> = catalog.resources.values().filter(|r| r.plugin.name == p.name).map(|r| &r.resource.uri).collect();
            let templates: Vec<_> = catalog.templates.values().filter(|r| r.plugin.name == p.name).map(|r| &r.template.uri_template).collect();
            let prompts: Vec<_> = catalog.prompts.values().filter(|r| r.plugin.name == p.name).map(|r| &r.prompt.name).collect();
            serde_json::json!({
                "name": p.name,
                "file": p.file,
                "contract": p.code.contract().as_str(),
                "resources": resources,
                "resourceTemplates": templates,
                "prompts": prompts,
                "limits": {
                    "timeoutMs": p.limits.timeout.as_millis() as u64,
                    "fuel": p.limits.fuel,
                    "memoryBytes": p.limits.memory,
                    "maxConcurrency": p.limits.max_concurrency,
                },
                "permissions": p.code.permissions().to_json(),
                "tools": tools,
            })
        })
        .collect();
    serde_json::json!({ "plugins": plugins, "refused": catalog.refused })
}

/// A tool as listed, plus the plugin's own name for it when a namespace changed it.
fn tool_json(t: &Arc<corral::registry::ToolEntry>) -> serde_json::Value {
    let mut value = serde_json::to_value(server::list_entry(t)).unwrap_or_default();
    if t.own_name != t.name {
        value["pluginToolName"] = serde_json::Value::String(t.own_name.clone());
    }
    value
}

fn print_tools_table(catalog: &Catalog) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let rows: Vec<[String; 7]> = catalog
        .tools
        .values()
        .map(|t| {
            let l = &t.plugin.limits;
            [
                // A namespaced tool shows the plugin's own name too.
                if t.own_name == t.name { t.name.clone() } else { format!("{} ({})", t.name, t.own_name) },
                t.plugin.name.clone(),
                server::list_entry(t).execution.task_support.as_str().to_owned(),
                humantime::format_duration(l.timeout).to_string(),
                l.fuel.to_string(),
                config::display_size(l.memory),
                l.max_concurrency.to_string(),
            ]
        })
        .collect();
    let header = ["TOOL", "PLUGIN", "TASKS", "TIMEOUT", "FUEL", "MEMORY", "CONCURRENCY"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    for p in &catalog.plugins {
        writeln!(out, "plugin {}: {}", p.name, p.code.permissions().summary())?;
    }
    for r in &catalog.refused {
        writeln!(out, "refused {}: {} ({})", r.file.display(), r.message, serde_json::to_value(r.kind).unwrap().as_str().unwrap_or(""))?;
    }
    Ok(())
}
