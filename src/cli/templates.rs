//! The project templates of `corral new`, embedded in the binary.
//!
//! Text in a template may say `{{name}}` (the plugin's name, as given), `{{tool}}` (its starter
//! tool: the name with `-` turned into `_`) and `{{crate}}` (the same, as Rust names the
//! component file); paths may say `{{name}}` too.

/// One file of a template.
pub struct File {
    pub path: &'static str,
    pub text: &'static str,
    pub executable: bool,
}

macro_rules! file {
    ($path:literal, $source:literal) => {
        File { path: $path, text: include_str!(concat!("../../", $source)), executable: false }
    };
    ($path:literal, $source:literal, executable) => {
        File { path: $path, text: include_str!(concat!("../../", $source)), executable: true }
    };
}

/// Files every project gets, whatever its language.
pub const COMMON: &[File] = &[file!("{{name}}.toml", "templates/common/plugin.toml")];

pub const RUST: &[File] = &[
    file!("Cargo.toml", "templates/rust/Cargo.toml"),
    file!("src/lib.rs", "templates/rust/src/lib.rs"),
    file!("build.sh", "templates/rust/build.sh", executable),
    file!("README.md", "templates/rust/README.md"),
    file!(".gitignore", "templates/rust/gitignore"),
    // The SDK, vendored: it is not on crates.io.
    file!("corral-plugin/Cargo.toml", "sdk/rust/Cargo.toml"),
    file!("corral-plugin/src/lib.rs", "sdk/rust/src/lib.rs"),
    file!("corral-plugin/src/host.rs", "sdk/rust/src/host.rs"),
    file!("corral-plugin/src/output.rs", "sdk/rust/src/output.rs"),
    file!("corral-plugin/src/schema.rs", "sdk/rust/src/schema.rs"),
    file!("corral-plugin/src/testing.rs", "sdk/rust/src/testing.rs"),
    file!("corral-plugin/src/tool.rs", "sdk/rust/src/tool.rs"),
    file!("corral-plugin/src/wasm.rs", "sdk/rust/src/wasm.rs"),
    file!("corral-plugin/wit/plugin.wit", "wit/plugin.wit"),
];

pub const JS: &[File] = &[];
pub const PYTHON: &[File] = &[];
pub const C: &[File] = &[];
