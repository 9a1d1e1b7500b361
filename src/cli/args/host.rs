//! The flags every command that loads the plugin directory shares, and the task store's.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::config::{self, defaults, Limits};
use crate::runtime::{Compiler, EngineSettings};
use crate::tasks::{Durability, TaskSettings};

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
    /// What compiles the plugins: `cranelift` optimises (for serving), `winch` compiles several
    /// times faster into code several times slower (for development: `corral dev`'s default).
    #[arg(long, env = "CORRAL_COMPILER", default_value = "cranelift", value_parser = Compiler::parse)]
    pub compiler: Compiler,
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
