//! Where an issuer keeps its signing keys (and its introspection endpoint): its authorization
//! server metadata, found at the RFC 8414 well-known URL, else at OpenID Connect's
//! (`/.well-known/openid-configuration`).
//! The document must name the issuer it was asked for (RFC 8414 §3.3), or a server could pass
//! off another's keys.

use super::fetch::Fetcher;
use super::IssuerUrl;

/// What corral reads from an issuer's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Where the signing keys are (`jwks_uri`).
    pub jwks_uri: String,
    /// Where opaque tokens are introspected (`introspection_endpoint`, RFC 8414 §2), if it says.
    pub introspection_endpoint: Option<String>,
}

/// The metadata URLs to try for `issuer`, in order: RFC 8414 (the well-known segment inserted
/// before the issuer's path), then OpenID Connect Discovery (appended to it).
pub fn candidates(issuer: &IssuerUrl) -> Vec<String> {
    let text = issuer.as_str().trim_end_matches('/');
    let (scheme, rest) = text.split_once("://").expect("an IssuerUrl has a scheme");
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let path = if path.is_empty() { String::new() } else { format!("/{path}") };
    vec![
        format!("{scheme}://{authority}/.well-known/oauth-authorization-server{path}"),
        format!("{scheme}://{authority}{path}/.well-known/openid-configuration"),
    ]
}

/// Fetches `issuer`'s metadata: the first candidate that answers with a document for this
/// issuer naming a `jwks_uri`.
pub async fn discover(fetcher: &Fetcher, issuer: &IssuerUrl) -> Result<Metadata, String> {
    let mut why = Vec::new();
    for url in candidates(issuer) {
        match fetcher.json(&url).await {
            Ok(document) => return read(issuer, &document).map_err(|e| format!("{url}: {e}")),
            Err(e) => why.push(format!("{url}: {e}")),
        }
    }
    Err(why.join("; "))
}

fn read(issuer: &IssuerUrl, document: &serde_json::Value) -> Result<Metadata, String> {
    let named = document.get("issuer").and_then(|v| v.as_str()).unwrap_or("");
    if named != issuer.as_str() {
        return Err(format!("the metadata names issuer `{named}`, not `{issuer}`"));
    }
    let jwks_uri = document.get("jwks_uri").and_then(|v| v.as_str()).ok_or("the metadata has no jwks_uri")?;
    check_endpoint(issuer, "jwks_uri", jwks_uri)?;
    let introspection_endpoint = match document.get("introspection_endpoint").and_then(|v| v.as_str()) {
        Some(url) => Some(check_endpoint(issuer, "introspection_endpoint", url)?),
        None => None,
    };
    Ok(Metadata { jwks_uri: jwks_uri.to_owned(), introspection_endpoint })
}

/// An endpoint the metadata names must be https, as the issuer is (plain http only for an issuer
/// on a loopback address).
fn check_endpoint(issuer: &IssuerUrl, field: &str, url: &str) -> Result<String, String> {
    if url.starts_with("https://") || (issuer.is_plain() && url.starts_with("http://")) {
        return Ok(url.to_owned());
    }
    Err(format!("{field} `{url}` is not https"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn well_known_urls_insert_before_the_path_then_append() {
        let issuer = IssuerUrl::parse("https://id.example.com/realms/corp").unwrap();
        assert_eq!(
            candidates(&issuer),
            [
                "https://id.example.com/.well-known/oauth-authorization-server/realms/corp",
                "https://id.example.com/realms/corp/.well-known/openid-configuration"
            ]
        );
        let root = IssuerUrl::parse("http://127.0.0.1:9797/").unwrap();
        assert_eq!(candidates(&root)[0], "http://127.0.0.1:9797/.well-known/oauth-authorization-server");
    }

    #[test]
    fn metadata_for_another_issuer_or_without_keys_is_refused() {
        let issuer = IssuerUrl::parse("https://id.example.com").unwrap();
        let good = json!({"issuer": "https://id.example.com", "jwks_uri": "https://id.example.com/jwks"});
        assert_eq!(read(&issuer, &good).unwrap().jwks_uri, "https://id.example.com/jwks");
        assert_eq!(read(&issuer, &good).unwrap().introspection_endpoint, None);
        let introspecting = json!({"issuer": "https://id.example.com", "jwks_uri": "https://id.example.com/jwks",
            "introspection_endpoint": "https://id.example.com/token/introspection"});
        assert_eq!(read(&issuer, &introspecting).unwrap().introspection_endpoint.as_deref(), Some("https://id.example.com/token/introspection"));
        let plain_introspection = json!({"issuer": "https://id.example.com", "jwks_uri": "https://id.example.com/jwks",
            "introspection_endpoint": "http://id.example.com/introspect"});
        assert!(read(&issuer, &plain_introspection).unwrap_err().contains("introspection_endpoint"));
        let other = json!({"issuer": "https://evil.example.com", "jwks_uri": "https://id.example.com/jwks"});
        assert!(read(&issuer, &other).unwrap_err().contains("evil"));
        assert!(read(&issuer, &json!({"issuer": "https://id.example.com"})).unwrap_err().contains("jwks_uri"));
        let plain = json!({"issuer": "https://id.example.com", "jwks_uri": "http://id.example.com/jwks"});
        assert!(read(&issuer, &plain).unwrap_err().contains("not https"));
    }
}
