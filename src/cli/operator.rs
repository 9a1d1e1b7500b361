//! The operator of a command that changes something (`corral tasks`, `corral secrets`): who they
//! are, and the audit trail their action goes to, written out before the command exits.

use anyhow::anyhow;

use super::args::ActorArgs;
use crate::audit::{Audit, Destination, OperatorAction, OperatorRecord, SecretNamed};
use crate::secrets::Holder;

/// Who runs an operator's command, and the audit trail their actions go to.
pub(super) struct Operator {
    /// `--operator`, else the local user.
    pub name: String,
    audit: Audit,
}

impl Operator {
    /// The operator `args` name, with the trail opened now: a trail that cannot be written stops
    /// the command before it changes anything.
    pub fn of(args: &ActorArgs) -> anyhow::Result<Operator> {
        let name = match &args.operator {
            Some(name) => name.clone(),
            None => local_user(),
        };
        let audit = match &args.audit_log {
            Some(path) => Audit::open(Destination::File(path.clone()), false).map_err(|e| anyhow!("--audit-log {}: {e}", path.display()))?,
            None => Audit::off(),
        };
        Ok(Operator { name, audit })
    }

    /// A record of `action` by this operator, done, now.
    pub fn record(&self, action: OperatorAction) -> OperatorRecord {
        OperatorRecord::new(Some(self.name.clone()), action)
    }

    /// A record of `action` on `principal`'s secret `name` of `plugin`, done, now.
    pub fn record_secret(&self, action: OperatorAction, principal: &Holder, plugin: &str, name: &str) -> OperatorRecord {
        let mut record = self.record(action);
        record.secret = Some(SecretNamed { principal: principal.to_string(), plugin: plugin.to_owned(), name: name.to_owned() });
        record
    }

    /// Keeps `record` and writes it out before the command exits.
    pub fn keep(&self, record: OperatorRecord) {
        self.audit.operator(record);
        self.audit.close();
    }
}

/// The user running the command: `$USER` (or `$LOGNAME`), else their uid.
fn local_user() -> String {
    let named = ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty() && !u.contains(char::is_whitespace)));
    // SAFETY: getuid has no preconditions and cannot fail.
    named.unwrap_or_else(|| format!("uid-{}", unsafe { libc::getuid() }))
}
