//! Who runs an operator's command that changes something (`corral tasks cancel|purge`, `corral
//! secrets set|delete|rotate-key`), and the audit trail their action is recorded in: the same
//! two flags, checked the same way, wherever an operator acts from the command line.

use std::path::PathBuf;

use clap::Args;

/// Who acts, and where it is recorded.
#[derive(Args, Clone)]
pub struct ActorArgs {
    /// Who acts, as the audit trail (and a cancelled task's status message) names them.
    /// [default: the user running the command ($USER)]
    #[arg(long = "operator", value_name = "NAME", value_parser = operator_name)]
    pub operator: Option<String>,
    /// Appends a record of the action to this audit trail (the hosts' `--audit-log` file).
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<PathBuf>,
}

/// An operator's name: 1 to 64 printable characters without spaces.
fn operator_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().count() > 64 || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("an operator's name is 1 to 64 characters, without spaces".into());
    }
    Ok(s.to_owned())
}
