//! Subcommands for plugin authors: `corral new` and `corral inspect`.

pub mod inspect;
pub mod new;
mod templates;
