//! `subscriptions/listen`: a long-lived stream of the change notifications a modern client asked
//! for, on the listen request's own stream (HTTP: its SSE response; stdio: the shared pipe).
//!
//! The first message is `notifications/subscriptions/acknowledged` with the subset of the filter
//! corral honours; every later one carries the listen request's id as
//! `_meta["io.modelcontextprotocol/subscriptionId"]`, and only kinds that were asked for go out.
//! The listener joins the host's [`crate::server::Sessions`], so a hot reload's list changes reach
//! listeners and 2025-11-25 sessions alike. The stream ends when the request is cancelled (the
//! HTTP response closed, or `notifications/cancelled` on stdio); no answer follows then.
//!
//! With the tasks extension a listen may name `taskIds`: each must be a task of the same owner
//! (else -32602 naming it, the same answer `tasks/get` gives for an unknown id, so nothing leaks),
//! and each gets `notifications/tasks` carrying its `DetailedTask` as `tasks/get` reads it: once
//! at the start and at every change after. A task's end is pushed as soon as the engine knows it
//! (on any replica, through the store); the states between are read at the task's poll interval.
//!
//! Each task watched costs a reader, so a task named twice is watched once, one listen may name
//! at most `MAX_LISTEN_TASKS` tasks, and one owner may hold `MAX_TASK_LISTENS_PER_OWNER` such
//! listens open (`config::defaults`; -32602 naming the bound beyond).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::config::defaults::{MAX_LISTEN_TASKS, MAX_TASK_LISTENS_PER_OWNER};
use crate::mcp::jsonrpc::notification;
use crate::mcp::modern::{missing_capability, Envelope, TASKS_EXTENSION};
use crate::mcp::{Params, RequestId, RpcError};
use crate::principal::Owner;
use crate::server::scope::Scope;
use crate::server::sessions::{ListChanged, Listener};
use crate::server::task_view::engine_error;
use crate::server::{Host, Outlet};
use crate::tasks::EngineError;

use super::tasks;

/// `_meta` key tying a notification to its listen request.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// What one listen request asked for.
#[derive(Clone, Debug, Default, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    /// As the client wrote them, for the acknowledgement.
    resource_uris: Vec<String>,
    /// The same in their canonical form, which updates are announced in.
    canonical_uris: Vec<String>,
    task_ids: Vec<String>,
}

impl Filter {
    /// Reads `params.notifications`. `taskIds` needs the tasks extension declared (-32021).
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
        let resource_uris = uris("resourceSubscriptions")?;
        let canonical_uris = resource_uris.iter().map(|u| crate::uri::canonical(u).unwrap_or_else(|_| u.clone())).collect();
        Ok(Filter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            resource_uris,
            canonical_uris,
            task_ids: distinct_task_ids(uris("taskIds")?)?,
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
        if !self.task_ids.is_empty() {
            o.insert("taskIds".into(), json!(self.task_ids));
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

/// `taskIds` without repeats, in the order first named (one watcher per task, however often it
/// is named), at most [`MAX_LISTEN_TASKS`] of them.
fn distinct_task_ids(ids: Vec<String>) -> Result<Vec<String>, RpcError> {
    let mut seen = HashSet::new();
    let ids: Vec<String> = ids.into_iter().filter(|id| seen.insert(id.clone())).collect();
    if ids.len() > MAX_LISTEN_TASKS {
        return Err(RpcError::invalid_params(format!(
            "`notifications.taskIds` names {} tasks, over the {MAX_LISTEN_TASKS} one listen may watch: split them across listens",
            ids.len()
        )));
    }
    Ok(ids)
}

/// One open listen stream, as the host's set of listeners sees it.
struct Listen {
    subscription: Value,
    filter: Filter,
    outlet: Arc<dyn Outlet>,
    /// Who listens: resource updates go only to an owner the policy lets read the resource.
    owner: Owner,
}

impl Listen {
    fn send(&self, method: &str, mut params: Map<String, Value>) {
        params.insert("_meta".into(), json!({ SUBSCRIPTION_ID_KEY: self.subscription }));
        self.outlet.send(notification(method, &params));
    }
}

impl Listener for Listen {
    fn announce(&self, changed: &ListChanged) -> bool {
        let wanted = self.filter.wants(&changed.method);
        if wanted {
            self.send(&changed.method, Map::new());
        }
        wanted
    }

    fn resource_updated(&self, uri: &str, may_hear: &dyn Fn(&Owner) -> bool) -> bool {
        let wanted = self.filter.canonical_uris.iter().any(|u| u == uri) && may_hear(&self.owner);
        if wanted {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            self.send("notifications/resources/updated", params);
        }
        wanted
    }
}

/// Opens a listen stream for request `id` on `reply`.
pub(in crate::server) fn listen(scope: &Scope, id: RequestId, envelope: &Envelope, params: &Map<String, Value>) {
    let Some(filter) = scope.or_answer(&id, Filter::read(Params::new(params), envelope)) else { return };
    let (host, owner) = (scope.host().clone(), scope.owner().clone());
    // Held for as long as the stream is open (the future below owns it).
    let slot = match filter.task_ids.is_empty() {
        true => None,
        false => match host.listens.take(owner.key(), MAX_TASK_LISTENS_PER_OWNER) {
            Some(slot) => Some(slot),
            None => {
                let message =
                    format!("too many open listens watching tasks ({MAX_TASK_LISTENS_PER_OWNER} at most per client): close one, or name more tasks in one");
                return scope.reply(&id, Err(RpcError::invalid_params(message)));
            }
        },
    };
    let listen = Arc::new(Listen { subscription: json!(id), filter, outlet: scope.outlet().clone(), owner: owner.clone() });
    scope.spawn_request(id, move |cancel| async move {
        let _slot = slot;
        // Every task named must be this owner's before anything is acknowledged.
        for task in &listen.filter.task_ids {
            if let Err(e) = host.engine.get(owner.key(), task).await {
                return Some(Err::<Value, _>(unknown_task(task, e)));
            }
        }
        let mut ack = Map::new();
        ack.insert("notifications".into(), listen.filter.acknowledged());
        listen.send("notifications/subscriptions/acknowledged", ack);
        let as_listener: Arc<dyn Listener> = listen.clone();
        let member = host.sessions.join(Arc::downgrade(&as_listener));
        // Dropped with the stream: the watchers stop with it.
        let mut watchers = tokio::task::JoinSet::new();
        for task in listen.filter.task_ids.clone() {
            watchers.spawn(watch_task(host.clone(), owner.clone(), task, listen.clone()));
        }
        cancel.cancelled().await;
        host.sessions.leave(member);
        drop(as_listener);
        None
    });
}

/// A task this listen may not name: unknown, expired or another owner's, all alike.
fn unknown_task(task: &str, e: EngineError) -> RpcError {
    match e {
        EngineError::NotFound | EngineError::Expired => RpcError::invalid_params(format!("cannot listen to task `{task}`: {e}")),
        other => engine_error(other),
    }
}

/// Pushes `notifications/tasks` for `task` on `listen`: its state now, then each change, until
/// it ends (or the stream closes, which drops this future).
async fn watch_task(host: Arc<Host>, owner: Owner, task: String, listen: Arc<Listen>) {
    let mut query = Map::new();
    query.insert("taskId".into(), json!(task));
    let poll = match host.engine.get(owner.key(), &task).await {
        Ok(t) => Duration::from_millis(t.poll_interval_ms.max(1) as u64),
        Err(_) => return,
    };
    // Resolves once the task has ended, woken by the engine (or the shared store), not a poll.
    let ended = host.engine.result(owner.key(), &task);
    tokio::pin!(ended);
    let mut ended_seen = false;
    let mut last = Value::Null;
    loop {
        let Ok(mut detailed) = tasks::get(&host, &owner, &query).await else { return };
        if let Value::Object(fields) = &mut detailed {
            // A notification's params are the DetailedTask itself, without the result's framing.
            fields.remove("resultType");
            fields.remove("_meta");
        }
        let terminal = detailed.get("status").and_then(Value::as_str).is_some_and(|s| matches!(s, "completed" | "failed" | "cancelled"));
        if detailed != last {
            if let Value::Object(fields) = &detailed {
                listen.send("notifications/tasks", fields.clone());
            }
            last = detailed;
        }
        if terminal {
            return;
        }
        tokio::select! {
            _ = &mut ended, if !ended_seen => ended_seen = true,
            _ = tokio::time::sleep(poll) => {}
        }
    }
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
        let owner = Owner::new(crate::principal::Principal::Anonymous, crate::principal::Wire::Stateless);
        let listen = Listen { subscription: json!("listen-1"), filter, outlet: out.clone(), owner };
        assert!(!listen.announce(&ListChanged::new("tools")));
        assert!(listen.announce(&ListChanged::new("prompts")));
        assert!(!listen.resource_updated("test://a", &|_| false), "not to an owner that may not hear of it");
        assert!(!listen.resource_updated("test://b", &|_| true) && listen.resource_updated("test://a", &|_| true));
        let sent = out.messages();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent.iter().all(|m| m["params"]["_meta"][SUBSCRIPTION_ID_KEY] == "listen-1"), "{sent:?}");
        assert_eq!(sent[1]["params"]["uri"], "test://a");
    }

    #[test]
    fn a_resource_is_listened_to_whichever_way_its_uri_is_spelled() {
        let params = json!({"notifications": {"resourceSubscriptions": ["NOTES://%61lpha"]}});
        let filter = Filter::read(Params::new(params.as_object().unwrap()), &envelope(false)).unwrap();
        assert_eq!(filter.acknowledged(), json!({"resourceSubscriptions": ["NOTES://%61lpha"]}), "acknowledged as asked");
        let out = Arc::new(Collect::default());
        let owner = Owner::new(crate::principal::Principal::Anonymous, crate::principal::Wire::Stateless);
        let listen = Listen { subscription: json!("listen-1"), filter, outlet: out.clone(), owner };
        assert!(listen.resource_updated("notes://alpha", &|_| true), "updates are announced in the canonical form");
    }

    #[test]
    fn task_ids_need_the_extension_and_the_filter_is_checked() {
        let params = json!({"notifications": {"taskIds": ["t"]}});
        assert_eq!(Filter::read(Params::new(params.as_object().unwrap()), &envelope(false)).unwrap_err().code, -32021);
        let asked = Filter::read(Params::new(params.as_object().unwrap()), &envelope(true)).unwrap();
        assert_eq!(asked.acknowledged(), json!({"taskIds": ["t"]}), "accepted task ids are acknowledged");
        let bad_ids = json!({"notifications": {"taskIds": "t"}});
        assert_eq!(Filter::read(Params::new(bad_ids.as_object().unwrap()), &envelope(true)).unwrap_err().code, -32602);
        let repeated = json!({"notifications": {"taskIds": vec!["t"; 20_000]}});
        let once = Filter::read(Params::new(repeated.as_object().unwrap()), &envelope(true)).unwrap();
        assert_eq!(once.task_ids, ["t"], "a task named 20 000 times is watched once");
        let ids: Vec<String> = (0..=MAX_LISTEN_TASKS).map(|n| format!("t{n}")).collect();
        let many = json!({"notifications": {"taskIds": ids}});
        let refused = Filter::read(Params::new(many.as_object().unwrap()), &envelope(true)).unwrap_err();
        assert_eq!(refused.code, -32602);
        assert_eq!(refused.message, "`notifications.taskIds` names 101 tasks, over the 100 one listen may watch: split them across listens");
        let most = json!({"notifications": {"taskIds": &ids[..MAX_LISTEN_TASKS]}});
        assert_eq!(Filter::read(Params::new(most.as_object().unwrap()), &envelope(true)).unwrap().task_ids.len(), MAX_LISTEN_TASKS);
        let bad = json!({"notifications": {"toolsListChanged": "yes"}});
        assert_eq!(Filter::read(Params::new(bad.as_object().unwrap()), &envelope(false)).unwrap_err().code, -32602);
        assert_eq!(Filter::read(Params::new(&Map::new()), &envelope(false)).unwrap_err().code, -32602);
    }
}
