//! `corral compile`: fill the compile cache, so the next start maps plugins instead of compiling.

use std::process::ExitCode;

use super::args::CompileArgs;
use crate::runtime::{CacheOutcome, Runtime};

/// Compiles every plugin into the cache; exits 1 if any plugin is not a valid component.
pub fn run(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let args = &args.host;
    let Some(cache_dir) = args.cache_dir()? else { anyhow::bail!("corral compile fills the compile cache: it cannot run with --no-cache") };
    let runtime = Runtime::new(args.runtime_settings(Some(cache_dir)))?;
    let files = crate::registry::plugin_files(&args.plugins)?;
    let mut failed = 0;
    for file in &files {
        let started = std::time::Instant::now();
        let source = runtime.read_plugin(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let name = file.file_stem().unwrap_or_default().to_string_lossy();
        let status = match runtime.compile_source(&name, &source) {
            Ok((_, outcome)) => describe(outcome),
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

/// What the cache did with one plugin. The runtime was given a cache, so there is always an
/// outcome; `None` is described rather than asserted.
fn describe(outcome: Option<CacheOutcome>) -> String {
    match outcome {
        Some(CacheOutcome::Hit) => "already cached".to_owned(),
        Some(CacheOutcome::Stored) => "compiled and cached".to_owned(),
        Some(CacheOutcome::Replaced(why)) => format!("compiled and cached (replaced an entry: {why})"),
        Some(CacheOutcome::NotStored(why)) => format!("compiled, NOT cached: {why}"),
        None => "compiled, NOT cached: the runtime has no cache".to_owned(),
    }
}
