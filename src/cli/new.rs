//! `corral new NAME [--lang rust|js|python|c]`: a plugin project that builds on the first try.
//!
//! The project holds the contract (`wit/plugin.wit`, or the vendored Rust SDK that carries it),
//! a starter tool with a test, a manifest `NAME.toml` and `build.sh`, which puts
//! `dist/NAME.wasm` and its manifest side by side for `corral serve --plugins dist`; the
//! manifest's `[build]` table names that script, so `corral dev` and `corral test` build the
//! project, and `fixtures.toml` holds calls of the starter tool with their expected results.
//! JavaScript, Python and C projects are on the newest contract (0.3.0); the JavaScript and
//! Python ones carry the same small helper layer (typed arguments, progress, checkpoints and a
//! host double for their tests) and a second tool that checkpoints and resumes. `--secret NAME`
//! declares a caller secret ([`super::new_secrets`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{Lang, NewArgs};
use super::new_secrets;
use super::templates::{self, File};

/// Creates the project and says how to build and serve it.
pub fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    let project = create(&args.dir, &args.name, args.lang, &args.secrets)?;
    let shown = project.display();
    println!("created {shown} ({:?} plugin `{}`)", args.lang, args.name);
    for secret in &args.secrets {
        println!("  it reads the caller secret {secret} from its environment; give yours with");
        println!("  `corral secrets set {} {secret} --principal local` (and serve with --secrets-key-file)", args.name);
    }
    println!("next:");
    println!("  corral dev {shown}        # builds, serves MCP on stdio, rebuilds on every save");
    println!("  or: cd {shown} && ./build.sh && corral serve --plugins dist");
    Ok(ExitCode::SUCCESS)
}

/// Writes the project `DIR/NAME`, which must not exist yet (or be empty), declaring the caller
/// secrets `secrets`, and returns its path.
pub fn create(dir: &Path, name: &str, lang: Lang, secrets: &[String]) -> anyhow::Result<PathBuf> {
    check_name(name).map_err(anyhow::Error::msg)?;
    new_secrets::check_distinct(secrets).map_err(anyhow::Error::msg)?;
    let fill = |text: &str| {
        fill(text, name)
            .replace("{{secret_tables}}", &new_secrets::manifest_tables(name, secrets))
            .replace("{{secret_reads}}", &new_secrets::rust_reads(name, secrets))
    };
    let project = dir.join(name);
    if project.exists() && std::fs::read_dir(&project).map(|mut d| d.next().is_some()).unwrap_or(true) {
        anyhow::bail!("{} already exists and is not empty; pick another name or --dir", project.display());
    }
    let files: &[File] = match lang {
        Lang::Rust => templates::RUST,
        Lang::Js => templates::JS,
        Lang::Python => templates::PYTHON,
        Lang::C => templates::C,
    };
    for file in templates::COMMON.iter().chain(files) {
        let path = project.join(fill(file.path));
        // Text gets its placeholders filled; binary files (an object file) are copied as they are.
        let contents = match std::str::from_utf8(file.contents) {
            Ok(text) => fill(text).into_bytes(),
            Err(_) => file.contents.to_vec(),
        };
        write(&path, &contents, file.executable)?;
    }
    Ok(project)
}

/// Plugin names become file, directory, crate and tool names, so they keep to what all accept.
pub fn check_name(name: &str) -> Result<(), String> {
    let starts_with_letter = name.starts_with(|c: char| c.is_ascii_lowercase());
    let chars_ok = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if starts_with_letter && chars_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(format!("plugin name {name:?} must be 1-64 characters of a-z, 0-9, `-` and `_`, starting with a letter"))
    }
}

fn fill(text: &str, name: &str) -> String {
    let snake = name.replace('-', "_");
    text.replace("{{name}}", name).replace("{{tool}}", &snake).replace("{{crate}}", &snake)
}

fn write(path: &Path, contents: &[u8], executable: bool) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, contents).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| anyhow::anyhow!("cannot make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_suit_files_crates_and_tools() {
        for good in ["weather", "my-tool", "a1_b2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "1st", "Caps", "dot.ted", "sp ace", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn placeholders_are_filled() {
        assert_eq!(fill("{{name}} {{tool}} {{crate}}.wasm", "my-tool"), "my-tool my_tool my_tool.wasm");
    }

    #[test]
    fn every_language_gets_a_manifest_a_build_script_and_no_placeholder_left() {
        for lang in [Lang::Rust, Lang::Js, Lang::Python, Lang::C] {
            let dir = tempfile::tempdir().unwrap();
            let project = create(dir.path(), "my-tool", lang, &[]).unwrap();
            assert!(project.join("my-tool.toml").is_file(), "{lang:?}");
            assert!(project.join("build.sh").is_file(), "{lang:?}");
            let build = crate::config::build_spec(&project.join("my-tool.toml"), "my-tool").unwrap().expect("a [build] table");
            assert_eq!((build.command.as_str(), build.output.to_str().unwrap()), ("./build.sh", "dist/my-tool.wasm"), "{lang:?}");
            let fixtures = crate::cli::dev::read_fixtures(&project).unwrap();
            assert!(fixtures.iter().any(|f| f.tool == "my_tool"), "{lang:?}: a fixture of the starter tool");
            for entry in walk(&project) {
                let text = std::fs::read_to_string(&entry).unwrap_or_default();
                assert!(!text.contains("{{"), "{lang:?}: {} keeps a placeholder", entry.display());
            }
            assert!(create(dir.path(), "my-tool", lang, &[]).unwrap_err().to_string().contains("already exists"));
        }
    }

    #[test]
    fn a_declared_secret_is_in_the_manifest_and_the_rust_tool_reads_it() {
        let secrets = ["API_TOKEN".to_owned(), "CHAT_TOKEN".to_owned()];
        for lang in [Lang::Rust, Lang::Js, Lang::Python, Lang::C] {
            let dir = tempfile::tempdir().unwrap();
            let project = create(dir.path(), "my-tool", lang, &secrets).unwrap();
            let manifest = crate::config::plugin_manifest(&project.join("my-tool.wasm"), &crate::config::Limits::default(), u64::MAX, &[])
                .unwrap_or_else(|e| panic!("{lang:?}: {e}"));
            let declared: Vec<_> = manifest.secrets.iter().map(|s| (s.name.as_str(), s.scope, s.description.as_str())).collect();
            assert_eq!(
                declared,
                vec![
                    ("API_TOKEN", crate::config::SecretScope::Caller, "Your API_TOKEN for the service my-tool calls"),
                    ("CHAT_TOKEN", crate::config::SecretScope::Caller, "Your CHAT_TOKEN for the service my-tool calls")
                ],
                "{lang:?}"
            );
            for entry in walk(&project) {
                let text = std::fs::read_to_string(&entry).unwrap_or_default();
                assert!(!text.contains("{{"), "{lang:?}: {} keeps a placeholder", entry.display());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let project = create(dir.path(), "my-tool", Lang::Rust, &secrets).unwrap();
        let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
        assert!(lib.contains(r#"std::env::var("API_TOKEN")"#) && lib.contains(r#"std::env::var("CHAT_TOKEN")"#), "{lib}");
        let twice = create(dir.path(), "other", Lang::Rust, &["A".to_owned(), "A".to_owned()]).unwrap_err();
        assert!(twice.to_string().contains("--secret A is given twice"), "{twice}");
        assert!(!dir.path().join("other").exists(), "nothing written");
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
        files
    }
}
