//! `corral completions SHELL` and `corral man`: the shell completions and the manual pages,
//! generated from the clap definitions the binary parses with, so they cannot drift from the
//! flags. Both write to stdout for a packager to redirect (`corral completions bash >
//! /usr/share/bash-completion/completions/corral`); `corral man --dir DIR` writes one page per
//! subcommand (`corral.1`, `corral-serve.1`, `corral-tasks-list.1`, ...), as `man corral-serve`
//! expects.
//!
//! The command is passed in rather than read from [`super::args`], which names these arguments.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use clap_complete::Shell;

/// `corral completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `corral man`.
#[derive(Args)]
pub struct ManArgs {
    /// Write a page per subcommand (corral.1, corral-serve.1, ...) into this directory instead of
    /// printing corral(1) on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell`.
pub fn completions(args: CompletionsArgs, mut command: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    let name = command.get_name().to_owned();
    clap_complete::generate(args.shell, &mut command, name, out);
    Ok(())
}

/// Prints corral(1) in roff, or writes every page into `args.dir`.
pub fn man(args: ManArgs, command: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    // Every page names corral's version in its footer, a subcommand's too.
    let source = format!("corral {}", command.get_version().unwrap_or_default());
    match args.dir {
        None => page(command, &source).render(out).context("writing the man page"),
        Some(dir) => write_pages(command, &source, &dir),
    }
}

/// One page per visible subcommand, named as `man` looks them up: `corral-tasks-list.1`.
fn write_pages(command: clap::Command, source: &str, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut pending = vec![command];
    while let Some(command) = pending.pop() {
        pending.extend(command.get_subcommands().filter(|sub| !sub.is_hide_set()).cloned());
        let page = page(command, source);
        let path = dir.join(page.get_filename());
        let mut text = Vec::new();
        page.render(&mut text).context("rendering a man page")?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A page dated by the commit it documents (not the day it was generated, so two builds of one
/// commit give the same pages).
fn page(command: clap::Command, source: &str) -> clap_mangen::Man {
    clap_mangen::Man::new(command).manual("corral manual").source(source).date(env!("CORRAL_COMMIT_DATE"))
}
