//! The project templates of `corral new`, embedded in the binary.
//!
//! Text in a template may say `{{name}}` (the plugin's name, as given), `{{tool}}` (its starter
//! tool: the name with `-` turned into `_`) and `{{crate}}` (the same, as Rust names the
//! component file); paths may say `{{name}}` too.

/// One file of a template.
pub struct File {
    pub path: &'static str,
    pub contents: &'static [u8],
    pub executable: bool,
}

macro_rules! file {
    ($path:literal, $source:literal) => {
        File { path: $path, contents: include_bytes!(concat!("../../", $source)), executable: false }
    };
    ($path:literal, $source:literal, executable) => {
        File { path: $path, contents: include_bytes!(concat!("../../", $source)), executable: true }
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
    file!("corral-plugin/src/checkpoint.rs", "sdk/rust/src/checkpoint.rs"),
    file!("corral-plugin/src/host.rs", "sdk/rust/src/host.rs"),
    file!("corral-plugin/src/input.rs", "sdk/rust/src/input.rs"),
    file!("corral-plugin/src/message.rs", "sdk/rust/src/message.rs"),
    file!("corral-plugin/src/output.rs", "sdk/rust/src/output.rs"),
    file!("corral-plugin/src/prompt.rs", "sdk/rust/src/prompt.rs"),
    file!("corral-plugin/src/resource.rs", "sdk/rust/src/resource.rs"),
    file!("corral-plugin/src/schema.rs", "sdk/rust/src/schema.rs"),
    file!("corral-plugin/src/surface.rs", "sdk/rust/src/surface.rs"),
    file!("corral-plugin/src/testing.rs", "sdk/rust/src/testing.rs"),
    file!("corral-plugin/src/tool.rs", "sdk/rust/src/tool.rs"),
    file!("corral-plugin/src/uri_template.rs", "sdk/rust/src/uri_template.rs"),
    file!("corral-plugin/src/wasm.rs", "sdk/rust/src/wasm.rs"),
    // The contract the SDK builds against (0.3.0).
    file!("corral-plugin/wit/v0.3/plugin.wit", "wit/v0.3/plugin.wit"),
];

pub const JS: &[File] = &[
    file!("app.js", "templates/js/app.js"),
    file!("greet.js", "templates/js/greet.js"),
    file!("greet.test.js", "templates/js/greet.test.js"),
    file!("package.json", "templates/js/package.json"),
    file!("package-lock.json", "templates/js/package-lock.json"),
    file!("build.sh", "templates/js/build.sh", executable),
    file!("README.md", "templates/js/README.md"),
    file!(".gitignore", "templates/js/gitignore"),
    file!("wit/plugin.wit", "wit/plugin.wit"),
];

pub const PYTHON: &[File] = &[
    file!("app.py", "templates/python/app.py"),
    file!("test_app.py", "templates/python/test_app.py"),
    file!("requirements.txt", "templates/python/requirements.txt"),
    file!("build.sh", "templates/python/build.sh", executable),
    file!("README.md", "templates/python/README.md"),
    file!(".gitignore", "templates/python/gitignore"),
    file!("wit/plugin.wit", "wit/plugin.wit"),
];

pub const C: &[File] = &[
    file!("greet.c", "templates/c/greet.c"),
    // The JSON helper and the generated bindings are the `checksum` example's.
    file!("json.c", "plugins/checksum/json.c"),
    file!("json.h", "plugins/checksum/json.h"),
    file!("gen/plugin.c", "plugins/checksum/gen/plugin.c"),
    file!("gen/plugin.h", "plugins/checksum/gen/plugin.h"),
    file!("gen/plugin_component_type.o", "plugins/checksum/gen/plugin_component_type.o"),
    file!("build.sh", "templates/c/build.sh", executable),
    file!("README.md", "templates/c/README.md"),
    file!(".gitignore", "templates/c/gitignore"),
    file!("wit/plugin.wit", "wit/plugin.wit"),
];
