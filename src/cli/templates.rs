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
    file!("fixtures.toml", "templates/rust/fixtures.toml"),
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

/// JavaScript on contract 0.3.0: the helper layer (`corral.js`: typed arguments, progress,
/// checkpoints, a host double for `node --test`), the tools written on it, and their tests.
pub const JS: &[File] = &[
    file!("app.js", "templates/js/app.js"),
    file!("corral.js", "templates/js/corral.js"),
    file!("tools.js", "templates/js/tools.js"),
    file!("tools.test.js", "templates/js/tools.test.js"),
    file!("package.json", "templates/js/package.json"),
    file!("package-lock.json", "templates/js/package-lock.json"),
    file!("build.sh", "templates/js/build.sh", executable),
    file!("fixtures.toml", "templates/js/fixtures.toml"),
    file!("README.md", "templates/js/README.md"),
    file!(".gitignore", "templates/js/gitignore"),
    file!("wit/plugin.wit", "wit/v0.3/plugin.wit"),
];

/// Python on contract 0.3.0: the same helper layer as JavaScript's (`corral_kit.py`), the
/// tools written on it, and their tests.
pub const PYTHON: &[File] = &[
    file!("app.py", "templates/python/app.py"),
    file!("corral_kit.py", "templates/python/corral_kit.py"),
    file!("tools.py", "templates/python/tools.py"),
    file!("test_app.py", "templates/python/test_app.py"),
    file!("requirements.txt", "templates/python/requirements.txt"),
    file!("build.sh", "templates/python/build.sh", executable),
    // The same tools as JavaScript's, so the same fixtures.
    file!("fixtures.toml", "templates/js/fixtures.toml"),
    file!("README.md", "templates/python/README.md"),
    file!(".gitignore", "templates/python/gitignore"),
    file!("wit/plugin.wit", "wit/v0.3/plugin.wit"),
];

/// C on contract 0.3.0: a minimal tool, and the bindings `wit-bindgen c` 0.63.0 made from
/// `wit/v0.3` world `plugin` (`templates/c/gen`), so that building needs no wit-bindgen.
pub const C: &[File] = &[
    file!("greet.c", "templates/c/greet.c"),
    // The JSON helper is the `checksum` example's.
    file!("json.c", "plugins/checksum/json.c"),
    file!("json.h", "plugins/checksum/json.h"),
    file!("gen/plugin.c", "templates/c/gen/plugin.c"),
    file!("gen/plugin.h", "templates/c/gen/plugin.h"),
    file!("gen/plugin_component_type.o", "templates/c/gen/plugin_component_type.o"),
    file!("build.sh", "templates/c/build.sh", executable),
    file!("fixtures.toml", "templates/common/fixtures.toml"),
    file!("README.md", "templates/c/README.md"),
    file!(".gitignore", "templates/c/gitignore"),
    file!("wit/plugin.wit", "wit/v0.3/plugin.wit"),
];
