//! `subscriptions/listen`: a long-lived stream of the change notifications a modern client asked
//! for, on the listen request's own stream (HTTP: its SSE response; stdio: the shared pipe).
//!
//! The first message is `notifications/subscriptions/acknowledged` with the subset of the filter
//! corral honours; every later one carries the listen request's id as
//! `_meta["io.modelcontextprotocol/subscriptionId"]`, and only kinds that were asked for go out.
//! The listener joins the host's [`crate::server::Sessions`], so a hot reload's list changes reach
//! listeners and 2025-11-25 sessions alike. The stream ends when the request is cancelled (the
//! HTTP response closed, or `notifications/cancelled` on stdio); no answer follows then.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::notification;
use crate::mcp::modern::{missing_capability, Envelope, TASKS_EXTENSION};
use crate::mcp::{Params, RequestId, RpcError};
use crate::server::sessions::Listener;
use crate::server::{Outlet, Session};

/// `_meta` key tying a notification to its listen request.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// What one listen request asked for.
#[derive(Clone, Debug, Default, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    resource_uris: Vec<String>,
}

impl Filter {
    /// Reads `params.notifications`. `taskIds` needs the tasks extension declared (-32021); it is
    /// not acknowledged, since task status is not pushed on listen streams yet.
    fn read(params: Params<'_>, envelope: &Envelope) -> Result<Filter, RpcError> {
        let wanted = params.object_or("notifications", "missing `notifications`: e.g. {\"toolsListChanged\": true}")?;
        let flag = |key: &str| match wanted.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(RpcError::invalid_params(format!("`notifications.{key}` must be a boolean"))),
        };
        let uris = |key: &str| match wanted.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|u| u.as_str().map(str::to_owned).ok_or_else(|| RpcError::invalid_params(format!("`notifications.{key}` must be an array of strings"))))
                .collect(),
            Some(_) => Err(RpcError::invalid_params(format!("`notifications.{key}` must be an array of strings"))),
        };
        if wanted.has("taskIds") && !envelope.capabilities.tasks {
            return Err(missing_capability(TASKS_EXTENSION));
        }
        Ok(Filter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            resource_uris: uris("resourceSubscriptions")?,
        })
    }

    /// The acknowledged subset, as the ack shows it.
    fn acknowledged(&self) -> Value {
        let mut o = Map::new();
        for (key, on) in [("toolsListChanged", self.tools), ("promptsListChanged", self.prompts), ("resourcesListChanged", self.resources)] {
            if on {
                o.insert(key.into(), json!(true));
            }
        }
        if !self.resource_uris.is_empty() {
            o.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(o)
    }

    fn wants(&self, method: &str) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools,
            "notifications/prompts/list_changed" => self.prompts,
            "notifications/resources/list_changed" => self.resources,
            _ => false,
        }
    }
}

/// One open listen stream, as the host's set of listeners sees it.
struct Listen {
    subscription: Value,
    filter: Filter,
    outlet: Arc<dyn Outlet>,
}

impl Listen {
    fn send(&self, method: &str, mut params: Map<String, Value>) {
        params.insert("_meta".into(), json!({ SUBSCRIPTION_ID_KEY: self.subscription }));
        self.outlet.send(notification(method, Value::Object(params)));
    }
}

impl Listener for Listen {
    fn announce(&self, message: &Value) -> bool {
        let Some(method) = message.get("method").and_then(Value::as_str) else { return false };
        let wanted = self.filter.wants(method);
        if wanted {
            self.send(method, Map::new());
        }
        wanted
    }

    fn resource_updated(&self, uri: &str) -> bool {
        let wanted = self.filter.resource_uris.iter().any(|u| u == uri);
        if wanted {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            self.send("notifications/resources/updated", params);
        }
        wanted
    }
}

/// Opens a listen stream for request `id` on `reply`.
pub(in crate::server) fn listen(session: &Session, id: RequestId, envelope: &Envelope, params: &Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let filter = match Filter::read(Params::new(params), envelope) {
        Ok(filter) => filter,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let host = session.host().clone();
    let listen = Arc::new(Listen { subscription: json!(id), filter, outlet: reply.clone() });
    session.spawn_request(id, reply, move |cancel| async move {
        let mut ack = Map::new();
        ack.insert("notifications".into(), listen.filter.acknowledged());
        listen.send("notifications/subscriptions/acknowledged", ack);
        let as_listener: Arc<dyn Listener> = listen.clone();
        let member = host.sessions.join(Arc::downgrade(&as_listener));
        cancel.cancelled().await;
        host.sessions.leave(member);
        drop(as_listener);
        None
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::modern::ClientCapabilities;
    use crate::server::testing::Collect;

    fn envelope(tasks: bool) -> Envelope {
        Envelope { capabilities: ClientCapabilities { tasks, ..Default::default() }, client: None, log_level: None }
    }

    #[test]
    fn only_what_was_asked_goes_out_tagged_with_the_subscription() {
        let params = json!({"notifications": {"promptsListChanged": true, "resourceSubscriptions": ["test://a"]}});
        let filter = Filter::read(Params::new(params.as_object().unwrap()), &envelope(false)).unwrap();
        assert_eq!(filter.acknowledged(), json!({"promptsListChanged": true, "resourceSubscriptions": ["test://a"]}));
        let out = Arc::new(Collect::default());
        let listen = Listen { subscription: json!("listen-1"), filter, outlet: out.clone() };
        assert!(!listen.announce(&notification("notifications/tools/list_changed", json!({}))));
        assert!(listen.announce(&notification("notifications/prompts/list_changed", json!({}))));
        assert!(!listen.resource_updated("test://b") && listen.resource_updated("test://a"));
        let sent = out.messages();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent.iter().all(|m| m["params"]["_meta"][SUBSCRIPTION_ID_KEY] == "listen-1"), "{sent:?}");
        assert_eq!(sent[1]["params"]["uri"], "test://a");
    }

    #[test]
    fn task_ids_need_the_extension_and_the_filter_is_checked() {
        let params = json!({"notifications": {"taskIds": ["t"]}});
        assert_eq!(Filter::read(Params::new(params.as_object().unwrap()), &envelope(false)).unwrap_err().code, -32021);
        let bad = json!({"notifications": {"toolsListChanged": "yes"}});
        assert_eq!(Filter::read(Params::new(bad.as_object().unwrap()), &envelope(false)).unwrap_err().code, -32602);
        assert_eq!(Filter::read(Params::new(&Map::new()), &envelope(false)).unwrap_err().code, -32602);
    }
}
