//! The `corral` command line, in one home: [`args`] parses and validates every flag, [`host`]
//! turns the flags into settings and a running host, and each subcommand has its module.

pub mod args;
pub mod call;
pub mod compile;
pub mod host;
pub mod inspect;
pub mod new;
pub mod serve;
mod templates;
pub mod tools;
