//! `corral dev [DIR…]`: serve plugin projects while they are being written. Each project is
//! built, served, and watched; a save rebuilds it and swaps the new component into the running
//! host through the registry's hot reload, so the client's session lives on: calls in flight
//! finish on the old code, `notifications/tools/list_changed` goes out, and tool names stay as
//! they were, so a client that ignores the notification still calls the new code.
//!
//! The parts, each testable alone: [`project`] finds the projects and their `[build]` table,
//! [`watch`] says when a project's sources changed, [`build`] runs the build command (killed
//! when a newer save supersedes it), [`trim`] cuts a failed build's output down to its errors,
//! [`stage`] is the directory the host serves the last good builds from, and [`fixtures`] are
//! the calls a project keeps with their expected results, run by [`client`] after each swap
//! (and by `corral test`, in [`test`], headless, with a JUnit report from [`junit`]). This
//! module runs one loop per project: build, swap (or report), run the fixtures, wait for the
//! next save.

mod build;
mod client;
mod fixtures;
mod junit;
mod project;
mod schemas;
mod stage;
pub mod test;
mod trim;
mod watch;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

pub use fixtures::{read as read_fixtures, Fixture};
use project::Project;
use stage::Stage;

use super::args::DevArgs;
use super::host::build_host_unloaded;
use crate::mcp::types::LogLevel;
use crate::registry::{load_in_background, plugin_files, LoadSettings};
use crate::server::{self, Host, ServerOptions};
use crate::tasks::{Durability, TaskSettings};
use crate::transport;

/// The logger name of `corral dev`'s messages to the client.
const LOGGER: &str = "corral dev";

/// Runs until the transport ends (stdin closes, or a shutdown signal arrives).
pub async fn run(args: DevArgs) -> anyhow::Result<ExitCode> {
    let projects = project::find(&args.dirs())?;
    let stage = Stage::create()?;
    let host_args = args.host_args(stage.path())?;
    let http = args.http_args()?;
    let options = ServerOptions { list_changed: true, ..ServerOptions::default() };
    let (host, load) = build_host_unloaded(&host_args, options, Path::new(":memory:"), Durability::Process, TaskSettings::default()).await?;
    server::announce_changes(&host);
    let dev = Arc::new(Dev { host: host.clone(), load, stage, swaps: tokio::sync::Mutex::new(()) });

    let mut watchers = Vec::new();
    let mut first_builds = Vec::new();
    for project in projects {
        let (sources, changes) = watch::watch(&project, args.debounce)?;
        watchers.push(sources);
        let (built, first) = oneshot::channel();
        first_builds.push(first);
        tokio::spawn(develop(dev.clone(), project, changes, built));
    }
    // The first load waits for every first build, so that a client's first `tools/list` (which
    // waits for the load, up to --load-wait) already has the tools.
    let loader = dev.clone();
    tokio::spawn(async move {
        for first in first_builds {
            let _ = first.await;
        }
        let dir = loader.stage.path().to_owned();
        let started = plugin_files(&dir).and_then(|files| {
            let (runtime, registry) = (loader.host.runtime().clone(), loader.host.registry().clone());
            load_in_background(dir, files, runtime, loader.load.clone(), registry).map_err(anyhow::Error::from)
        });
        if let Err(e) = started {
            tracing::error!("cannot load the first builds: {e:#}");
        }
    });

    match http.http {
        Some(addr) => transport::http::serve(host.clone(), http.settings(addr)?, transport::shutdown_signal()).await?,
        None => transport::stdio::serve_process(host.clone(), transport::stdio::StdioSettings::default(), transport::shutdown_signal()).await?,
    }
    drop(watchers);
    host.shutdown().await;
    // The project loops still hold the stage; the process is about to end them.
    let _ = std::fs::remove_dir_all(dev.stage.path());
    Ok(ExitCode::SUCCESS)
}

/// What every project's loop shares.
struct Dev {
    host: Arc<Host>,
    load: Arc<LoadSettings>,
    stage: Stage,
    /// One swap at a time: each builds the next catalog from the one served.
    swaps: tokio::sync::Mutex<()>,
}

impl Dev {
    /// Says `message` on stderr and to every client that wants `level`.
    fn report(&self, level: LogLevel, message: &str) {
        eprintln!("corral dev: {message}");
        self.host.log_to_clients(level, LOGGER, message);
    }
}

/// One project's loop: build, then serve what was built (or say why not), then wait for the
/// next save. `built` is told when the first build has ended, well or not.
async fn develop(dev: Arc<Dev>, project: Project, mut changes: mpsc::UnboundedReceiver<Vec<PathBuf>>, built: oneshot::Sender<()>) {
    let mut first = Some(built);
    loop {
        let staged = match build_latest(&dev, &project, &mut changes).await {
            Ok(took) => match dev.stage.put(&project) {
                Ok(true) => Some(took),
                Ok(false) => {
                    dev.report(LogLevel::Info, &format!("{}: built in {}, the same component as the one served", project.name, seconds(took)));
                    None
                }
                Err(e) => {
                    dev.report(LogLevel::Error, &format!("{}: {e:#}", project.name));
                    None
                }
            },
            Err(failure) => {
                let keeps = if first.is_some() { "nothing is served yet" } else { "the last good build keeps serving" };
                dev.report(LogLevel::Error, &format!("{}: build failed ({}), {keeps}:\n{failure}", project.name, project.build.command));
                None
            }
        };
        let serving = match first.take() {
            Some(built) => {
                if let Some(took) = staged {
                    eprintln!("corral dev: {}: built in {}", project.name, seconds(took));
                }
                let _ = built.send(());
                dev.host.registry().loaded().await;
                staged.is_some() && dev.host.registry().snapshot().plugins.iter().any(|p| p.name == project.name)
            }
            None => match staged {
                Some(took) => swap(&dev, &project, took).await,
                None => false,
            },
        };
        if serving {
            for warning in schemas::warnings(&dev.host.registry().snapshot(), &project.name) {
                dev.report(LogLevel::Warning, &format!("{}: {warning}", project.name));
            }
            run_fixtures(&dev, &project).await;
        }
        if changes.recv().await.is_none() {
            return;
        }
    }
}

/// Builds the project until a build ends with no newer save: a save during a build kills it
/// and starts another. Returns the build time, or the trimmed reason it failed.
async fn build_latest(dev: &Dev, project: &Project, changes: &mut mpsc::UnboundedReceiver<Vec<PathBuf>>) -> Result<Duration, String> {
    loop {
        let build = build::run(&project.dir, &project.build.command);
        tokio::pin!(build);
        tokio::select! {
            done = &mut build => return match done {
                Ok(done) if done.success => Ok(done.took),
                Ok(done) => Err(format!("{}\n{}", trim::trim(&done.output), done.status)),
                Err(e) => Err(format!("cannot run `{}` in {}: {e}", project.build.command, project.dir.display())),
            },
            Some(_) = changes.recv() => {
                // Saves that came together are one rebuild.
                while changes.try_recv().is_ok() {}
                dev.report(LogLevel::Debug, &format!("{}: changed again while building; building anew", project.name));
            }
        }
    }
}

/// Serves the staged build in place of the running one, and says how it went; returns whether
/// the new build is served.
async fn swap(dev: &Dev, project: &Project, build_took: Duration) -> bool {
    let registry = dev.host.registry();
    registry.loaded().await;
    let _turn = dev.swaps.lock().await;
    let started = Instant::now();
    let names = BTreeSet::from([project.name.clone()]);
    crate::registry::reload(registry, dev.stage.path(), &names, dev.host.runtime(), &dev.load).await;
    let took = started.elapsed();
    let catalog = registry.snapshot();
    let stamp = crate::registry::stamp(&dev.stage.component(project));
    if let Some(refused) = catalog.refused.iter().find(|r| r.plugin == project.name && r.stamp == stamp) {
        dev.report(LogLevel::Error, &format!("{}: built, but the host refuses it; the last good build keeps serving: {}", project.name, refused.message));
        return false;
    }
    let tools = catalog.tools.values().filter(|t| t.plugin.name == project.name).count();
    let compile = catalog.plugins.iter().find(|p| p.name == project.name).map_or(Duration::ZERO, |p| p.compile_time);
    dev.report(
        LogLevel::Info,
        &format!(
            "{}: serving the new build ({tools} tools): built in {}, compiled in {}, swapped in {}",
            project.name,
            seconds(build_took),
            seconds(compile),
            seconds(took.saturating_sub(compile))
        ),
    );
    true
}

/// Runs the project's fixture calls against what is served now and says how they went: each
/// on stderr, the count to the client.
async fn run_fixtures(dev: &Dev, project: &Project) {
    let fixtures = match fixtures::read(&project.dir) {
        Ok(fixtures) if fixtures.is_empty() => return,
        Ok(fixtures) => fixtures,
        Err(e) => return dev.report(LogLevel::Warning, &format!("{}: fixtures not run: {e:#}", project.name)),
    };
    let outcomes = match client::run_all(&dev.host, &fixtures).await {
        Ok(outcomes) => outcomes,
        Err(e) => return dev.report(LogLevel::Warning, &format!("{}: fixtures not run: {e:#}", project.name)),
    };
    eprintln!("{}", client::lines(&project.name, &outcomes));
    let failed: Vec<&str> = outcomes.iter().filter(|o| o.verdict != client::Verdict::Pass).map(|o| o.fixture.as_str()).collect();
    match failed.is_empty() {
        true => dev.host.log_to_clients(LogLevel::Info, LOGGER, &format!("{}: {} fixtures passed", project.name, outcomes.len())),
        false => dev.host.log_to_clients(
            LogLevel::Warning,
            LOGGER,
            &format!("{}: {} of {} fixtures failed: {}", project.name, failed.len(), outcomes.len(), failed.join(", ")),
        ),
    };
}

fn seconds(d: Duration) -> String {
    match d.as_millis() {
        ms if ms < 1000 => format!("{ms} ms"),
        _ => format!("{:.1} s", d.as_secs_f64()),
    }
}
