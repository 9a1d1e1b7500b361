//! The MCP methods corral serves, and the notifications it reads, as types.
//!
//! A request's method is parsed once into a [`Method`]; dispatch then matches on the enum, so
//! the compiler checks that every method is served and nothing falls through to a catch-all.
//! A name corral does not serve stays a string until the session refuses it with its
//! "not found" error.

use std::fmt;
use std::str::FromStr;

/// A request method corral serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize`
    Initialize,
    /// `ping`
    Ping,
    /// `tools/list`
    ToolsList,
    /// `tools/call`
    ToolsCall,
    /// `logging/setLevel`
    LoggingSetLevel,
    /// `tasks/get`
    TasksGet,
    /// `tasks/result`
    TasksResult,
    /// `tasks/list`
    TasksList,
    /// `tasks/cancel`
    TasksCancel,
    /// `resources/list`
    ResourcesList,
    /// `resources/templates/list`
    ResourcesTemplatesList,
    /// `resources/read`
    ResourcesRead,
    /// `resources/subscribe`
    ResourcesSubscribe,
    /// `resources/unsubscribe`
    ResourcesUnsubscribe,
    /// `prompts/list`
    PromptsList,
    /// `prompts/get`
    PromptsGet,
    /// `completion/complete`
    CompletionComplete,
}

impl Method {
    /// Every method, in the order the MCP specification lists them.
    pub const ALL: [Method; 17] = [
        Method::Initialize,
        Method::Ping,
        Method::ToolsList,
        Method::ToolsCall,
        Method::LoggingSetLevel,
        Method::TasksGet,
        Method::TasksResult,
        Method::TasksList,
        Method::TasksCancel,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::ResourcesSubscribe,
        Method::ResourcesUnsubscribe,
        Method::PromptsList,
        Method::PromptsGet,
        Method::CompletionComplete,
    ];

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::LoggingSetLevel => "logging/setLevel",
            Method::TasksGet => "tasks/get",
            Method::TasksResult => "tasks/result",
            Method::TasksList => "tasks/list",
            Method::TasksCancel => "tasks/cancel",
            Method::ResourcesList => "resources/list",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::ResourcesSubscribe => "resources/subscribe",
            Method::ResourcesUnsubscribe => "resources/unsubscribe",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::CompletionComplete => "completion/complete",
        }
    }
}

/// A method name corral does not serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMethod(pub String);

impl fmt::Display for UnknownMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The session's answer to it, word for word: clients and tests read it.
        write!(f, "method `{}` not found", self.0)
    }
}

impl std::error::Error for UnknownMethod {}

impl FromStr for Method {
    type Err = UnknownMethod;

    fn from_str(name: &str) -> Result<Method, UnknownMethod> {
        Method::ALL.into_iter().find(|m| m.as_str() == name).ok_or_else(|| UnknownMethod(name.to_owned()))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A notification corral acts on; every other notification is logged and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `notifications/initialized`
    Initialized,
    /// `notifications/cancelled`
    Cancelled,
}

impl Notification {
    /// The notification named `name`, or `None` for one corral ignores.
    pub fn parse(name: &str) -> Option<Notification> {
        match name {
            "notifications/initialized" => Some(Notification::Initialized),
            "notifications/cancelled" => Some(Notification::Cancelled),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_round_trips_through_its_name() {
        for method in Method::ALL {
            assert_eq!(method.as_str().parse::<Method>(), Ok(method));
        }
        assert_eq!("tools/nope".parse::<Method>().unwrap_err().to_string(), "method `tools/nope` not found");
    }
}
