//! What `corral --version` says: the package version and the commit it was built from.
//!
//! The commit is set by `build.rs`, which says where it comes from in a clone, a `cargo package`
//! crate and a `git archive` tarball (`unknown` when none of them names one).

/// `corral -V`: `0.1.0 (0123456789ab 2026-12-05)`.
pub const SHORT: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CORRAL_COMMIT_SHORT"), ")");

/// `corral --version`: the short line, then the full commit hash on a line of its own.
pub const LONG: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CORRAL_COMMIT_SHORT"), ")\ncommit: ", env!("CORRAL_COMMIT"));
