//! The `corral` binary: parse the command line, start logging and tokio, run the subcommand.
//!
//! Everything else lives in [`corral::cli`]: the flags and their validation, the host they build,
//! and each subcommand.

use std::process::ExitCode;

use clap::Parser;
use corral::cli::args::{Cli, Command, LogFormat};
use corral::cli::{call, compile, inspect, new, publish, pull, serve, tasks, tools};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log_level, cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("corral-worker").build().expect("starting the tokio runtime");
    match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("corral: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(level: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let log = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).with_target(false);
    match format {
        LogFormat::Text => log.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
        // One object a line, nothing but JSON: a collector parses every line.
        LogFormat::Json => log.json().with_ansi(false).with_current_span(false).init(),
    }
}

async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve::run(args).await,
        Command::Tools(args) => tools::run(args).await,
        Command::Call(args) => call::run(args).await,
        Command::Compile(args) => compile::run(args),
        Command::Inspect(args) => inspect::run(args).await,
        Command::New(args) => new::run(args),
        Command::Pull(args) => pull::run(args).await,
        Command::Publish(args) => publish::run(args).await,
        Command::Tasks(args) => tasks::run(args).await,
    }
}
