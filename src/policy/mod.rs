//! Who may list and use what, and how much: the operator's policy file (`--policy FILE`).
//!
//! The file is a small declarative TOML table of rules of our own ([`file`]), not a policy
//! engine: what an MCP host decides is "may this principal see and use this tool, resource or
//! prompt", which a table of `allow`/`deny` rules over names answers, and the README explains
//! the choice. A rule names *who* it is for ([`Who`]: a token's name, an OAuth issuer, subject,
//! scope, group or client, the local user, or anyone) and *what* it covers (plugins, tools,
//! resources, prompts, by name or `*` pattern). A `deny` that covers a target wins; else an
//! `allow` that covers it allows; else the target is denied. `[[limit]]` rules give a principal
//! a call rate (a token bucket) and a cap on its unfinished tasks; an `allow` with
//! `tasks = "any"` makes its principals operators, who may steer every principal's tasks.
//!
//! Without a policy file nothing is decided here: everything is allowed, as before policies
//! existed. The live policy sits in [`Policies`], swapped whole when the file changes
//! ([`watch`]); a file that does not parse leaves the last good policy in force.

mod bucket;
mod file;
mod rules;
mod watch;

pub use bucket::{Buckets, Rate};
pub use file::{load, parse, PolicyError};
pub use rules::{Decision, Denial, Kind, Limit, Policy, Target, Who};
pub use watch::{watch, Policies, Reload, Watcher};

#[cfg(test)]
mod tests;
