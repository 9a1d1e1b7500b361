//! What plugins ask of the client through the host (contract 0.2.0): `elicit` becomes
//! `elicitation/create` (form mode) and `sample` becomes `sampling/createMessage`; 0.3.0's
//! `input.roots` (or a `list-roots` in `input.ask`) becomes `roots/list`. The request is checked
//! before it is sent and the answer before the plugin sees it.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::peer::{Peer, PeerError};
use super::results::content_block;
use super::Outlet;
use crate::mcp::types::ContentBlock;
use crate::runtime::{Blob, Content, ElicitAction, ElicitResponse, RequestError, Role, Root, SamplingRequest, SamplingResponse};

fn failed(e: PeerError) -> RequestError {
    match e {
        PeerError::Gone => RequestError::Unavailable("the client's session ended before it answered".into()),
        PeerError::Rpc(e) => RequestError::Refused(format!("the client answered with error {}: {}", e.code, e.message)),
    }
}

/// `elicit`: asks the user to fill in a form described by `requested_schema` (JSON text).
pub async fn elicit(
    peer: &Arc<Peer>,
    via: &Arc<dyn Outlet>,
    task: Option<&str>,
    message: String,
    requested_schema: String,
) -> Result<ElicitResponse, RequestError> {
    if peer.is_closed() {
        return Err(RequestError::Unavailable("the client's session has ended".into()));
    }
    if !peer.capabilities().elicitation {
        return Err(RequestError::Unsupported("the client did not declare the `elicitation` capability (form mode), so it was not asked".into()));
    }
    let (params, validator) = elicit_params(message, &requested_schema)?;
    let answer = peer.request("elicitation/create", params, task, via).await.map_err(failed)?;
    elicit_answer(&answer, &validator)
}

/// The `elicitation/create` params of a form (`message`, `requestedSchema`), and the validator
/// its answer must pass; an unusable schema is the plugin's `invalid`.
pub(crate) fn elicit_params(message: String, requested_schema: &str) -> Result<(Map<String, Value>, jsonschema::Validator), RequestError> {
    let schema: Value = serde_json::from_str(requested_schema).map_err(|e| RequestError::Invalid(format!("the requested schema is not JSON: {e}")))?;
    if schema.get("type") != Some(&json!("object")) {
        return Err(RequestError::Invalid("the requested schema must be an object schema (`\"type\": \"object\"` at its root)".into()));
    }
    let validator = jsonschema::validator_for(&schema).map_err(|e| RequestError::Invalid(format!("the requested schema is not valid JSON Schema: {e}")))?;
    let mut params = Map::new();
    params.insert("message".into(), json!(message));
    params.insert("requestedSchema".into(), schema);
    Ok((params, validator))
}

/// The client's answer to a form, checked against its schema; a bad one is `refused`.
pub(crate) fn elicit_answer(answer: &Value, validator: &jsonschema::Validator) -> Result<ElicitResponse, RequestError> {
    let action = match answer.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAction::Accept,
        Some("decline") => ElicitAction::Decline,
        Some("cancel") => ElicitAction::Cancel,
        _ => return Err(RequestError::Refused(format!("the client's answer has no valid `action` (accept, decline or cancel): {answer}"))),
    };
    let content = match (action, answer.get("content")) {
        (ElicitAction::Accept, Some(content @ Value::Object(_))) => {
            let problems = crate::registry::violations(validator, content);
            if !problems.is_empty() {
                return Err(RequestError::Refused(format!(
                    "the client's answer does not match the requested schema: {}",
                    super::results::violations_summary(&problems)
                )));
            }
            Some(content.to_string())
        }
        (ElicitAction::Accept, None | Some(Value::Null)) => Some("{}".to_owned()),
        (ElicitAction::Accept, Some(other)) => return Err(RequestError::Refused(format!("the client's `content` is not an object: {other}"))),
        _ => None,
    };
    Ok(ElicitResponse { action, content })
}

/// `sample`: asks the client's model for the next message.
pub async fn sample(peer: &Arc<Peer>, via: &Arc<dyn Outlet>, task: Option<&str>, request: SamplingRequest) -> Result<SamplingResponse, RequestError> {
    if peer.is_closed() {
        return Err(RequestError::Unavailable("the client's session has ended".into()));
    }
    if !peer.capabilities().sampling {
        return Err(RequestError::Unsupported("the client did not declare the `sampling` capability, so it was not asked".into()));
    }
    let params = sampling_params(request)?;
    let answer = peer.request("sampling/createMessage", params, task, via).await.map_err(failed)?;
    sampling_response(&answer).map_err(|why| RequestError::Refused(format!("the client's answer is not a sampling result: {why}")))
}

/// `roots`: asks the client for its roots (`roots/list`).
pub async fn roots(peer: &Arc<Peer>, via: &Arc<dyn Outlet>, task: Option<&str>) -> Result<Vec<Root>, RequestError> {
    if peer.is_closed() {
        return Err(RequestError::Unavailable("the client's session has ended".into()));
    }
    if !peer.capabilities().roots {
        return Err(RequestError::Unsupported("the client did not declare the `roots` capability, so it was not asked".into()));
    }
    let answer = peer.request("roots/list", Map::new(), task, via).await.map_err(failed)?;
    roots_result(&answer).map_err(|why| RequestError::Refused(format!("the client's answer is not a roots/list result: {why}")))
}

/// A `ListRootsResult`'s roots: each a `uri` with an optional `name`.
pub(crate) fn roots_result(answer: &Value) -> Result<Vec<Root>, String> {
    let Some(Value::Array(roots)) = answer.get("roots") else { return Err(format!("`roots` must be a list: {answer}")) };
    roots
        .iter()
        .map(|root| {
            let uri = root.get("uri").and_then(Value::as_str).ok_or_else(|| format!("a root lacks its `uri`: {root}"))?;
            let name = match root.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(name)) => Some(name.clone()),
                Some(other) => return Err(format!("a root's `name` must be text: {other}")),
            };
            Ok(Root { uri: uri.to_owned(), name })
        })
        .collect()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// `sampling/createMessage` params, after the checks MCP asks for.
pub(crate) fn sampling_params(request: SamplingRequest) -> Result<Map<String, Value>, RequestError> {
    if request.messages.is_empty() {
        return Err(RequestError::Invalid("a sampling request needs at least one message".into()));
    }
    if request.max_tokens == 0 {
        return Err(RequestError::Invalid("max-tokens must be more than 0".into()));
    }
    let mut messages = Vec::with_capacity(request.messages.len());
    for (i, message) in request.messages.into_iter().enumerate() {
        let block = content_block(message.content);
        if !matches!(block, ContentBlock::Text { .. } | ContentBlock::Image { .. } | ContentBlock::Audio { .. }) {
            return Err(RequestError::Invalid(format!("message {i}: sampling content must be text, image or audio")));
        }
        messages.push(json!({ "role": role_name(message.role), "content": block }));
    }
    let mut params = Map::new();
    params.insert("messages".into(), Value::Array(messages));
    params.insert("maxTokens".into(), json!(request.max_tokens));
    if let Some(system) = request.system_prompt {
        params.insert("systemPrompt".into(), json!(system));
    }
    if let Some(t) = request.temperature {
        params.insert("temperature".into(), json!(t));
    }
    if !request.stop_sequences.is_empty() {
        params.insert("stopSequences".into(), json!(request.stop_sequences));
    }
    if let Some(p) = request.model_preferences {
        let mut prefs = Map::new();
        if !p.hints.is_empty() {
            prefs.insert("hints".into(), p.hints.iter().map(|h| json!({ "name": h })).collect());
        }
        for (key, value) in [("costPriority", p.cost_priority), ("speedPriority", p.speed_priority), ("intelligencePriority", p.intelligence_priority)] {
            if let Some(v) = value {
                if !(0.0..=1.0).contains(&v) {
                    return Err(RequestError::Invalid(format!("model preference {key} must be between 0 and 1")));
                }
                prefs.insert(key.into(), json!(v));
            }
        }
        params.insert("modelPreferences".into(), Value::Object(prefs));
    }
    Ok(params)
}

pub(crate) fn sampling_response(answer: &Value) -> Result<SamplingResponse, String> {
    let role = match answer.get("role").and_then(Value::as_str) {
        Some("assistant") => Role::Assistant,
        Some("user") => Role::User,
        _ => return Err(format!("`role` must be \"assistant\" or \"user\": {answer}")),
    };
    let blocks = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(block @ Value::Object(_)) => vec![block],
        _ => return Err(format!("`content` must be a content block or a list of them: {answer}")),
    };
    let content = blocks.into_iter().map(content_from_json).collect::<Result<Vec<_>, _>>()?;
    let model = answer.get("model").and_then(Value::as_str).ok_or_else(|| format!("`model` is missing: {answer}"))?.to_owned();
    let stop_reason = answer.get("stopReason").and_then(Value::as_str).map(str::to_owned);
    Ok(SamplingResponse { role, content, model, stop_reason })
}

fn content_from_json(block: &Value) -> Result<Content, String> {
    let text = |key: &str| block.get(key).and_then(Value::as_str).ok_or_else(|| format!("a `{}` block lacks `{key}`", block["type"]));
    let blob = || -> Result<Blob, String> {
        let data = BASE64.decode(text("data")?).map_err(|e| format!("`data` is not base64: {e}"))?;
        Ok(Blob { data, mime_type: text("mimeType")?.to_owned() })
    };
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Content::Text(text("text")?.to_owned())),
        Some("image") => Ok(Content::Image(blob()?)),
        Some("audio") => Ok(Content::Audio(blob()?)),
        other => Err(format!("content of type {other:?} is not text, image or audio")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Message, ModelPreferences};

    fn request(messages: Vec<Message>) -> SamplingRequest {
        SamplingRequest {
            messages,
            system_prompt: Some("be brief".into()),
            max_tokens: 100,
            temperature: None,
            stop_sequences: vec![],
            model_preferences: None,
        }
    }

    #[test]
    fn sampling_requests_use_mcp_names_and_refuse_what_mcp_does_not_allow() {
        let params = sampling_params(request(vec![Message { role: Role::User, content: Content::Text("hi".into()) }])).unwrap();
        assert_eq!(
            Value::Object(params),
            json!({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100,"systemPrompt":"be brief"})
        );
        assert!(matches!(sampling_params(request(vec![])), Err(RequestError::Invalid(_))));
        let link = Content::Link(crate::runtime::ResourceLink { uri: "a:b".into(), name: "b".into(), description: None, mime_type: None });
        assert!(matches!(sampling_params(request(vec![Message { role: Role::User, content: link }])), Err(RequestError::Invalid(_))));
        let mut bad = request(vec![Message { role: Role::User, content: Content::Text("x".into()) }]);
        bad.model_preferences =
            Some(ModelPreferences { hints: vec!["claude".into()], cost_priority: Some(2.0), speed_priority: None, intelligence_priority: None });
        assert!(matches!(sampling_params(bad), Err(RequestError::Invalid(_))));
    }

    #[test]
    fn roots_answers_need_uris_and_may_name_them() {
        let roots = roots_result(&json!({"roots":[{"uri":"file:///a","name":"A"},{"uri":"file:///b"}]})).unwrap();
        assert_eq!(roots, vec![Root { uri: "file:///a".into(), name: Some("A".into()) }, Root { uri: "file:///b".into(), name: None }]);
        assert_eq!(roots_result(&json!({"roots":[{"name":"A"}]})).unwrap_err(), r#"a root lacks its `uri`: {"name":"A"}"#);
        assert!(roots_result(&json!({})).unwrap_err().starts_with("`roots` must be a list"));
    }

    #[test]
    fn sampling_answers_may_hold_one_block_or_several() {
        let one = sampling_response(&json!({"role":"assistant","content":{"type":"text","text":"hello"},"model":"m","stopReason":"endTurn"})).unwrap();
        assert_eq!(one.content, vec![Content::Text("hello".into())]);
        assert_eq!(one.stop_reason.as_deref(), Some("endTurn"));
        let many = sampling_response(
            &json!({"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image","data":"AQID","mimeType":"image/png"}],"model":"m"}),
        )
        .unwrap();
        assert_eq!(many.content.len(), 2);
        assert!(sampling_response(&json!({"role":"assistant","content":{"type":"text","text":"x"}})).unwrap_err().contains("model"));
    }
}
