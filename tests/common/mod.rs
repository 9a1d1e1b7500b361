//! Shared helpers for the end-to-end tests: plugin fixtures and an MCP client for the binary.
#![allow(dead_code)]

pub mod client;
pub mod fixture;
pub mod generated;
pub mod modern_http;
pub mod reply;
pub mod serve;
pub mod task_wait;
pub mod wait;

use std::path::{Path, PathBuf};

// Each test crate uses only part of this.
#[allow(unused_imports)]
pub use client::*;
#[allow(unused_imports)]
pub use fixture::*;
#[allow(unused_imports)]
pub use serve::*;
#[allow(unused_imports)]
pub use task_wait::*;
#[allow(unused_imports)]
pub use wait::*;

/// Writes `DIR/NAME.wasm`; the host names the plugin after the file stem.
pub fn write_plugin(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Writes `DIR/NAME.toml`, the manifest of plugin `NAME`.
pub fn write_manifest(dir: &Path, name: &str, toml: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// `plugins/dist`, built once per test binary by `scripts/build-plugins.sh`.
pub fn example_dist() -> &'static Path {
    static DIST: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIST.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = std::process::Command::new("bash")
            .arg(root.join("scripts/build-plugins.sh"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running scripts/build-plugins.sh");
        assert!(
            out.status.success(),
            "scripts/build-plugins.sh failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        root.join("plugins/dist")
    })
}

/// Builds the test guests of `tests/guests` (`probe`, `conformance`) for wasm32-wasip2, once
/// per test binary, and returns the directory holding `probe.wasm` and `conformance.wasm`.
pub fn test_guests() -> &'static Path {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let guests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/guests");
        let target = guests.join("target");
        let out = std::process::Command::new(env!("CARGO"))
            .args(["build", "--locked", "--release", "--target", "wasm32-wasip2", "--manifest-path"])
            .arg(guests.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("running cargo for the test guests");
        assert!(out.status.success(), "building the test guests failed:\n{}", String::from_utf8_lossy(&out.stderr));
        target.join("wasm32-wasip2/release")
    })
}

/// A temp dir holding the named example plugins and their manifests.
pub fn example_plugins(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in names {
        for ext in ["wasm", "toml"] {
            let from = example_dist().join(format!("{name}.{ext}"));
            if ext == "wasm" || from.exists() {
                std::fs::copy(&from, dir.path().join(format!("{name}.{ext}"))).unwrap_or_else(|e| panic!("copying {}: {e}", from.display()));
            }
        }
    }
    dir
}

/// Writes end-to-end scenarios once and runs each over both transports:
///
/// ```ignore
/// scenarios! {
///     /// Docs and attributes go on the function and both tests.
///     fn echo_works(t: Transport) { let mut mcp = McpProcess::spawn_with(t, &[...]); ... }
///
///     /// `ignore_http(REASON)` ignores the HTTP test only.
///     ignore_http("host bug: ...")
///     fn array_is_refused(t: Transport) { ... }
/// }
/// ```
///
/// defines `fn echo_works(t: Transport)` and the tests `stdio::echo_works` and
/// `http::echo_works`. Use it once per test file (it defines the modules `stdio` and `http`);
/// the file needs `#[macro_use] mod common;`.
#[allow(unused_macros)]
macro_rules! scenarios {
    ($($(#[$attr:meta])* $(ignore_http($why:literal))? fn $name:ident($t:ident: Transport) $body:block)*) => {
        $(
            $(#[$attr])*
            fn $name($t: $crate::common::Transport) $body
        )*

        /// The scenarios over stdio.
        mod stdio {
            $(
                $(#[$attr])*
                #[test]
                fn $name() {
                    super::$name($crate::common::Transport::Stdio)
                }
            )*
        }

        /// The scenarios over Streamable HTTP.
        mod http {
            $(
                $(#[$attr])*
                $(#[ignore = $why])?
                #[test]
                fn $name() {
                    super::$name($crate::common::Transport::Http)
                }
            )*
        }
    };
}
