//! Every flag of every subcommand, parsed and validated in one place.
//!
//! As in ripgrep's `flags/`, a flag is checked where it is parsed: a count that must be positive
//! has a parser that refuses zero, so clap names the flag in the error and nothing downstream
//! clamps or reinterprets a value. Defaults come from [`config::defaults`] (durations and sizes)
//! or from the `Default` impl of the settings they fill (counts), never from a second literal.
//! Turning these arguments into the host's settings is a separate step, in [`super::host`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::audit::Destination;
use crate::config::{self, defaults, Limits};
use crate::identity::{self, IssuerUrl};
use crate::oci::client::Access;
use crate::runtime::EngineSettings;
use crate::server::{ServerOptions, StateSecret};
use crate::tasks::{Durability, TaskCursor, TaskSettings, TaskStatus, MAX_PAGE};
use crate::transport::http::{ConnectionSettings, StreamSettings};

/// The `corral` command line.
#[derive(Parser)]
#[command(name = "corral", version, about = "Serve WebAssembly component plugins as MCP tools, sandboxed and time-limited.")]
#[command(long_about = "Serve WebAssembly component plugins as MCP tools, sandboxed and time-limited.\n\n\
Each *.wasm file in the plugin directory is a component implementing the corral:plugin WIT world\n\
(wit/plugin.wit). A NAME.toml beside NAME.wasm may set [limits] (timeout, task-timeout, fuel,\n\
memory, max-concurrency) and [permissions] (dirs, env, network). Every call runs in a fresh\n\
instance under those limits, with nothing but what the manifest grants.\n\n\
Every flag can also be set through the environment variable named in its help.")]
pub struct Cli {
    /// Host log verbosity on stderr: error, warn, info, debug or trace (RUST_LOG overrides it).
    #[arg(long, global = true, env = "CORRAL_LOG_LEVEL", default_value = "info")]
    pub log_level: String,

    /// Host log format on stderr: `text` for people, `json` for log collectors (one object a line).
    #[arg(long, global = true, env = "CORRAL_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

pub use crate::telemetry::LogFormat;

/// The subcommands.
#[derive(Subcommand)]
#[allow(clippy::large_enum_variant, reason = "parsed once per process; boxing `serve`'s flags would buy nothing")]
pub enum Command {
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
    Inspect(InspectArgs),
    /// Create a plugin project (Rust, JavaScript, Python or C) that builds on the first try.
    New(NewArgs),
    /// Fetch a plugin from an OCI registry, verify its digests and signature, and pin it in
    /// the plugin directory's corral.lock.
    Pull(PullArgs),
    /// Publish a component (and its manifest) to an OCI registry, optionally signed with a cosign key.
    Publish(PublishArgs),
    /// Look after the tasks in a task store (a SQLite file or PostgreSQL), beside the hosts that
    /// run them: list, show, print results, cancel, purge, watch.
    Tasks(TasksArgs),
    /// Look after the caller secrets in a task store: set one (from standard input), list names
    /// and dates, delete one, or encrypt them all again under a new key.
    Secrets(super::secrets::SecretsArgs),
}

/// The flags every command that loads the plugin directory shares.
#[derive(Args)]
pub struct HostArgs {
    /// Directory of plugins (*.wasm, with optional NAME.toml manifests).
    #[arg(long, env = "CORRAL_PLUGINS", value_name = "DIR")]
    pub plugins: PathBuf,
    /// Default wall-clock limit per call, e.g. 30s or 500ms.
    #[arg(long, env = "CORRAL_TIMEOUT", default_value = defaults::TIMEOUT, value_parser = config::parse_duration)]
    pub timeout: Duration,
    /// Default wall-clock limit of a call run as a task.
    #[arg(long, env = "CORRAL_TASK_TIMEOUT", default_value = defaults::TASK_TIMEOUT, value_parser = config::parse_duration)]
    pub task_timeout: Duration,
    /// Default fuel per call (about one unit per WebAssembly instruction).
    #[arg(long, env = "CORRAL_FUEL", default_value_t = Limits::default().fuel, value_parser = config::parse_positive::<u64>)]
    pub fuel: u64,
    /// Default memory cap per instance, e.g. 64MiB.
    #[arg(long, env = "CORRAL_MEMORY", default_value = defaults::MEMORY, value_parser = config::parse_size)]
    pub memory: u64,
    /// Default number of calls of one plugin that may run at once; more wait their turn.
    #[arg(long, env = "CORRAL_MAX_CONCURRENCY", default_value_t = Limits::default().max_concurrency, value_parser = config::parse_positive::<usize>)]
    pub max_concurrency: usize,
    /// The most memory any manifest may grant one instance.
    #[arg(long, env = "CORRAL_MEMORY_CEILING", default_value = defaults::MEMORY_CEILING, value_parser = config::parse_size)]
    pub memory_ceiling: u64,
    /// Instances that may exist at once across all plugins.
    #[arg(long, env = "CORRAL_MAX_INSTANCES", default_value_t = EngineSettings::default().max_instances, value_parser = config::parse_positive::<u32>)]
    pub max_instances: u32,
    /// Epoch tick: how quickly a deadline or a cancellation stops a running guest.
    #[arg(long, env = "CORRAL_EPOCH_TICK", default_value = defaults::EPOCH_TICK, value_parser = config::parse_duration)]
    pub epoch_tick: Duration,
    /// How long a request that needs the plugins (`tools/list`, `tools/call`, ...) waits for
    /// them while they still load at start, e.g. 30s; `initialize` and `ping` never wait.
    #[arg(long, env = "CORRAL_LOAD_WAIT", default_value = "30s", value_parser = config::parse_duration)]
    pub load_wait: Duration,
    /// Largest tool result passed to a client, e.g. 16MiB.
    #[arg(long, env = "CORRAL_MAX_OUTPUT", default_value = defaults::MAX_OUTPUT, value_parser = config::parse_size)]
    pub max_output: u64,
    /// Largest tool result sent inline, e.g. 256KiB; a larger one (up to --max-output) is kept
    /// and answered with its beginning and a corral://results/… link to read in pages.
    #[arg(long, env = "CORRAL_INLINE_RESULT_LIMIT", default_value = defaults::INLINE_RESULT, value_parser = config::parse_size)]
    pub inline_result_limit: u64,
    /// Where precompiled plugins are kept, keyed by content and engine configuration.
    /// No plugin may be granted write access to it.
    /// [default: a per-user cache directory, e.g. ~/.cache/corral]
    #[arg(long, env = "CORRAL_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every plugin at every start instead of using the compile cache.
    #[arg(long, env = "CORRAL_NO_CACHE", conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

/// What a stored task survives (`--db-sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DbSync {
    /// The host being killed: commits reach the OS, not necessarily the disk.
    Process,
    /// Power loss: every commit waits for fsync.
    Power,
}

impl From<DbSync> for Durability {
    fn from(sync: DbSync) -> Durability {
        match sync {
            DbSync::Process => Durability::Process,
            DbSync::Power => Durability::Power,
        }
    }
}

/// The task store's and the task engine's flags.
#[derive(Args)]
pub struct TaskArgs {
    /// Task database: a SQLite file (`:memory:` keeps tasks only while the host runs), or
    /// `postgres://user:password@host/db` (also `postgresql://`; TLS as `?sslmode=` says) for
    /// several replicas sharing one PostgreSQL database.
    /// [default: a per-user data directory, e.g. ~/.local/share/corral/tasks.db]
    #[arg(long, env = "CORRAL_DB", value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// What a stored task survives: `process` (the host being killed) or `power` (power loss;
    /// every commit waits for fsync).
    #[arg(long, env = "CORRAL_DB_SYNC", value_enum, default_value_t = DbSync::Process)]
    pub db_sync: DbSync,
    /// Tasks running at once.
    #[arg(long, env = "CORRAL_MAX_RUNNING", default_value_t = TaskSettings::default().max_running, value_parser = config::parse_positive::<usize>)]
    pub max_running: usize,
    /// Tasks waiting for a worker; more are refused as overloaded.
    #[arg(long, env = "CORRAL_MAX_QUEUED", default_value_t = TaskSettings::default().max_queued)]
    pub max_queued: usize,
    /// Unfinished tasks one client (a session, or a token's holder) may have at once.
    #[arg(long, env = "CORRAL_MAX_TASKS_PER_CLIENT", default_value_t = TaskSettings::default().max_per_owner, value_parser = config::parse_positive::<usize>)]
    pub max_tasks_per_client: usize,
    /// Most bytes of large results kept by reference for one client (a session, or a token's
    /// holder), e.g. 256MiB; past it a large result is answered with a `result-not-kept` error.
    #[arg(long, env = "CORRAL_MAX_RESULT_BYTES_PER_CLIENT", default_value = defaults::MAX_RESULT_BYTES_PER_CLIENT, value_parser = config::parse_size)]
    pub max_result_bytes_per_client: u64,
    /// Most bytes of large results kept by reference for all clients together (across replicas
    /// sharing a PostgreSQL --db), e.g. 2GiB.
    #[arg(long, env = "CORRAL_MAX_RESULT_BYTES", default_value = defaults::MAX_RESULT_BYTES, value_parser = config::parse_size)]
    pub max_result_bytes: u64,
    /// How long a task and its result are kept when the client asks for no TTL.
    #[arg(long, env = "CORRAL_TASK_TTL", default_value = defaults::TASK_TTL, value_parser = config::parse_duration)]
    pub task_ttl: Duration,
    /// The longest TTL a client may ask for.
    #[arg(long, env = "CORRAL_TASK_MAX_TTL", default_value = defaults::TASK_MAX_TTL, value_parser = config::parse_duration)]
    pub task_max_ttl: Duration,
    /// Poll interval suggested to clients.
    #[arg(long, env = "CORRAL_TASK_POLL_INTERVAL", default_value = defaults::TASK_POLL_INTERVAL, value_parser = config::parse_duration)]
    pub task_poll_interval: Duration,
    /// How often expired tasks are deleted.
    #[arg(long, env = "CORRAL_TASK_REAP_EVERY", default_value = defaults::TASK_REAP_EVERY, value_parser = config::parse_duration)]
    pub task_reap_every: Duration,
    /// With a PostgreSQL --db: a replica whose heartbeat is older than this is dead, and a live
    /// one claims its unfinished tasks.
    #[arg(long, env = "CORRAL_HOST_EXPIRY", default_value = "15s", value_parser = config::parse_duration)]
    pub host_expiry: Duration,
}

/// The Streamable HTTP transport's flags.
#[derive(Args)]
pub struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080.
    /// Binding anything but a loopback address is explicit and should come with --auth-tokens-file.
    #[arg(long, env = "CORRAL_HTTP", value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Extra Host names to accept besides localhost, 127.0.0.1 and [::1] (DNS rebinding protection).
    #[arg(long = "allowed-host", env = "CORRAL_ALLOWED_HOSTS", value_delimiter = ',', value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept besides loopback ones, e.g. https://app.example.
    #[arg(long = "allowed-origin", env = "CORRAL_ALLOWED_ORIGINS", value_delimiter = ',', value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Bearer tokens, one per line as `NAME TOKEN` (or just `TOKEN`); turns authentication on.
    /// Tasks then belong to the token's NAME.
    #[arg(long, env = "CORRAL_AUTH_TOKENS_FILE", value_name = "PATH")]
    pub auth_tokens_file: Option<PathBuf>,
    /// The URL clients reach this host at, e.g. https://mcp.example.com (behind a proxy: the
    /// proxy's). The MCP endpoint is this + /mcp; with --oauth-issuer it is the protected
    /// resource the metadata names and tokens must be issued for.
    #[arg(long, env = "CORRAL_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// Trust OAuth access tokens (JWT, RFC 9068) from this authorization server, by its issuer
    /// identifier (https://, or http:// on a loopback address); repeatable. Turns the OAuth
    /// resource server on: tasks then belong to the token's issuer and subject. Needs --public-url.
    #[arg(long = "oauth-issuer", env = "CORRAL_OAUTH_ISSUERS", value_delimiter = ',', value_name = "URL", value_parser = parse_issuer)]
    pub oauth_issuers: Vec<IssuerUrl>,
    /// The audience every access token must carry in `aud` (default: --public-url + /mcp, the
    /// RFC 8707 resource clients ask for).
    #[arg(long, env = "CORRAL_OAUTH_AUDIENCE", value_name = "URI", value_parser = parse_audience)]
    pub oauth_audience: Option<String>,
    /// Also accept this audience from one issuer, as ISSUER=AUDIENCE (e.g. a client id, or
    /// Entra ID's api://… name, for servers that cannot put the resource in `aud`); repeatable.
    #[arg(long = "oauth-extra-audience", env = "CORRAL_OAUTH_EXTRA_AUDIENCES", value_delimiter = ',', value_name = "ISSUER=AUDIENCE", value_parser = parse_extra_audience)]
    pub oauth_extra_audiences: Vec<(IssuerUrl, String)>,
    /// Accept access tokens typed `JWT` (or untyped) from this issuer besides RFC 9068's
    /// `at+jwt` (Entra ID, Keycloak); repeatable.
    #[arg(long = "oauth-relax-typ", env = "CORRAL_OAUTH_RELAX_TYP", value_delimiter = ',', value_name = "ISSUER", value_parser = parse_issuer)]
    pub oauth_relax_typ: Vec<IssuerUrl>,
    /// A scope every MCP request's access token must grant (else 403 insufficient_scope);
    /// repeatable; advertised as scopes_supported. Default: none, any valid token for this host.
    #[arg(long = "oauth-scope", env = "CORRAL_OAUTH_SCOPES", value_delimiter = ',', value_name = "SCOPE", value_parser = parse_scope)]
    pub oauth_scopes: Vec<String>,
    /// Clock skew allowed on a token's `exp` and `nbf` (at most 5m).
    #[arg(long, env = "CORRAL_OAUTH_LEEWAY", default_value = identity::defaults::LEEWAY, value_parser = parse_leeway)]
    pub oauth_leeway: Duration,
    /// How long fetching an issuer's metadata or signing keys may take.
    #[arg(long, env = "CORRAL_OAUTH_FETCH_TIMEOUT", default_value = identity::defaults::FETCH_TIMEOUT, value_parser = config::parse_duration)]
    pub oauth_fetch_timeout: Duration,
    /// The least time between two fetches of an issuer's keys that tokens with unknown key ids
    /// trigger (a rotated key is found on its first token; made-up ids cannot flood the issuer).
    #[arg(long, env = "CORRAL_OAUTH_REFETCH_COOLDOWN", default_value = identity::defaults::REFETCH_COOLDOWN, value_parser = config::parse_duration)]
    pub oauth_refetch_cooldown: Duration,
    /// Check opaque (non-JWT) access tokens by asking their issuer (RFC 7662 introspection), as
    /// this client: ISSUER=CLIENT_ID, the issuer one of --oauth-issuer. Needs
    /// --oauth-introspection-secret-file.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_CLIENT", value_name = "ISSUER=CLIENT_ID", value_parser = parse_introspection_client)]
    pub oauth_introspection_client: Option<(IssuerUrl, String)>,
    /// A file holding the introspection client's secret, alone on one line (read at start; never
    /// shown or logged).
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_SECRET_FILE", value_name = "PATH")]
    pub oauth_introspection_secret_file: Option<PathBuf>,
    /// The introspection endpoint (https://, or http:// on a loopback address). Default: the
    /// `introspection_endpoint` of the issuer's metadata.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_ENDPOINT", value_name = "URL", value_parser = parse_endpoint)]
    pub oauth_introspection_endpoint: Option<String>,
    /// How long an introspection answer is kept at most (less when the token expires sooner):
    /// also how long a revoked token may still be accepted.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_MAX_AGE", value_name = "DURATION", default_value = identity::defaults::INTROSPECTION_MAX_AGE, value_parser = config::parse_duration)]
    pub oauth_introspection_max_age: Duration,
    /// Introspection answers kept at once (the oldest goes first when full).
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_CACHE", value_name = "ENTRIES", default_value_t = identity::defaults::INTROSPECTION_CACHE, value_parser = config::parse_positive::<usize>)]
    pub oauth_introspection_cache: usize,
    /// Largest request body (an HTTP body or a stdio line), e.g. 4MiB; bigger ones get 413 (over
    /// stdio, an error answer).
    #[arg(long, env = "CORRAL_MAX_BODY", default_value = "4MiB", value_parser = config::parse_size)]
    pub max_body: u64,
    /// A session unused this long is ended.
    #[arg(long, env = "CORRAL_SESSION_IDLE", default_value = "30m", value_parser = config::parse_duration)]
    pub session_idle: Duration,
    /// Sessions open at once.
    #[arg(long, env = "CORRAL_MAX_SESSIONS", default_value_t = 1000, value_parser = config::parse_positive::<usize>)]
    pub max_sessions: usize,
    /// Server-initiated messages kept per session for clients that reconnect with Last-Event-ID.
    #[arg(long, env = "CORRAL_EVENT_BUFFER", default_value_t = 1024, value_parser = config::parse_positive::<usize>)]
    pub event_buffer: usize,
    /// HTTP connections open at once (a quarter is kept for connections already serving a
    /// client); lowered to fit the open-file limit. Beyond it a connection gets 503 at once.
    #[arg(long, env = "CORRAL_MAX_CONNECTIONS", default_value_t = ConnectionSettings::default().max_connections, value_parser = config::parse_positive::<usize>)]
    pub max_connections: usize,
    /// How long a client gets to send a request's headers; slower ones are disconnected.
    #[arg(long, env = "CORRAL_HTTP_HEADER_TIMEOUT", default_value = "10s", value_parser = config::parse_duration)]
    pub http_header_timeout: Duration,
    /// How long a client gets to send a request's body; slower ones get 408.
    #[arg(long, env = "CORRAL_HTTP_BODY_TIMEOUT", default_value = "30s", value_parser = config::parse_duration)]
    pub http_body_timeout: Duration,
    /// A keep-alive connection with no request in progress for this long is closed.
    #[arg(long, env = "CORRAL_HTTP_IDLE_TIMEOUT", default_value = "60s", value_parser = config::parse_duration)]
    pub http_idle_timeout: Duration,
    /// Event streams (GET streams, 2026-07-28 listens) one client may hold open at once: an
    /// authenticated principal, or without authentication one address. Beyond it: 429.
    #[arg(long, env = "CORRAL_MAX_STREAMS_PER_CLIENT", default_value_t = StreamSettings::default().per_client, value_parser = config::parse_positive::<usize>)]
    pub max_streams_per_client: usize,
    /// An event stream open this long is ended; the client reconnects (with Last-Event-ID, or
    /// by listening again).
    #[arg(long, env = "CORRAL_MAX_STREAM_LIFETIME", default_value = "30m", value_parser = config::parse_duration)]
    pub max_stream_lifetime: Duration,
}

/// The admin console's flags.
#[derive(Args)]
pub struct AdminArgs {
    /// Serve the operator's web console and its JSON API at http://ADDR/, a listener apart from
    /// MCP's; a bare port means 127.0.0.1:PORT. Needs --admin-tokens-file or --admin-public-url
    /// (OAuth): there is no console without authentication. It speaks plain HTTP: reach it over
    /// a network only through TLS.
    #[arg(long, env = "CORRAL_ADMIN", value_name = "ADDR", value_parser = parse_admin_addr)]
    pub admin: Option<std::net::SocketAddr>,
    /// The console's tokens, one per line as `NAME TOKEN` (the format of --auth-tokens-file; use
    /// other tokens than MCP clients have). A person signs in with one; a script sends it as
    /// `Authorization: Bearer TOKEN`.
    #[arg(long, env = "CORRAL_ADMIN_TOKENS_FILE", value_name = "PATH", requires = "admin")]
    pub admin_tokens_file: Option<PathBuf>,
    /// The URL people reach the console at (behind a proxy: the proxy's). With --oauth-issuer,
    /// the console also takes OAuth access tokens from those issuers whose `aud` names this URL
    /// (its own audience: tokens issued for the MCP endpoint are refused there).
    #[arg(long, env = "CORRAL_ADMIN_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url, requires = "admin")]
    pub admin_public_url: Option<String>,
    /// The scope an OAuth access token must grant to use the console.
    #[arg(long, env = "CORRAL_ADMIN_OAUTH_SCOPE", value_name = "SCOPE", default_value = "corral:admin", value_parser = parse_scope)]
    pub admin_oauth_scope: String,
    /// A group or role an OAuth access token must also carry (`groups`, `roles`, Keycloak's
    /// realm roles) to use the console. Default: the scope alone decides.
    #[arg(long, env = "CORRAL_ADMIN_OAUTH_GROUP", value_name = "GROUP", requires = "admin_public_url")]
    pub admin_oauth_group: Option<String>,
}

/// `--admin`: `HOST:PORT`, or a bare port on the loopback address.
fn parse_admin_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| format!("`{text}` is neither a port nor an address like 127.0.0.1:9090 or [::1]:9090"))
}

/// `corral serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The plugin directory, limits and runtime.
    #[command(flatten)]
    pub host: HostArgs,
    /// The task store and engine.
    #[command(flatten)]
    pub tasks: TaskArgs,
    /// The HTTP transport (stdio when `--http` is absent).
    #[command(flatten)]
    pub http: HttpArgs,
    /// The operator's console.
    #[command(flatten)]
    pub admin: AdminArgs,
    /// The audit trail.
    #[command(flatten)]
    pub audit: AuditArgs,
    /// Caller and host secrets.
    #[command(flatten)]
    pub secrets: super::secrets::SecretsFlags,
    /// Tools per tools/list page.
    #[arg(long, env = "CORRAL_PAGE_SIZE", default_value_t = ServerOptions::default().page_size, value_parser = config::parse_positive::<usize>)]
    pub page_size: usize,
    /// Reload a plugin when its .wasm or manifest changes, and tell clients the tool list
    /// changed. Calls already running finish on the version they started on.
    #[arg(long, env = "CORRAL_WATCH")]
    pub watch: bool,
    /// A policy file (TOML): which principals may list and use which plugins, tools, resources
    /// and prompts, who may steer every task, and each principal's call rate and task cap.
    /// Without one everything is allowed; with one, what no rule allows is denied. The file is
    /// watched: a change applies at once, and a broken one leaves the last good policy in force.
    #[arg(long, env = "CORRAL_POLICY", value_name = "FILE", value_parser = parse_policy_file)]
    pub policy: Option<PolicyFile>,
    /// How long an `optional` tool called by a 2026-07-28 client that declares the tasks
    /// extension runs inline; past it, the running call becomes a task (and gets the task's
    /// timeout). A plugin's manifest may set its own (`[limits] task-after`).
    #[arg(long, env = "CORRAL_TASK_AFTER", default_value = "1s", value_parser = config::parse_duration)]
    pub task_after: Duration,
    /// A file holding the key that signs the `requestState` of 2026-07-28 input-required results:
    /// at least 32 bytes, as hex (e.g. `openssl rand -hex 32`). Replicas behind one address need
    /// the same key; without one each process picks a random key, and a client's retry that
    /// reaches another process is refused.
    #[arg(long, env = "CORRAL_STATE_SECRET_FILE", value_parser = parse_state_secret_file)]
    pub state_secret_file: Option<StateSecret>,
    /// The same key given directly, as hex (prefer the variable or the file: arguments are visible
    /// to every user of the machine).
    #[arg(long, env = "CORRAL_STATE_SECRET", hide_env_values = true, value_parser = SecretParser, conflicts_with = "state_secret_file")]
    pub state_secret: Option<StateSecret>,
    /// On SIGTERM or the end of stdin: how long calls in flight get to finish and answer before
    /// the rest are answered with a shutdown error and cancelled. Running tasks are left for
    /// recovery at the next start; task ends still waiting for an unreachable store get as long
    /// again to be stored.
    #[arg(long, env = "CORRAL_SHUTDOWN_GRACE", default_value = defaults::SHUTDOWN_GRACE, value_parser = config::parse_duration)]
    pub shutdown_grace: Duration,
    /// Requests one stdio session runs at once; at the bound stdin is not read until one answers.
    #[arg(long, env = "CORRAL_MAX_IN_FLIGHT", default_value_t = crate::transport::stdio::StdioSettings::default().max_in_flight, value_parser = config::parse_positive::<usize>)]
    pub max_in_flight: usize,
}

/// The audit trail's flags.
#[derive(Args)]
pub struct AuditArgs {
    /// Append one JSON line per finished call and per task transition to PATH (`-`: stderr):
    /// who, which tool and plugin, the outcome, duration, fuel, peak memory and sandbox denials.
    /// Reopened on SIGHUP (log rotation). Written off the request path: records the writer
    /// cannot keep up with are dropped and counted (corral_audit_records_dropped_total).
    #[arg(long, env = "CORRAL_AUDIT_LOG", value_name = "PATH", value_parser = parse_audit_destination)]
    pub audit_log: Option<Destination>,
    /// Also record each call's arguments and result in the audit log (they may hold personal
    /// data or secrets a client sent).
    #[arg(long, env = "CORRAL_AUDIT_ARGUMENTS", requires = "audit_log")]
    pub audit_arguments: bool,
}

fn parse_audit_destination(s: &str) -> Result<Destination, String> {
    match s {
        "" => Err("an empty path: give a file, or `-` for stderr".into()),
        s => Ok(Destination::parse(s)),
    }
}

/// `corral tools`.
#[derive(Args)]
pub struct ToolsArgs {
    /// The plugin directory, limits and runtime.
    #[command(flatten)]
    pub host: HostArgs,
    /// Print JSON (tools, limits and refused plugins) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `corral tasks`.
#[derive(Args)]
pub struct TasksArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TasksCommand,
}

/// The `corral tasks` subcommands.
#[derive(Subcommand)]
pub enum TasksCommand {
    /// The tasks of every client, newest first, a page at a time.
    List(TasksListArgs),
    /// Everything known of one task (its arguments only with --arguments).
    Show(TasksShowArgs),
    /// The result of an ended task, whole (a result kept by reference is read page by page).
    #[command(name = "result")]
    Outcome(TasksIdArgs),
    /// Cancel a task: stored `cancelled`, and the host running it stops its guest.
    Cancel(TasksIdArgs),
    /// Delete ended tasks: those named, or with --expired every task past its TTL.
    Purge(TasksPurgeArgs),
    /// Follow the tasks live: each new task and each change, until Ctrl-C.
    Watch(TasksWatchArgs),
}

/// The store and the output format, which every `corral tasks` subcommand takes.
#[derive(Args, Clone)]
pub struct TaskStoreArgs {
    /// The task database the hosts use: a SQLite file, or a `postgres://` URL (as `corral serve
    /// --db`). A file that does not exist is an error, never created.
    /// [default: a per-user data directory, e.g. ~/.local/share/corral/tasks.db]
    #[arg(long, env = "CORRAL_DB", value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Print JSON for scripts (field names in the README) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Which tasks `list` and `watch` show.
#[derive(Args)]
pub struct TaskFilterArgs {
    /// Only tasks with this status (working, input_required, completed, failed, cancelled);
    /// repeat it or separate with commas for several.
    #[arg(long, value_delimiter = ',', value_parser = parse_task_status)]
    pub status: Vec<TaskStatus>,
    /// Only the tasks of this owner, as the store keeps it (the `owner` field).
    #[arg(long)]
    pub owner: Option<String>,
    /// Only tasks of this tool (as served, namespace included).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only tasks of this plugin.
    #[arg(long)]
    pub plugin: Option<String>,
    /// Only tasks created longer ago than this, e.g. 1h.
    #[arg(long, value_parser = config::parse_duration)]
    pub older_than: Option<Duration>,
    /// Only tasks created within this, e.g. 10m.
    #[arg(long, value_parser = config::parse_duration)]
    pub newer_than: Option<Duration>,
}

/// `corral tasks list`.
#[derive(Args)]
pub struct TasksListArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Which tasks.
    #[command(flatten)]
    pub filter: TaskFilterArgs,
    /// Tasks per page (at most 1000).
    #[arg(long, default_value_t = 50, value_parser = parse_page_size)]
    pub limit: usize,
    /// Where to go on: the `next` cursor a previous page printed.
    #[arg(long, value_parser = parse_task_cursor)]
    pub cursor: Option<TaskCursor>,
}

/// `corral tasks show`.
#[derive(Args)]
pub struct TasksShowArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// The task's id.
    pub id: String,
    /// Show the call's arguments too (they may hold what the caller would not have shown).
    #[arg(long)]
    pub arguments: bool,
}

/// `corral tasks result` and `cancel`.
#[derive(Args)]
pub struct TasksIdArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// The task's id.
    pub id: String,
}

/// `corral tasks purge`.
#[derive(Args)]
pub struct TasksPurgeArgs {
    /// The store and format.
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Delete every task (and kept result) whose TTL has passed, as the hosts' reaper does.
    #[arg(long, required_unless_present = "ids")]
    pub expired: bool,
    /// The ended tasks to delete; a task that has not ended is refused (cancel it first).
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
}

/// `corral tasks watch`.
#[derive(Args)]
pub struct TasksWatchArgs {
    /// The store and format (`--json`: one JSON line per change).
    #[command(flatten)]
    pub store: TaskStoreArgs,
    /// Which tasks.
    #[command(flatten)]
    pub filter: TaskFilterArgs,
    /// The newest tasks followed at most.
    #[arg(long, default_value_t = 100, value_parser = parse_page_size)]
    pub limit: usize,
    /// How often the store is read, e.g. 250ms.
    #[arg(long, default_value = "500ms", value_parser = parse_watch_interval)]
    pub interval: Duration,
}

fn parse_task_status(s: &str) -> Result<TaskStatus, String> {
    TaskStatus::parse(s).ok_or_else(|| {
        let known: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("no task status is called {s:?}; the statuses are {}", known.join(", "))
    })
}

fn parse_page_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a page size: give a whole number from 1 to {MAX_PAGE}")),
    }
}

fn parse_task_cursor(s: &str) -> Result<TaskCursor, String> {
    TaskCursor::parse(s).ok_or_else(|| format!("{s:?} is not a cursor `corral tasks list` printed (such as s42)"))
}

fn parse_watch_interval(s: &str) -> Result<Duration, String> {
    let every = config::parse_duration(s)?;
    if every < Duration::from_millis(50) {
        return Err(format!("{s:?} is too short: read the store at most every 50ms"));
    }
    Ok(every)
}

/// `corral compile`.
#[derive(Args)]
pub struct CompileArgs {
    /// The plugin directory, limits and runtime.
    #[command(flatten)]
    pub host: HostArgs,
}

/// `corral call`.
#[derive(Args)]
pub struct CallArgs {
    /// The plugin directory, limits and runtime.
    #[command(flatten)]
    pub host: HostArgs,
    /// The tool to call.
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
}

/// Flags shared by `pull` and `publish`: how registries are reached.
#[derive(Args)]
pub struct RegistryArgs {
    /// A registry reached over plain HTTP (loopback registries always are); repeatable.
    #[arg(long = "insecure-registry", env = "CORRAL_INSECURE_REGISTRIES", value_delimiter = ',', value_name = "HOST:PORT")]
    pub insecure_registry: Vec<String>,
    /// A bearer token for the registry; without it the docker config file
    /// ($DOCKER_CONFIG/config.json or ~/.docker/config.json) is read. Never logged.
    #[arg(long, env = "CORRAL_REGISTRY_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub registry_token: Option<String>,
}

impl RegistryArgs {
    /// The registry access these flags describe.
    pub fn access(&self) -> Access {
        Access { insecure: self.insecure_registry.clone(), token: self.registry_token.clone(), docker_config: None }
    }
}

/// `corral pull`'s flags.
#[derive(Args)]
pub struct PullArgs {
    /// The plugin: oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:DIGEST.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,
    /// The plugin directory it is written to (NAME.wasm, NAME.toml, corral.lock).
    #[arg(long, env = "CORRAL_PLUGINS", value_name = "DIR")]
    pub plugins: PathBuf,
    /// Verify the cosign signature with this public key (PEM, ECDSA P-256, as `cosign
    /// generate-key-pair` writes cosign.pub); an unsigned artifact is then refused, and so is one
    /// whose signature was made for another repository (see --signed-identity).
    #[arg(long, env = "CORRAL_COSIGN_KEY", value_name = "cosign.pub")]
    pub key: Option<PathBuf>,
    /// Refuse artifacts without a valid signature (needs --key).
    #[arg(long, env = "CORRAL_REQUIRE_SIGNATURES")]
    pub require_signatures: bool,
    /// The repository the signature must name, when REFERENCE is a mirror of where it was
    /// signed, e.g. ghcr.io/acme/search [default: REFERENCE's own repository].
    #[arg(long, env = "CORRAL_SIGNED_IDENTITY", value_name = "HOST[:PORT]/REPO", value_parser = parse_signed_identity, requires = "key")]
    pub signed_identity: Option<String>,
    /// The plugin's name in the directory [default: the repository's last path segment].
    #[arg(long)]
    pub name: Option<String>,
    /// Prefix the plugin's tool and prompt names (`NAMESPACE_tool`); written to NAME.toml.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Move a pinned tag to the digest it names now (or re-pin NAME to another reference).
    #[arg(long)]
    pub update: bool,
    /// The largest component accepted, e.g. 64MiB.
    #[arg(long, env = "CORRAL_MAX_PLUGIN_SIZE", default_value = defaults::MAX_PLUGIN_SIZE, value_parser = config::parse_size)]
    pub max_plugin_size: u64,
    /// The largest OCI manifest accepted (the artifact's and its signature's), e.g. 4MiB.
    #[arg(long, env = "CORRAL_MAX_MANIFEST_SIZE", default_value = defaults::MAX_MANIFEST_SIZE, value_parser = config::parse_size)]
    pub max_manifest_size: u64,
    /// How long the whole pull may take, from connecting to the registry to the last byte.
    #[arg(long, env = "CORRAL_PULL_TIMEOUT", default_value = defaults::PULL_TIMEOUT, value_parser = config::parse_duration)]
    pub pull_timeout: Duration,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `corral publish`'s flags.
#[derive(Args)]
pub struct PublishArgs {
    /// The component to publish.
    #[arg(value_name = "FILE.wasm")]
    pub file: PathBuf,
    /// Where: oci://HOST[:PORT]/REPO:TAG.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,
    /// The plugin manifest (limits, permissions, namespace) to publish with it.
    #[arg(long, value_name = "NAME.toml")]
    pub manifest: Option<PathBuf>,
    /// Sign with this private key (cosign's encrypted cosign.key, password in COSIGN_PASSWORD,
    /// or an unencrypted PEM ECDSA P-256 key).
    #[arg(long, value_name = "cosign.key")]
    pub sign_key: Option<PathBuf>,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `--signed-identity`: `HOST[:PORT]/REPO`, no tag.
fn parse_signed_identity(text: &str) -> Result<String, String> {
    crate::oci::reference::parse_repository(text).map_err(|e| e.to_string())
}

/// `--state-secret` / `CORRAL_STATE_SECRET`: hex, at least 32 bytes. A parser of its own because
/// clap quotes a refused value in its error, and this value is a key: the error names the flag,
/// the variable and what is wrong, never the text.
#[derive(Clone)]
struct SecretParser;

impl clap::builder::TypedValueParser for SecretParser {
    type Value = StateSecret;

    fn parse_ref(&self, cmd: &clap::Command, _arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<StateSecret, clap::Error> {
        let refuse = |why: &str| {
            let message = format!("invalid --state-secret (or CORRAL_STATE_SECRET; its value is not shown): {why}\n");
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, message).with_cmd(cmd)
        };
        let text = value.to_str().ok_or_else(|| refuse("the state secret must be hexadecimal text"))?;
        StateSecret::from_hex(text).map_err(|why| refuse(&why))
    }
}

/// `--state-secret-file`: a file whose text is the hex key.
/// `--public-url`: an absolute http(s) URL with a host, without query or fragment; a trailing
/// slash is dropped so that `/mcp` appends cleanly.
fn parse_public_url(text: &str) -> Result<String, String> {
    let url = http::Uri::try_from(text).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(format!("`{text}` is not an http:// or https:// URL with a host"));
    }
    if text.contains('?') || text.contains('#') {
        return Err(format!("`{text}` has a query or fragment; the resource URI has neither (RFC 8707 §2)"));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

fn parse_issuer(text: &str) -> Result<IssuerUrl, String> {
    IssuerUrl::parse(text)
}

/// An audience: any URI or name, but not empty and without a fragment.
fn parse_audience(text: &str) -> Result<String, String> {
    if text.trim().is_empty() || text.contains('#') || text.chars().any(char::is_whitespace) {
        return Err(format!("`{text}` is not an audience: a URI or name without spaces or fragment"));
    }
    Ok(text.to_owned())
}

/// `ISSUER=AUDIENCE`: an issuer identifier has no `=` (no query), so the first one splits.
fn parse_extra_audience(text: &str) -> Result<(IssuerUrl, String), String> {
    let (issuer, audience) = text.split_once('=').ok_or_else(|| format!("`{text}` is not ISSUER=AUDIENCE"))?;
    Ok((IssuerUrl::parse(issuer)?, parse_audience(audience)?))
}

/// `ISSUER=CLIENT_ID`: an issuer identifier has no `=`, so the first one splits.
fn parse_introspection_client(text: &str) -> Result<(IssuerUrl, String), String> {
    let (issuer, client) = text.split_once('=').ok_or_else(|| format!("`{text}` is not ISSUER=CLIENT_ID"))?;
    if client.is_empty() || client.chars().any(|c| c.is_control()) {
        return Err(format!("`{client}` is not a client id"));
    }
    Ok((IssuerUrl::parse(issuer)?, client.to_owned()))
}

/// An endpoint corral sends secrets to: https, or plain http on a loopback address only.
fn parse_endpoint(text: &str) -> Result<String, String> {
    let url = http::Uri::try_from(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    let host = url.host().ok_or_else(|| format!("`{text}` has no host"))?;
    match url.scheme_str() {
        Some("https") => Ok(text.to_owned()),
        Some("http") if identity::issuer::is_loopback(host) => Ok(text.to_owned()),
        _ => Err(format!("`{text}` is not https:// (plain http:// only on a loopback address): the client secret goes there")),
    }
}

/// A scope token (RFC 6749 §3.3: printable ASCII without space, `"` or `\`).
fn parse_scope(text: &str) -> Result<String, String> {
    if text.is_empty() || !text.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\') {
        return Err(format!("`{text}` is not a scope (printable ASCII without spaces, quotes or backslashes)"));
    }
    Ok(text.to_owned())
}

fn parse_leeway(text: &str) -> Result<Duration, String> {
    let leeway = config::parse_duration(text)?;
    if leeway > Duration::from_secs(300) {
        return Err(format!("{text} is over 5m: a token that expired that long ago is no longer fresh"));
    }
    Ok(leeway)
}

fn parse_state_secret_file(path: &str) -> Result<StateSecret, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the state secret file {path}: {e}"))?;
    StateSecret::from_hex(&text).map_err(|e| format!("{path}: {e}"))
}

// Undocumented on purpose: clap turns doc comments into help text; the `inspect` variant of `cli::args::Command` holds this command's.
#[allow(missing_docs)]
#[derive(clap::Args)]
pub struct InspectArgs {
    /// The component to inspect; a manifest NAME.toml beside it is read as `serve` would.
    #[arg(value_name = "FILE.wasm")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The compile cache `serve` uses, so a second inspect maps the plugin instead of compiling
    /// it. [default: the per-user cache directory, e.g. ~/.cache/corral]
    #[arg(long, env = "CORRAL_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<std::path::PathBuf>,
    /// Compile the plugin afresh, without the compile cache.
    #[arg(long, env = "CORRAL_NO_CACHE", conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

// Undocumented on purpose: clap turns doc comments on a value enum into help text for each value.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Js,
    Python,
    C,
}

// Undocumented on purpose: clap turns doc comments into help text; the `new` variant of `cli::args::Command` holds this command's.
#[allow(missing_docs)]
#[derive(clap::Args)]
pub struct NewArgs {
    /// The plugin's name: 1-64 characters of a-z, 0-9, `-` and `_`, starting with a letter.
    /// It names the directory, the component (NAME.wasm) and the starter tool.
    pub name: String,
    /// The language of the project.
    #[arg(long, value_enum, default_value = "rust")]
    pub lang: Lang,
    /// The directory to create the project in.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admin_port_alone_listens_on_loopback() {
        assert_eq!(parse_admin_addr("9090").unwrap(), "127.0.0.1:9090".parse().unwrap());
        assert_eq!(parse_admin_addr("[::1]:9090").unwrap(), "[::1]:9090".parse().unwrap());
        assert!(parse_admin_addr("nine").unwrap_err().contains("neither a port nor an address"));
    }
    use clap::error::ErrorKind;

    fn serve(extra: &[&str]) -> Result<ServeArgs, clap::Error> {
        let argv = ["corral", "serve", "--plugins", "p"].into_iter().chain(extra.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Serve(args) => Ok(args),
            _ => unreachable!("the argv names `serve`"),
        }
    }

    /// Each count flag that used to be raised from 0 to 1 in silence now refuses 0, naming itself.
    #[test]
    fn zero_is_an_error_that_names_the_flag() {
        for flag in
            ["--fuel", "--max-concurrency", "--max-instances", "--max-running", "--max-tasks-per-client", "--max-sessions", "--event-buffer", "--page-size"]
        {
            let err = serve(&[flag, "0"]).err().unwrap_or_else(|| panic!("{flag} 0 was accepted"));
            assert_eq!(err.kind(), ErrorKind::ValueValidation, "{flag}");
            let text = err.to_string();
            assert!(text.contains(flag) && text.contains("must be greater than zero"), "{flag}: {text}");
        }
    }

    #[test]
    fn durations_and_sizes_refuse_zero_too() {
        for flag in
            ["--timeout", "--task-timeout", "--epoch-tick", "--task-ttl", "--task-max-ttl", "--task-poll-interval", "--task-reap-every", "--session-idle"]
        {
            let err = serve(&[flag, "0s"]).err().unwrap_or_else(|| panic!("{flag} 0s was accepted"));
            assert!(err.to_string().contains("must be greater than zero"), "{flag}: {err}");
        }
        for flag in
            ["--memory", "--memory-ceiling", "--max-output", "--max-body", "--inline-result-limit", "--max-result-bytes-per-client", "--max-result-bytes"]
        {
            assert!(serve(&[flag, "0B"]).is_err(), "{flag} 0B was accepted");
        }
    }

    #[test]
    fn counts_keep_their_values_and_defaults() {
        let args = serve(&["--max-running", "3", "--fuel", "7"]).unwrap();
        assert_eq!((args.tasks.max_running, args.host.fuel), (3, 7));
        let args = serve(&[]).unwrap();
        assert_eq!(args.tasks.max_running, TaskSettings::default().max_running);
        assert_eq!(args.host.max_instances, EngineSettings::default().max_instances);
        assert_eq!(args.page_size, ServerOptions::default().page_size);
        assert!(serve(&["--max-running", "many"]).err().unwrap().to_string().contains("not a whole number"));
    }

    #[test]
    fn defaults_are_the_shared_constants() {
        let args = serve(&[]).unwrap();
        let limits = Limits::default();
        assert_eq!((args.host.timeout, args.host.task_timeout, args.host.memory), (limits.timeout, limits.task_timeout, limits.memory));
        assert_eq!(args.host.memory_ceiling, EngineSettings::default().memory_ceiling);
        let runtime = crate::runtime::RuntimeSettings::default();
        assert_eq!((args.host.epoch_tick, args.host.max_output), (runtime.epoch_tick, runtime.max_output));
        let tasks = TaskSettings::default();
        assert_eq!(
            (args.tasks.task_ttl, args.tasks.task_max_ttl, args.tasks.task_poll_interval, args.tasks.task_reap_every),
            (tasks.default_ttl, tasks.max_ttl, tasks.poll_interval, tasks.reap_every)
        );
        assert_eq!((args.tasks.max_result_bytes_per_client, args.tasks.max_result_bytes), (tasks.result_quota.per_owner, tasks.result_quota.total));
        let args = serve(&["--max-result-bytes-per-client", "1MiB", "--max-result-bytes", "3MiB"]).unwrap();
        assert_eq!(args.tasks.settings().result_quota, crate::tasks::ResultQuota { per_owner: 1 << 20, total: 3 << 20 });
    }

    #[test]
    fn db_sync_is_one_of_two_words() {
        assert_eq!(Durability::from(serve(&[]).unwrap().tasks.db_sync), Durability::Process);
        assert_eq!(Durability::from(serve(&["--db-sync", "power"]).unwrap().tasks.db_sync), Durability::Power);
        assert_eq!(serve(&["--db-sync", "fsync"]).err().map(|e| e.kind()), Some(ErrorKind::InvalidValue));
    }

    #[test]
    fn shutdown_grace_and_the_stdio_bound_have_defaults_and_refuse_zero() {
        let args = serve(&[]).unwrap();
        assert_eq!((args.shutdown_grace, args.max_in_flight), (Duration::from_secs(10), crate::transport::stdio::StdioSettings::default().max_in_flight));
        assert_eq!(serve(&["--shutdown-grace", "2s"]).unwrap().shutdown_grace, Duration::from_secs(2));
        assert!(serve(&["--shutdown-grace", "0s"]).err().unwrap().to_string().contains("must be greater than zero"));
        assert!(serve(&["--max-in-flight", "0"]).err().unwrap().to_string().contains("must be greater than zero"));
    }

    /// A refused key is named, with what is wrong, and never printed back.
    #[test]
    fn a_malformed_state_secret_is_not_echoed() {
        for bad in ["not-hex-SECRETVALUE", "abcdef0123", "abc"] {
            let err = serve(&["--state-secret", bad]).err().unwrap_or_else(|| panic!("{bad} was accepted"));
            assert_eq!(err.kind(), ErrorKind::ValueValidation);
            let text = err.to_string();
            assert!(!text.contains(bad), "the secret was echoed: {text}");
            assert!(text.contains("--state-secret") && text.contains("CORRAL_STATE_SECRET") && text.contains("state secret"), "{text}");
        }
        assert!(serve(&["--state-secret", &"ab".repeat(32)]).unwrap().state_secret.is_some());
    }

    fn pull(extra: &[&str]) -> Result<PullArgs, clap::Error> {
        let argv = ["corral", "pull", "oci://127.0.0.1:5000/corral/x:1", "--plugins", "p"].into_iter().chain(extra.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Pull(args) => Ok(args),
            _ => unreachable!("the argv names `pull`"),
        }
    }

    #[test]
    fn pull_bounds_have_the_shared_defaults_and_refuse_zero() {
        let args = pull(&[]).unwrap();
        assert_eq!(args.max_plugin_size, defaults::size(defaults::MAX_PLUGIN_SIZE));
        assert_eq!(args.max_manifest_size, defaults::size(defaults::MAX_MANIFEST_SIZE));
        assert_eq!(args.pull_timeout, defaults::duration(defaults::PULL_TIMEOUT));
        for (flag, zero) in [("--max-plugin-size", "0B"), ("--max-manifest-size", "0B"), ("--pull-timeout", "0s")] {
            assert!(pull(&[flag, zero]).is_err(), "{flag} {zero} was accepted");
        }
    }

    #[test]
    fn signed_identity_is_a_repository_and_needs_a_key() {
        let args = pull(&["--key", "k.pub", "--signed-identity", "ghcr.io/acme/search"]).unwrap();
        assert_eq!(args.signed_identity.as_deref(), Some("ghcr.io/acme/search"));
        let e = pull(&["--key", "k.pub", "--signed-identity", "ghcr.io/acme/search:1"]).err().unwrap().to_string();
        assert!(e.contains("--signed-identity") && e.contains("names a tag"), "{e}");
        assert_eq!(pull(&["--signed-identity", "ghcr.io/acme/search"]).err().map(|e| e.kind()), Some(ErrorKind::MissingRequiredArgument));
    }

    #[test]
    fn connection_flags_have_the_transport_defaults_and_refuse_zero() {
        let args = serve(&[]).unwrap();
        let defaults = ConnectionSettings::default();
        assert_eq!(args.http.max_connections, defaults.max_connections);
        assert_eq!(
            (args.http.http_header_timeout, args.http.http_body_timeout, args.http.http_idle_timeout),
            (defaults.header_timeout, defaults.body_timeout, defaults.idle_timeout)
        );
        assert!(serve(&["--max-connections", "0"]).err().unwrap().to_string().contains("must be greater than zero"));
        for flag in ["--http-header-timeout", "--http-body-timeout", "--http-idle-timeout"] {
            assert!(serve(&[flag, "0s"]).err().unwrap().to_string().contains("must be greater than zero"), "{flag}");
        }
    }
}

/// A policy file as `--policy` names it, read and compiled once at start (a broken file is a
/// usage error naming the file, line and key).
#[derive(Clone, Debug)]
pub struct PolicyFile {
    /// Where it is, for the watcher.
    pub path: PathBuf,
    /// What it says now.
    pub policy: crate::policy::Policy,
}

fn parse_policy_file(path: &str) -> Result<PolicyFile, String> {
    let path = PathBuf::from(path);
    let policy = crate::policy::load(&path).map_err(|e| e.to_string())?;
    Ok(PolicyFile { path, policy })
}
