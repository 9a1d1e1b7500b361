//! What a packager takes from the binary: `--version` naming the commit, the shell completions
//! and the man pages, all generated from the clap definitions.

use std::path::Path;
use std::process::{Command, Output};

fn corral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral")).args(args).output().expect("running corral")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "corral failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).expect("utf-8 output")
}

/// The subcommands as `corral --help` lists them (a name two spaces in; wrapped descriptions
/// go deeper), so the checks below follow the command line.
fn subcommands() -> Vec<String> {
    let help = stdout(&corral(&["--help"]));
    let listed = help.split("Commands:").nth(1).expect("--help lists the commands").split("Options:").next().unwrap();
    let names: Vec<String> = listed
        .lines()
        .filter_map(|line| line.strip_prefix("  ").filter(|rest| !rest.starts_with(' '))?.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 10, "too few subcommands found in --help: {names:?}");
    names
}

fn git(args: &[&str]) -> Option<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let output = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8(output.stdout).unwrap().trim().to_owned())
}

#[test]
fn version_names_the_commit_built_from() {
    let short = stdout(&corral(&["-V"]));
    let long = stdout(&corral(&["--version"]));
    let package = env!("CARGO_PKG_VERSION");
    assert!(short.starts_with(&format!("corral {package} (")), "{short}");
    assert!(long.starts_with(short.trim_end()), "--version begins with -V's line: {long}");
    let commit = long.lines().find_map(|line| line.strip_prefix("commit: ")).expect("--version has a commit line").to_owned();

    // Built from a git work tree whose top is the crate (a clone, a worktree): its HEAD now,
    // since cargo reruns the build script when HEAD moves.
    let in_work_tree = git(&["rev-parse", "--show-toplevel"])
        .is_some_and(|top| Path::new(&top).canonicalize().ok() == Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().ok());
    if in_work_tree && std::env::var_os("CORRAL_BUILD_COMMIT").is_none() {
        let head = git(&["rev-parse", "HEAD"]).expect("git rev-parse HEAD");
        let date = git(&["log", "-1", "--format=%cs"]).expect("git log");
        assert_eq!(commit, head);
        assert_eq!(short.trim_end(), format!("corral {package} ({} {date})", &head[..12]));
    } else {
        assert!(commit == "unknown" || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())), "{commit}");
    }
}

#[test]
fn bash_completion_completes_every_subcommand() {
    let script = stdout(&corral(&["completions", "bash"]));
    assert!(script.contains("complete -F _corral"), "not a bash completion for corral:\n{script}");
    for name in subcommands() {
        assert!(script.contains(&format!("corral,{name})")), "bash completion lacks the subcommand {name}");
    }
    // Flags of a subcommand, and the values of an enumerated one.
    assert!(script.contains("--plugins"));
    assert!(script.contains("--log-format"));
}

#[test]
fn zsh_and_fish_completions_name_the_subcommands() {
    let zsh = stdout(&corral(&["completions", "zsh"]));
    let fish = stdout(&corral(&["completions", "fish"]));
    assert!(zsh.starts_with("#compdef corral"), "{}", &zsh[..zsh.len().min(200)]);
    for name in subcommands() {
        assert!(zsh.contains(&format!("'{name}:")), "zsh completion lacks {name}");
        assert!(fish.contains(&format!("-a \"{name}\"")), "fish completion lacks {name}");
    }
    assert!(fish.contains("complete -c corral"));
}

#[test]
fn an_unknown_shell_is_refused_by_name() {
    let output = corral(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("'tcsh'") && stderr.contains("bash"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn man_prints_corral_1_in_roff() {
    let page = stdout(&corral(&["man"]));
    assert!(page.contains("\n.TH corral 1"), "not roff with a title line:\n{}", &page[..page.len().min(300)]);
    assert!(page.contains(&format!("corral {}", env!("CARGO_PKG_VERSION"))), "the page names no version");
    for name in subcommands() {
        assert!(page.contains(&format!("corral\\-{name}(1)")), "corral(1) does not point to corral-{name}(1)");
    }
}

#[test]
fn man_dir_writes_a_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    stdout(&corral(&["man", "--dir", out.to_str().unwrap()]));
    let mut pages: Vec<String> = std::fs::read_dir(&out).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    assert!(pages.contains(&"corral.1".to_owned()), "{pages:?}");
    for name in subcommands() {
        assert!(pages.contains(&format!("corral-{name}.1")), "no page for {name}: {pages:?}");
    }
    // Nested subcommands get pages of their own, as `man corral-tasks-list` looks them up.
    assert!(pages.contains(&"corral-tasks-list.1".to_owned()), "{pages:?}");
    let serve = std::fs::read_to_string(out.join("corral-serve.1")).unwrap();
    // Dated by the commit (not the day of the build), and versioned like corral(1).
    let package = env!("CARGO_PKG_VERSION");
    let version = stdout(&corral(&["-V"]));
    let date = version.trim_end().trim_end_matches(')').rsplit(' ').next().filter(|d| d.len() == 10 && d.as_bytes()[4] == b'-').unwrap_or("");
    assert!(serve.contains(&format!(".TH corral-serve 1 {date} \"corral {package} (")), "{}", &serve[..serve.len().min(300)]);
    assert!(serve.contains("\\-\\-plugins"), "the serve page documents --plugins");
}

#[test]
fn man_into_an_unwritable_place_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let output = corral(&["man", "--dir", file.join("man1").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a-file/man1"), "{stderr}");
}
