//! MCP resources from plugins (contract 0.2.0): `resources/list`, `resources/templates/list`,
//! `resources/read`, and what `resources/subscribe` checks.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::authorize::Visible;
use super::paging::page;
use super::results::failure_error;
use super::Host;
use crate::mcp::{Params, RpcError};
use crate::policy::Kind;
use crate::principal::Owner;
use crate::registry::{Plugin, ResourceEntry, TemplateEntry};
use crate::runtime::{CallContext, Contents, Failure, ReadError, Resource, ResourceBody, ResourceTemplate};

pub use super::results::RESOURCE_NOT_FOUND;

fn put(object: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(v) = value {
        object.insert(key.into(), v.into());
    }
}

/// A resource as `resources/list` shows it.
pub fn resource_json(r: &Resource) -> Value {
    let mut o = Map::new();
    o.insert("uri".into(), json!(r.uri));
    o.insert("name".into(), json!(r.name));
    put(&mut o, "title", r.title.clone());
    put(&mut o, "description", r.description.clone());
    put(&mut o, "mimeType", r.mime_type.clone());
    put(&mut o, "size", r.size);
    Value::Object(o)
}

/// A template as `resources/templates/list` shows it.
pub fn template_json(t: &ResourceTemplate) -> Value {
    let mut o = Map::new();
    o.insert("uriTemplate".into(), json!(t.uri_template));
    o.insert("name".into(), json!(t.name));
    put(&mut o, "title", t.title.clone());
    put(&mut o, "description", t.description.clone());
    put(&mut o, "mimeType", t.mime_type.clone());
    Value::Object(o)
}

fn contents_json(c: Contents) -> Value {
    let mut o = Map::new();
    o.insert("uri".into(), json!(c.uri));
    put(&mut o, "mimeType", c.mime_type);
    match c.body {
        ResourceBody::Text(text) => o.insert("text".into(), json!(text)),
        ResourceBody::Bytes(bytes) => o.insert("blob".into(), json!(BASE64.encode(bytes))),
    };
    Value::Object(o)
}

/// `resources/list`: the resources `owner` may read, in URI order, a page at a time.
pub fn list(host: &Host, owner: &Owner, params: Params<'_>) -> Result<Value, RpcError> {
    let catalog = host.registry.listing();
    let visible = Visible::to(host, owner);
    let keep = |e: &ResourceEntry| visible.shows(Kind::Resource, &e.plugin.name, &e.resource.uri);
    page(&catalog.resources, params, host.options.page_size, ("resources/list", "resources"), keep, |e| resource_json(&e.resource))
}

/// `resources/templates/list`: the templates `owner` may use, in template order, a page at a time.
pub fn list_templates(host: &Host, owner: &Owner, params: Params<'_>) -> Result<Value, RpcError> {
    let catalog = host.registry.listing();
    let visible = Visible::to(host, owner);
    let keep = |e: &TemplateEntry| visible.shows(Kind::Resource, &e.plugin.name, &e.template.uri_template);
    page(&catalog.templates, params, host.options.page_size, ("resources/templates/list", "resourceTemplates"), keep, |e| template_json(&e.template))
}

/// The `uri` param of a resources request, as the client wrote it.
pub fn uri_param(params: Params<'_>) -> Result<&str, RpcError> {
    params.required_str("uri", "the URI of a resource")
}

/// The `uri` param of a read or a subscription in its canonical form (`crate::uri::canonical`):
/// what the policy decides on, what finds the plugin and what the plugin is handed, so that no
/// other spelling of a URI reaches a resource a rule refuses.
pub fn requested_uri(params: Params<'_>) -> Result<String, RpcError> {
    let uri = uri_param(params)?;
    crate::uri::canonical(uri).map_err(|why| RpcError::invalid_params(format!("`uri`: {why}")))
}

/// The error for a URI no plugin serves, with the URI in `data` as MCP asks.
pub fn not_found(uri: &str) -> RpcError {
    super::results::resource_not_found(uri)
}

/// The plugin that serves `uri`, or the not-found error.
pub fn owner(host: &Host, uri: &str) -> Result<Arc<Plugin>, RpcError> {
    host.registry.snapshot().resource_owner(uri).cloned().ok_or_else(|| not_found(uri))
}

/// `resources/read`: runs the owner's `read-resource` in a fresh instance under its limits.
/// `Err(Failure::Cancelled)` means the client cancelled and wants no answer.
pub async fn read(host: &Host, plugin: &Plugin, uri: &str, ctx: CallContext) -> Result<Result<Value, RpcError>, Failure> {
    let denials = ctx.denials.clone();
    let cancel = ctx.cancel.clone();
    let read = super::with_permit(plugin, &cancel, || host.runtime.read_resource(&plugin.code, uri, ctx)).await;
    let subject = format!("reading resource `{uri}`");
    let mut result = match read {
        Err(Failure::Cancelled) => return Err(Failure::Cancelled),
        Err(failure) => {
            tracing::warn!(plugin = %plugin.name, uri, kind = failure.kind(), "{}", failure.describe_as(&subject));
            return Ok(Err(failure_error(&failure, &subject)));
        }
        Ok(Err(ReadError::NotFound)) => return Ok(Err(not_found(uri))),
        Ok(Err(ReadError::Failed(message))) => return Ok(Err(RpcError::internal(format!("{subject} failed: {message}")))),
        Ok(Ok(contents)) => json!({ "contents": contents.into_iter().map(contents_json).collect::<Vec<_>>() }),
    };
    let denied = denials.take();
    if !denied.is_empty() {
        result["_meta"] = json!({ "corral/denied": denied });
    }
    Ok(Ok(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_use_mcp_names() {
        let r = Resource {
            uri: "test://a".into(),
            name: "a".into(),
            title: None,
            description: Some("d".into()),
            mime_type: Some("text/plain".into()),
            size: Some(3),
        };
        assert_eq!(resource_json(&r), json!({"uri":"test://a","name":"a","description":"d","mimeType":"text/plain","size":3}));
        let c = contents_json(Contents { uri: "test://b".into(), mime_type: None, body: ResourceBody::Bytes(vec![1, 2, 3]) });
        assert_eq!(c, json!({"uri":"test://b","blob":"AQID"}));
    }
}
