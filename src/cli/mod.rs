//! Subcommands for plugin authors and operators: `corral new`, `corral inspect`, and
//! `corral publish` / `corral pull` (plugins from OCI registries).

pub mod inspect;
pub mod new;
pub mod publish;
pub mod pull;
mod templates;
