//! The one-shot commands on a plugin directory or a plugin file: `tools`, `compile`, `call`,
//! `inspect` and `new`.

use std::path::PathBuf;

use clap::Args;

use super::HostArgs;

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
    /// Declares a secret each caller gives their own (`[secrets.NAME]`, `scope = "caller"`, in the
    /// manifest), which the plugin reads as the environment variable NAME; a Rust project's
    /// starter tool reads it. Repeatable.
    #[arg(long = "secret", value_name = "NAME", value_parser = secret_name)]
    pub secrets: Vec<String>,
}

fn secret_name(name: &str) -> Result<String, String> {
    crate::config::check_secret_name(name).map(|()| name.to_owned())
}
