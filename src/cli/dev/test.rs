//! `corral test [DIR…]`: build each project once, serve the builds on a host of this process,
//! run every project's fixture calls, and exit 0 only if every build and every fixture passed
//! (1 otherwise); `--junit FILE` writes the outcomes for CI systems as well.

use std::path::Path;
use std::process::ExitCode;

use super::client::{self, Verdict};
use super::junit::{self, PluginRun};
use super::project::{self, Project};
use super::stage::Stage;
use super::{build, fixtures, trim};
use crate::cli::args::TestArgs;
use crate::cli::host::build_host;
use crate::server::ServerOptions;
use crate::tasks::{Durability, TaskSettings};

/// Builds, serves and runs the fixtures; the exit status is 0 only if everything passed.
pub async fn run(args: TestArgs) -> anyhow::Result<ExitCode> {
    let dev = args.as_dev();
    let projects = project::find(&dev.dirs())?;
    let stage = Stage::create()?;
    let mut broken: Vec<(String, String)> = Vec::new();
    for project in &projects {
        // A fixture file that does not parse is the author's mistake to fix before anything runs.
        fixtures::read(&project.dir)?;
        if let Err(why) = build_once(project, &stage).await {
            eprintln!("corral test: {}: {why}", project.name);
            broken.push((project.name.clone(), why));
        }
    }
    let host_args = dev.host_args(stage.path())?;
    let (host, _) = build_host(&host_args, ServerOptions::default(), Path::new(":memory:"), Durability::Process, TaskSettings::default()).await?;
    host.registry().loaded().await;
    let catalog = host.registry().snapshot();

    let mut runs: Vec<(String, PluginRun)> = Vec::new();
    for project in &projects {
        if let Some((_, why)) = broken.iter().find(|(name, _)| *name == project.name) {
            runs.push((project.name.clone(), PluginRun::Broken(why.clone())));
            continue;
        }
        if let Some(refused) = catalog.refused.iter().find(|r| r.plugin == project.name) {
            eprintln!("corral test: {}: the host refuses the build: {}", project.name, refused.message);
            runs.push((project.name.clone(), PluginRun::Broken(format!("the host refuses the build: {}", refused.message))));
            continue;
        }
        for warning in super::schemas::warnings(&catalog, &project.name) {
            eprintln!("corral test: {}: warning: {warning}", project.name);
        }
        let fixtures = fixtures::read(&project.dir)?;
        if fixtures.is_empty() {
            eprintln!("corral test: {}: no fixtures ({} is missing or empty)", project.name, fixtures::FILE);
        }
        let outcomes = client::run_all(&host, &fixtures).await?;
        println!("{}", client::lines(&project.name, &outcomes));
        runs.push((project.name.clone(), PluginRun::Ran(outcomes)));
    }
    host.shutdown().await;

    if let Some(file) = &args.junit {
        let xml = junit::report(&runs)?;
        std::fs::write(file, xml).map_err(|e| anyhow::anyhow!("--junit {}: {e}", file.display()))?;
    }
    let passed = runs.iter().all(|(_, run)| match run {
        PluginRun::Ran(outcomes) => outcomes.iter().all(|o| o.verdict == Verdict::Pass),
        PluginRun::Broken(_) => false,
    });
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Builds `project` and stages the result; the error is the build's trimmed output.
async fn build_once(project: &Project, stage: &Stage) -> Result<(), String> {
    let done = build::run(&project.dir, &project.build.command).await.map_err(|e| format!("cannot run `{}`: {e}", project.build.command))?;
    if !done.success {
        return Err(format!("build failed ({}):\n{}\n{}", project.build.command, trim::trim(&done.output), done.status));
    }
    stage.put(project).map(drop).map_err(|e| format!("{e:#}"))
}
