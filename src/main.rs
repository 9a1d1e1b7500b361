//! The `corral` binary: parse the command line, start logging and tokio, run the subcommand.
//!
//! Everything else lives in [`corral::cli`]: the flags and their validation, the host they build,
//! and each subcommand.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use corral::cli::args::{Cli, Command, LogFormat};
use corral::cli::{call, compile, completions, dev, health, inspect, new, publish, pull, secrets, serve, sign, tasks, tools};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("corral-worker").build().expect("starting the tokio runtime");
    // Inside the runtime: the gRPC trace exporter binds to it. Dropped before the runtime, so
    // the spans still queued are exported while it runs.
    let format = cli.log_format;
    let telemetry = match runtime.block_on(async { corral::telemetry::init(&cli.log_level, format) }) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            fatal(format, &e);
            return ExitCode::from(2);
        }
    };
    let code = match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            fatal(format, &e);
            ExitCode::from(2)
        }
    };
    drop(telemetry);
    code
}

/// The error that ends the process, on stderr in the log's format: a log collector reading
/// JSON lines must not lose the one line that says why the host stopped.
fn fatal(format: LogFormat, error: &anyhow::Error) {
    match format {
        LogFormat::Text => eprintln!("corral: {error:#}"),
        LogFormat::Json => {
            let time = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
            let line = serde_json::json!({ "timestamp": time, "level": "ERROR", "fields": { "message": format!("{error:#}") }, "target": "corral" });
            eprintln!("{line}");
        }
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
        Command::Dev(args) => dev::run(args).await,
        Command::Test(args) => dev::test::run(args).await,
        Command::Pull(args) => pull::run(args).await,
        Command::Publish(args) => publish::run(args).await,
        Command::Tasks(args) => tasks::run(args).await,
        Command::Completions(args) => completions::completions(args, Cli::command(), &mut std::io::stdout().lock()).map(|()| ExitCode::SUCCESS),
        Command::Man(args) => completions::man(args, Cli::command(), &mut std::io::stdout().lock()).map(|()| ExitCode::SUCCESS),
        Command::Sign(args) => sign::run_sign(args).await,
        Command::Verify(args) => sign::run_verify(args).await,
        Command::Health(args) => health::run(args).await,
        Command::Secrets(args) => secrets::run(args).await,
    }
}
