//! A plugin project's `[build]` table: how `corral dev` and `corral test` turn its sources into
//! the component a host serves.
//!
//! It lives in the plugin's manifest (`NAME.toml`) because that is the one file every project
//! has and the host already reads; a host serving the built component ignores the table, but
//! still refuses one it could not parse, so a typo shows wherever the manifest goes.
//!
//! ```toml
//! [build]
//! command = "./build.sh"            # run by `sh -c` in the project directory
//! output = "dist/NAME.wasm"         # the component it writes (this is the default)
//! watch = ["src", "Cargo.toml"]     # what to watch (default: the whole project)
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A validated `[build]` table, paths relative to the project directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildSpec {
    /// A shell command line, run in the project directory.
    pub command: String,
    /// The component the command writes.
    pub output: PathBuf,
    /// Files and directories whose changes call for a build; empty: the whole project.
    pub watch: Vec<PathBuf>,
}

/// `[build]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BuildFile {
    command: String,
    output: Option<PathBuf>,
    #[serde(default)]
    watch: Vec<PathBuf>,
}

impl BuildFile {
    /// Checks the table; `name` is the plugin's (the default output is `dist/NAME.wasm`).
    /// Errors are `(key, message)`.
    pub(super) fn check(self, name: &str) -> Result<BuildSpec, (&'static str, String)> {
        if self.command.trim().is_empty() {
            return Err(("command", "is empty: name the command that builds the component, e.g. \"./build.sh\"".into()));
        }
        let output = self.output.unwrap_or_else(|| PathBuf::from(format!("dist/{name}.wasm")));
        inside("output", &output)?;
        if output.extension().is_none_or(|e| e != "wasm") {
            return Err(("output", format!("{} is not a .wasm file", output.display())));
        }
        for path in &self.watch {
            inside("watch", path)?;
        }
        Ok(BuildSpec { command: self.command, output, watch: self.watch })
    }
}

/// A path must stay inside the project: relative, without `..`.
fn inside(key: &'static str, path: &Path) -> Result<(), (&'static str, String)> {
    let escapes = path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir));
    match escapes {
        true => Err((key, format!("{} must be relative to the project, without `..`", path.display()))),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BuildSpec, (&'static str, String)> {
        toml::from_str::<BuildFile>(text).unwrap().check("hello")
    }

    #[test]
    fn the_output_defaults_to_dist_name_wasm() {
        let spec = parse("command = \"./build.sh\"").unwrap();
        assert_eq!(spec, BuildSpec { command: "./build.sh".into(), output: "dist/hello.wasm".into(), watch: vec![] });
    }

    #[test]
    fn paths_stay_inside_the_project_and_the_output_is_a_component() {
        assert_eq!(parse("command = \"make\"\noutput = \"/tmp/x.wasm\"").unwrap_err().0, "output");
        assert_eq!(parse("command = \"make\"\nwatch = [\"../lib\"]").unwrap_err().0, "watch");
        assert!(parse("command = \"make\"\noutput = \"out/x.js\"").unwrap_err().1.contains("not a .wasm"));
        assert_eq!(parse("command = \" \"").unwrap_err().0, "command");
    }

    #[test]
    fn an_unknown_key_is_refused() {
        assert!(toml::from_str::<BuildFile>("command = \"make\"\ncomand = \"x\"").is_err());
    }
}
