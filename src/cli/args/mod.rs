//! Every flag of every subcommand, parsed and validated in one place.
//!
//! As in ripgrep's `flags/`, a flag is checked where it is parsed: a count that must be positive
//! has a parser that refuses zero, so clap names the flag in the error and nothing downstream
//! clamps or reinterprets a value. Defaults come from [`config::defaults`](crate::config::defaults)
//! (durations and sizes) or from the `Default` impl of the settings they fill (counts), never from
//! a second literal. Turning these arguments into the host's settings is a separate step, in
//! [`super::host`].
//!
//! One file per family of subcommands: [`host`] holds the flags every command that loads plugins
//! shares (the plugin directory, limits, the task store), [`serve`] the server's own (HTTP, OAuth,
//! the console, the audit trail, the policy), [`plugin`] the one-shot commands on a plugin
//! directory or file, [`registry`] `pull` and `publish`, [`dev`] `corral dev` and `corral test`, [`tasks`] the operator's `corral tasks`, [`actor`] who acts in those that change something, [`secrets`] `corral secrets` and
//! the secrets flags of `serve`.

mod actor;
mod dev;
mod host;
mod plugin;
mod registry;
mod secrets;
mod serve;
mod tasks;

use clap::{Parser, Subcommand};

pub use self::actor::ActorArgs;
pub use self::dev::{DevArgs, TestArgs};
pub use self::host::{DbSync, HostArgs, TaskArgs};
pub use self::plugin::{CallArgs, CompileArgs, InspectArgs, Lang, NewArgs, ToolsArgs};
pub use self::registry::{PublishArgs, PullArgs, RegistryArgs, SignArgs, VerifyArgs};
pub use self::secrets::{
    parse_secrets_key_file, SecretStoreArgs, SecretsArgs, SecretsCommand, SecretsFlags, SecretsListArgs, SecretsNameArgs, SecretsRotateArgs,
};
pub use self::serve::{AdminArgs, AuditArgs, HttpArgs, PolicyFile, ServeArgs};
pub use self::tasks::{
    OperatorArgs, TaskFilterArgs, TaskStoreArgs, TasksArgs, TasksCancelArgs, TasksCommand, TasksIdArgs, TasksListArgs, TasksPurgeArgs, TasksShowArgs,
    TasksWatchArgs,
};

/// The `corral` command line.
#[derive(Parser)]
#[command(name = "corral", version = super::version::SHORT, long_version = super::version::LONG, about = "Serve WebAssembly component plugins as MCP tools, sandboxed and time-limited.")]
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
    /// Develop plugin projects: build, serve and watch them; a save rebuilds the plugin and the
    /// connected client's next call runs the new code.
    Dev(DevArgs),
    /// Build plugin projects and run their fixture calls (fixtures.toml) headless; exits 1 when
    /// a build or a fixture fails. --junit FILE writes JUnit XML for CI.
    Test(TestArgs),
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
    Secrets(SecretsArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(super::completions::CompletionsArgs),
    /// Print the manual page corral(1) in roff, or write every page into --dir.
    Man(super::completions::ManArgs),
    /// Sign an image by digest in a registry, or a file (FILE.sig), as cosign does with a key.
    Sign(SignArgs),
    /// Verify a cosign signature of an image in a registry or of a file; exits 1 when there is
    /// no valid one.
    Verify(VerifyArgs),
    /// Ask a running `serve --http` whether it is ready (or alive); exits 1 when it is not.
    Health(super::health::HealthArgs),
}
