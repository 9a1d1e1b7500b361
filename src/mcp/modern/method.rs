//! The methods of the 2026-07-28 era corral serves.
//!
//! Their own enum rather than more variants of [`crate::mcp::Method`]: the two eras have
//! different method sets (`initialize`, `ping`, `logging/setLevel`, resource subscriptions,
//! `tasks/result` and `tasks/list` are gone; `server/discover`, `subscriptions/listen` and
//! `tasks/update` are new), and a name outside this set is "not found" in this era even when
//! the other era serves it.

use std::fmt;
use std::str::FromStr;

use crate::mcp::method::UnknownMethod;
use crate::mcp::Method;

/// A request method of the stateless era.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModernMethod {
    /// `server/discover`: who the server is and what it can do.
    ServerDiscover,
    /// A method both eras serve with the same meaning.
    Shared(Method),
    /// `subscriptions/listen`: a long-lived stream of change notifications.
    SubscriptionsListen,
    /// `tasks/update` (tasks extension): input responses for a task.
    TasksUpdate,
}

impl ModernMethod {
    /// The methods both eras serve.
    const SHARED: [Method; 10] = [
        Method::ToolsList,
        Method::ToolsCall,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::PromptsList,
        Method::PromptsGet,
        Method::CompletionComplete,
        Method::TasksGet,
        Method::TasksCancel,
    ];

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ModernMethod::ServerDiscover => "server/discover",
            ModernMethod::Shared(method) => method.as_str(),
            ModernMethod::SubscriptionsListen => "subscriptions/listen",
            ModernMethod::TasksUpdate => "tasks/update",
        }
    }
}

impl FromStr for ModernMethod {
    type Err = UnknownMethod;

    fn from_str(name: &str) -> Result<ModernMethod, UnknownMethod> {
        match name {
            "server/discover" => Ok(ModernMethod::ServerDiscover),
            "subscriptions/listen" => Ok(ModernMethod::SubscriptionsListen),
            "tasks/update" => Ok(ModernMethod::TasksUpdate),
            _ => ModernMethod::SHARED.into_iter().find(|m| m.as_str() == name).map(ModernMethod::Shared).ok_or_else(|| UnknownMethod(name.to_owned())),
        }
    }
}

impl fmt::Display for ModernMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_the_era_lacks_are_not_found() {
        for gone in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list", "unknown/method"] {
            assert!(gone.parse::<ModernMethod>().is_err(), "{gone}");
        }
        for name in ["server/discover", "tools/call", "tasks/get", "tasks/update", "subscriptions/listen", "completion/complete"] {
            assert_eq!(name.parse::<ModernMethod>().unwrap().as_str(), name);
        }
    }
}
