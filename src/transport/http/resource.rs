//! corral as an OAuth protected resource: its metadata (RFC 9728) and the `WWW-Authenticate`
//! challenges that point clients at it.
//!
//! A client that gets a 401 reads `resource_metadata` from the challenge (or tries the
//! well-known URLs), finds the authorization servers there, signs its user in and comes back
//! with a token for the `resource` named here. The metadata is public and the same for everyone.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::guard::Denied;
use crate::identity::OAuthSettings;

/// The well-known path segment of RFC 9728 §3.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The protected resource's metadata and the challenge parameters that name it, made once.
pub struct ResourceMetadata {
    /// The document served.
    document: Value,
    /// Where it is served for the resource's own path (RFC 9728 §3.1: the well-known segment
    /// between the host and the path).
    url: String,
    /// The paths this host serves the document at: the path-suffixed one and the root one.
    pub paths: Vec<String>,
    /// `scope="…"` for challenges, when scopes are required.
    scope: Option<String>,
}

impl ResourceMetadata {
    /// The document and challenges for `settings`.
    pub fn new(settings: &OAuthSettings) -> ResourceMetadata {
        let mut document = json!({
            "resource": settings.resource,
            "authorization_servers": settings.issuers.iter().map(|i| i.issuer.as_str()).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "resource_name": "corral",
        });
        // RFC 9728 §3.2: an empty array is omitted rather than sent.
        if !settings.required_scopes.is_empty() {
            document["scopes_supported"] = json!(settings.required_scopes);
        }
        let (origin, path) = split_origin(&settings.resource);
        let url = format!("{origin}{WELL_KNOWN}{path}");
        // The proxy in front may strip a path prefix of the public URL: serve the suffixed
        // document at `/mcp` too.
        let mut paths = vec![format!("{WELL_KNOWN}{path}"), format!("{WELL_KNOWN}/mcp"), WELL_KNOWN.to_owned()];
        paths.dedup();
        let scope = (!settings.required_scopes.is_empty()).then(|| settings.required_scopes.join(" "));
        ResourceMetadata { document, url, paths, scope }
    }

    /// The document, cacheable for a few minutes (RFC 9728 §7.10).
    pub fn response(&self) -> Response {
        ([("cache-control", "public, max-age=300")], Json(self.document.clone())).into_response()
    }

    /// The status and the `WWW-Authenticate` value for a refusal.
    pub fn challenge(&self, denied: &Denied) -> (StatusCode, String) {
        let metadata = format!("resource_metadata=\"{}\"", self.url);
        let scope = self.scope.as_ref().map(|s| format!(", scope=\"{s}\"")).unwrap_or_default();
        match denied {
            // RFC 6750 §3.1: no error code when the request carried no credential.
            Denied::Missing => (StatusCode::UNAUTHORIZED, format!("Bearer {metadata}{scope}")),
            Denied::Invalid => (StatusCode::UNAUTHORIZED, format!("Bearer error=\"invalid_token\", {metadata}{scope}")),
            Denied::InsufficientScope(missing) => {
                // What this request needs, all of it in one challenge (the 2026-07-28 step-up rule).
                let needed = self.scope.clone().unwrap_or_else(|| missing.join(" "));
                (StatusCode::FORBIDDEN, format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\", {metadata}"))
            }
            Denied::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, format!("Bearer {metadata}{scope}")),
            Denied::Throttled { .. } => (StatusCode::TOO_MANY_REQUESTS, format!("Bearer {metadata}{scope}")),
        }
    }
}

/// The message a refusal's body carries: what to do, never why a token failed.
pub fn message(denied: &Denied) -> String {
    match denied {
        Denied::Missing => "missing bearer token: send `Authorization: Bearer TOKEN`".into(),
        Denied::Invalid => "invalid bearer token".into(),
        Denied::InsufficientScope(missing) => format!("the access token lacks the scope {}", missing.join(" ")),
        Denied::Unavailable => "the token's authorization server cannot be reached now; try again later".into(),
        Denied::Throttled { retry_after_secs } => {
            format!("too many unknown access tokens from this address: no new token is checked for {retry_after_secs} s (see Retry-After)")
        }
    }
}

/// Sets `WWW-Authenticate` on `response` (a value the challenge built: always a valid header).
pub fn with_challenge(mut response: Response, value: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert("www-authenticate", value);
    }
    response
}

/// `https://host:port/a/b` → (`https://host:port`, `/a/b`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{IssuerSettings, IssuerUrl};
    use std::time::Duration;

    fn settings(resource: &str, scopes: &[&str]) -> OAuthSettings {
        OAuthSettings {
            resource: resource.into(),
            audience: resource.into(),
            issuers: vec![IssuerSettings { issuer: IssuerUrl::parse("https://id.example").unwrap(), extra_audiences: vec![], relax_typ: false }],
            required_scopes: scopes.iter().map(|s| s.to_string()).collect(),
            leeway: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(5),
            refetch_cooldown: Duration::from_secs(30),
            introspection: None,
        }
    }

    #[test]
    fn the_document_and_the_challenges_name_the_resource() {
        let m = ResourceMetadata::new(&settings("https://mcp.example/corral/mcp", &["mcp"]));
        assert_eq!(m.document["resource"], "https://mcp.example/corral/mcp");
        assert_eq!(m.document["authorization_servers"], json!(["https://id.example"]));
        assert_eq!(m.document["scopes_supported"], json!(["mcp"]));
        assert_eq!(m.paths, [format!("{WELL_KNOWN}/corral/mcp"), format!("{WELL_KNOWN}/mcp"), WELL_KNOWN.to_owned()]);
        let url = "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/corral/mcp\"";
        assert_eq!(m.challenge(&Denied::Missing), (StatusCode::UNAUTHORIZED, format!("Bearer {url}, scope=\"mcp\"")));
        assert_eq!(m.challenge(&Denied::Invalid), (StatusCode::UNAUTHORIZED, format!("Bearer error=\"invalid_token\", {url}, scope=\"mcp\"")));
        let (status, value) = m.challenge(&Denied::InsufficientScope(vec!["mcp".into()]));
        assert_eq!((status, value), (StatusCode::FORBIDDEN, format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", {url}")));
        let plain = ResourceMetadata::new(&settings("http://127.0.0.1:8080/mcp", &[]));
        assert!(plain.document.get("scopes_supported").is_none());
        assert_eq!(plain.paths, [format!("{WELL_KNOWN}/mcp"), WELL_KNOWN.to_owned()]);
    }
}
