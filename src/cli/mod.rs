//! The `corral` command line, in one home: [`args`] parses and validates every flag, [`host`]
//! turns the flags into settings and a running host, and each subcommand has its module
//! (`publish` and `pull` move plugins through OCI registries, `sign` and `verify` sign
//! release artifacts, `health` is the image's health check; `tasks` looks after a task store
//! beside the hosts that use it).

pub mod args;
pub mod call;
pub mod compile;
pub mod completions;
pub mod dev;
pub mod health;
pub mod host;
pub mod inspect;
pub mod new;
mod new_secrets;
mod operator;
pub mod publish;
pub mod pull;
mod secret_files;
pub mod secrets;
pub mod serve;
pub mod sign;
mod task_db;
pub mod tasks;
mod templates;
mod token_files;
pub mod tools;
pub mod version;
