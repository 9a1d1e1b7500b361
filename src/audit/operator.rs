//! What an operator did: signed in (or failed to), signed out, cancelled a task, reloaded the
//! plugins, purged tasks, set or deleted a caller's secret, sealed the secrets under a new key. Kept beside the calls and the tasks' transitions so the trail says
//! who acted on a task, not only whose task it was.

use std::net::IpAddr;
use std::time::SystemTime;

/// An operator's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorAction {
    /// Signed in to the console (or tried to, with a token that is not one).
    SignIn,
    /// Signed out of the console.
    SignOut,
    /// Cancelled a task.
    Cancel,
    /// Reloaded the plugins.
    Reload,
    /// Purged tasks from the store.
    Purge,
    /// Stored a principal's secret for a plugin (`corral secrets set`).
    SecretSet,
    /// Deleted a principal's secret (`corral secrets delete`).
    SecretDelete,
    /// Sealed every stored secret again under a new key (`corral secrets rotate-key`).
    SecretRotateKey,
}

impl OperatorAction {
    /// The action's name in the trail.
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorAction::SignIn => "sign-in",
            OperatorAction::SignOut => "sign-out",
            OperatorAction::Cancel => "cancel",
            OperatorAction::Reload => "reload",
            OperatorAction::Purge => "purge",
            OperatorAction::SecretSet => "secret-set",
            OperatorAction::SecretDelete => "secret-delete",
            OperatorAction::SecretRotateKey => "secret-rotate-key",
        }
    }
}

/// One action of one operator.
#[derive(Clone, Debug)]
pub struct OperatorRecord {
    /// When it was done.
    pub time: SystemTime,
    /// Who: an admin token's name, an OAuth user, or the local user of a command; `None` for a
    /// sign-in with a token that named no one.
    pub operator: Option<String>,
    /// What they did.
    pub action: OperatorAction,
    /// Whether it was done (`false`: refused, and why is in `detail`).
    pub done: bool,
    /// Where the request came from, for the console's.
    pub address: Option<IpAddr>,
    /// The task it acted on, when one.
    pub task_id: Option<String>,
    /// The reason the operator gave.
    pub reason: Option<String>,
    /// What came of it, in a few words (`changed`, `3 purged`, why it was refused).
    pub detail: Option<String>,
    /// The secret it acted on, when one: whose, of which plugin, by name. Never a value: a
    /// record has no place for one.
    pub secret: Option<SecretNamed>,
}

/// A secret as the trail names it: its holder, plugin and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretNamed {
    /// Whose it is, as principals are written (`token:NAME`, `local`, an OAuth subject).
    pub principal: String,
    /// The plugin that declares it.
    pub plugin: String,
    /// The secret's name.
    pub name: String,
}

impl OperatorRecord {
    /// A record of `action` by `operator`, done, now; the rest empty.
    pub fn new(operator: Option<String>, action: OperatorAction) -> OperatorRecord {
        OperatorRecord { time: SystemTime::now(), operator, action, done: true, address: None, task_id: None, reason: None, detail: None, secret: None }
    }
}
