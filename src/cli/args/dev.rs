//! `corral dev`'s and `corral test`'s flags. The host it runs takes the defaults of `corral serve` (and its
//! `CORRAL_*` variables), parsed by the same [`HostArgs`] and [`HttpArgs`] parsers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;

use super::{HostArgs, HttpArgs};
use crate::config;
use crate::runtime::Compiler;

/// The compiler `corral dev` and `corral test` use unless told: Winch compiles the largest
/// example (Python, 30 MB) several times faster than Cranelift (BENCHMARKS.md, "corral dev").
const DEV_COMPILER: &str = "winch";

/// How `corral dev` and `corral test` compile each build.
#[derive(clap::Args, Clone)]
pub struct CompileArgs {
    /// Where precompiled plugins are kept [default: a per-user cache directory].
    #[arg(long, env = "CORRAL_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every build instead of using the compile cache.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// What compiles each build: `winch` (wasmtime's baseline compiler) compiles several times
    /// faster than `cranelift` into slower code, which is what a save-and-call loop wants.
    #[arg(long, env = "CORRAL_COMPILER", default_value = DEV_COMPILER, value_parser = Compiler::parse)]
    pub compiler: Compiler,
}

/// `corral dev`.
#[derive(clap::Args)]
pub struct DevArgs {
    /// Plugin projects, or directories holding them (one level down) [default: .]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// How long the sources must stay unchanged after a save before a build starts.
    #[arg(long, default_value = "100ms", value_parser = config::parse_duration)]
    pub debounce: Duration,
    /// The compile cache and the compiler.
    #[command(flatten)]
    pub compiling: CompileArgs,
}

impl DevArgs {
    /// The directories to look for projects in.
    pub fn dirs(&self) -> Vec<PathBuf> {
        match self.dirs.is_empty() {
            true => vec![PathBuf::from(".")],
            false => self.dirs.clone(),
        }
    }

    /// The host's flags: serving `stage` (where each good build is put), everything else as
    /// `corral serve` defaults it.
    pub fn host_args(&self, stage: &Path) -> anyhow::Result<HostArgs> {
        let mut argv = vec!["corral dev".into(), "--plugins".into(), stage.as_os_str().to_owned()];
        let compiling = &self.compiling;
        if let Some(dir) = &compiling.cache_dir {
            argv.extend(["--cache-dir".into(), dir.as_os_str().to_owned()]);
        }
        if compiling.no_cache {
            argv.push("--no-cache".into());
        }
        argv.extend(["--compiler".into(), compiling.compiler.name().into()]);
        Ok(Host::try_parse_from(argv)?.host)
    }

    /// The HTTP transport's flags for `--http`.
    pub fn http_args(&self) -> anyhow::Result<HttpArgs> {
        let mut argv = vec!["corral dev".to_owned()];
        if let Some(addr) = self.http {
            argv.extend(["--http".into(), addr.to_string()]);
        }
        Ok(Http::try_parse_from(argv)?.http)
    }
}

#[derive(Parser)]
struct Host {
    #[command(flatten)]
    host: HostArgs,
}

#[derive(Parser)]
struct Http {
    #[command(flatten)]
    http: HttpArgs,
}

/// `corral test`.
#[derive(clap::Args)]
pub struct TestArgs {
    /// Plugin projects, or directories holding them (one level down) [default: .]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Also write the outcomes as JUnit XML to FILE, for CI systems.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The compile cache and the compiler.
    #[command(flatten)]
    pub compiling: CompileArgs,
}

impl TestArgs {
    /// The same host as `corral dev` would run for these projects.
    pub fn as_dev(&self) -> DevArgs {
        DevArgs { dirs: self.dirs.clone(), http: None, debounce: Duration::ZERO, compiling: self.compiling.clone() }
    }
}
