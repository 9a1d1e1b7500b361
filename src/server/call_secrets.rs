//! The secrets of one tool call, on the server's side: what the caller is told when one cannot
//! be resolved, and the redaction of resolved values from everything the call sends back.
//!
//! Redaction is a second line of defence: a plugin that echoes its credential (in a result, a
//! log line, a progress message or an error) has it replaced by `[secret NAME]` before it
//! leaves the host or is stored. Values shorter than [`MIN_REDACTED`](crate::runtime::MIN_REDACTED) bytes are left alone.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::results::{with_error_meta, ERROR_META_KEY};
use crate::config::SecretScope;
use crate::mcp::types::{CallToolResult, ContentBlock};
use crate::mcp::RpcError;
use crate::runtime::{
    redacted, CallObserver, ClientAnswer, ElicitResponse, InputRequest, InputResponse, Keyed, LogLevel, Root, SamplingRequest, SamplingResponse, SecretVars,
};
use crate::secrets::Unresolved;

/// The resolved secrets of one call.
type SecretEnv = [(String, zeroize::Zeroizing<String>)];

/// The `corral/error` kind of a call whose secrets could not all be resolved.
pub const SECRET_UNAVAILABLE: &str = "secret-unavailable";

/// The `isError` result of a call that did not run for want of a secret: which one, of which
/// scope, and where a person gets one; never a value.
pub fn unresolved_result(tool: &str, unresolved: &Unresolved) -> CallToolResult {
    let mut detail = Map::new();
    detail.insert("kind".into(), json!(SECRET_UNAVAILABLE));
    if let Unresolved::NotSet { decl, plugin, link, .. } = unresolved {
        detail.insert("plugin".into(), json!(plugin));
        detail.insert("secret".into(), json!(decl.name));
        detail.insert("scope".into(), json!(SecretScope::Caller.as_str()));
        detail.insert("description".into(), json!(decl.description));
        if let Some(url) = &decl.help_url {
            detail.insert("helpUrl".into(), json!(url));
        }
        if let Some(link) = link {
            detail.insert("url".into(), json!(link.url));
            detail.insert("elicitationId".into(), json!(link.id));
        }
    }
    // The host's own faults (a missing file, a store that failed) are the operator's to read
    // in the log: their details (paths, the store's words) are not the caller's business.
    let text = match unresolved {
        Unresolved::Host(_) | Unresolved::Vault(_) => {
            format!("tool `{tool}` did not run: a secret it needs could not be read on this host (the host's log says why)")
        }
        _ => format!("tool `{tool}` did not run: {unresolved}"),
    };
    with_error_meta(CallToolResult::error_text(text), detail)
}

/// MCP 2025-11-25's `URLElicitationRequired`: the request cannot go on until the person has
/// been to the URLs of `data.elicitations`.
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// For a client that declared URL-mode elicitation, the `-32042` error a call's
/// `secret-unavailable` result stands for: the one URL-mode elicitation that gives the missing
/// caller secret. `None` for any other result (a host secret, or no link: no `--public-url`).
pub fn url_elicitation_error(result: &CallToolResult) -> Option<RpcError> {
    let asked = UrlElicitation::of(result)?;
    let mut error =
        RpcError::new(URL_ELICITATION_REQUIRED, format!("secret {} of plugin {} is not set for you: give it at {}", asked.name, asked.plugin, asked.url));
    let elicitation = json!({ "mode": "url", "elicitationId": asked.id, "url": asked.url, "message": asked.message });
    error.data = Some(json!({ "elicitations": [elicitation] }));
    Some(error)
}

/// The URL-mode elicitation a call's `secret-unavailable` result stands for.
pub struct UrlElicitation {
    /// The link's id (2025-11-25's `elicitationId`).
    pub id: String,
    /// The link.
    pub url: String,
    /// What the person is asked, and why.
    pub message: String,
    /// The secret's name.
    pub name: String,
    plugin: String,
}

impl UrlElicitation {
    /// The elicitation of `result`; `None` for any other result (a host secret, or no link:
    /// no `--public-url`).
    pub fn of(result: &CallToolResult) -> Option<UrlElicitation> {
        let detail = result.meta.get(ERROR_META_KEY)?;
        let field = |key: &str| detail.get(key).and_then(Value::as_str).map(str::to_owned);
        if field("kind").as_deref() != Some(SECRET_UNAVAILABLE) {
            return None;
        }
        let (url, id, plugin, name) = (field("url")?, field("elicitationId")?, field("plugin")?, field("secret")?);
        let description = field("description").unwrap_or_else(|| name.clone());
        let message = format!("Plugin {plugin} needs your secret {name} ({description}). Open the link to give it, then try again.");
        Some(UrlElicitation { id, url, message, name, plugin })
    }

    /// 2026-07-28's `ElicitRequestURLParams`: no id, the retry's `requestState` correlates.
    pub fn modern_params(&self) -> Value {
        json!({ "mode": "url", "url": self.url, "message": self.message })
    }
}

fn redact_string(env: &SecretEnv, text: &mut String) {
    if let Some(clean) = redacted(env, text) {
        *text = clean;
    }
}

fn redact_value(env: &SecretEnv, value: &mut Value) {
    match value {
        Value::String(s) => redact_string(env, s),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(env, v)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(env, v)),
        _ => {}
    }
}

/// Redacts every text a result carries (content, structured content, `_meta`). Binary blocks
/// (images, audio, blobs) are base64 and kept as they are.
pub fn redact_result(env: &SecretEnv, result: &mut CallToolResult) {
    if env.is_empty() {
        return;
    }
    for block in &mut result.content {
        match block {
            ContentBlock::Text { text } => redact_string(env, text),
            ContentBlock::ResourceLink { uri, name, description, .. } => {
                redact_string(env, uri);
                redact_string(env, name);
                if let Some(d) = description {
                    redact_string(env, d);
                }
            }
            ContentBlock::Resource { resource } => {
                redact_string(env, &mut resource.uri);
                if let Some(t) = &mut resource.text {
                    redact_string(env, t);
                }
            }
            ContentBlock::Image { .. } | ContentBlock::Audio { .. } => {}
        }
    }
    if let Some(structured) = &mut result.structured_content {
        redact_value(env, structured);
    }
    for value in result.meta.values_mut() {
        redact_value(env, value);
    }
}

/// The call's observer, with the call's secrets redacted from its log lines, progress messages
/// and the messages it asks a person; everything else passes through as it is.
pub struct Redacting {
    inner: Arc<dyn CallObserver>,
    vars: SecretVars,
}

impl Redacting {
    /// `inner` as is when the call has no secrets, else wrapped.
    pub fn wrap(inner: Arc<dyn CallObserver>, vars: &SecretVars) -> Arc<dyn CallObserver> {
        match vars.is_empty() {
            true => inner,
            false => Arc::new(Redacting { inner, vars: vars.clone() }),
        }
    }

    fn clean(&self, text: String) -> String {
        redacted(&self.vars, &text).unwrap_or(text)
    }
}

impl CallObserver for Redacting {
    fn log(&self, level: LogLevel, message: &str) {
        match redacted(&self.vars, message) {
            Some(clean) => self.inner.log(level, &clean),
            None => self.inner.log(level, message),
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.inner.progress(progress, total, message.map(|m| self.clean(m)));
    }

    fn elicit(&self, task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        self.inner.elicit(task, self.clean(message), requested_schema)
    }

    fn sample(&self, task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        self.inner.sample(task, request)
    }

    fn roots(&self, task: Option<&str>) -> ClientAnswer<Vec<Root>> {
        self.inner.roots(task)
    }

    fn ask(&self, task: Option<&str>, requests: Keyed<InputRequest>) -> ClientAnswer<Keyed<InputResponse>> {
        let requests = requests
            .into_iter()
            .map(|(key, request)| match request {
                InputRequest::Elicit { message, requested_schema } => (key, InputRequest::Elicit { message: self.clean(message), requested_schema }),
                other => (key, other),
            })
            .collect();
        self.inner.ask(task, requests)
    }

    fn stops_for_input(&self) -> bool {
        self.inner.stops_for_input()
    }

    fn checkpoint(&self, state: &[u8]) -> Option<futures_util::future::BoxFuture<'static, Result<(), String>>> {
        self.inner.checkpoint(state)
    }

    fn resume(&self) -> Option<Vec<u8>> {
        self.inner.resume()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    #[test]
    fn every_text_of_a_result_is_redacted_and_short_values_are_left_alone() {
        let env: Vec<(String, Zeroizing<String>)> = vec![("TOKEN".into(), Zeroizing::new("s3cr3t-value".into())), ("PIN".into(), Zeroizing::new("42".into()))];
        let mut result = CallToolResult {
            content: vec![ContentBlock::Text { text: "token s3cr3t-value, again s3cr3t-value, pin 42".into() }],
            structured_content: Some(json!({"echo": ["s3cr3t-value"], "n": 1})),
            is_error: false,
            meta: Map::new(),
        };
        redact_result(&env, &mut result);
        assert_eq!(result.content, vec![ContentBlock::Text { text: "token [secret TOKEN], again [secret TOKEN], pin 42".into() }]);
        assert_eq!(result.structured_content, Some(json!({"echo": ["[secret TOKEN]"], "n": 1})));
    }
}
