//! Who may talk to the HTTP endpoint: DNS-rebinding protection (`Host`, `Origin`) and optional
//! bearer credentials: static tokens from a file, OAuth access tokens, or both.

use std::collections::HashSet;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};

use super::tokens::Tokens;
use crate::identity::{Rejection, Verifier};
use crate::principal::Principal;

/// Request checks, set up once from the flags.
pub struct Guard {
    allowed_hosts: HashSet<String>,
    allowed_origins: HashSet<String>,
    /// The static tokens; empty when they are off (decided at start: a reload never empties them).
    tokens: Arc<Tokens>,
    /// The OAuth resource server's token check, when issuers are trusted.
    oauth: Option<Arc<Verifier>>,
}

/// Why a request's credentials were refused; the transport turns it into the status and the
/// `WWW-Authenticate` challenge the spec asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denied {
    /// No bearer credential (401, a challenge without an error code, RFC 6750 §3.1).
    Missing,
    /// A credential that is neither a known token nor a valid access token (401 `invalid_token`).
    Invalid,
    /// A valid access token without these required scopes (403 `insufficient_scope`).
    InsufficientScope(Vec<String>),
    /// The token's issuer could not be reached since start (503).
    Unavailable,
    /// An opaque token this client address may not have introspected now (429, `Retry-After`).
    Throttled {
        /// Seconds until it may.
        retry_after_secs: u64,
    },
}

/// Why a request's headers were turned away: the status and a message for the body. (Not a
/// plugin's `registry::Refusal`.)
pub type HeaderRefusal = (StatusCode, String);

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The headers a request may carry once at most, as their names are written in messages. Each is
/// checked or routed on by reading one copy, while a proxy, a log or the next hop may read the
/// other: two copies are refused rather than guessed between.
const SINGLE: [&str; 7] = ["Host", "Origin", "Authorization", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"];

/// Refuses (400) a request that repeats a header of [`SINGLE`], naming it.
pub fn check_single(headers: &HeaderMap) -> Result<(), HeaderRefusal> {
    match SINGLE.iter().find(|name| headers.get_all(**name).iter().nth(1).is_some()) {
        Some(name) => Err((StatusCode::BAD_REQUEST, format!("more than one {name} header"))),
        None => Ok(()),
    }
}

impl Guard {
    /// `extra_hosts` and `extra_origins` add to the loopback names that are always allowed.
    pub fn new(extra_hosts: &[String], extra_origins: &[String], tokens: Vec<(String, String)>, oauth: Option<Arc<Verifier>>) -> Guard {
        Guard::sharing(extra_hosts, extra_origins, Arc::new(Tokens::new(tokens)), oauth)
    }

    /// [`Guard::new`], with tokens its caller may replace while it serves (a reloaded file).
    pub fn sharing(extra_hosts: &[String], extra_origins: &[String], tokens: Arc<Tokens>, oauth: Option<Arc<Verifier>>) -> Guard {
        let allowed_hosts = LOOPBACK.iter().map(|h| h.to_string()).chain(extra_hosts.iter().map(|h| h.to_ascii_lowercase())).collect();
        let allowed_origins = extra_origins.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()).collect();
        Guard { allowed_hosts, allowed_origins, tokens, oauth }
    }

    /// The static tokens in force.
    pub fn tokens(&self) -> &Arc<Tokens> {
        &self.tokens
    }

    /// Whether requests need a bearer credential.
    pub fn auth_enabled(&self) -> bool {
        !self.tokens.is_empty() || self.oauth.is_some()
    }

    /// The OAuth token check, when issuers are trusted.
    pub fn oauth(&self) -> Option<&Arc<Verifier>> {
        self.oauth.as_ref()
    }

    /// Checks `Host` and `Origin` against the allowed names (ports are not compared). Each must
    /// come once: [`check_single`] runs first.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), HeaderRefusal> {
        if let Some(host) = headers.get("host") {
            let host = host.to_str().unwrap_or("");
            if !self.allowed_hosts.contains(&strip_port(host).to_ascii_lowercase()) {
                return Err((StatusCode::FORBIDDEN, format!("Host `{host}` is not allowed (DNS rebinding protection); see --allowed-host")));
            }
        }
        if let Some(origin) = headers.get("origin") {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return Err((StatusCode::FORBIDDEN, format!("Origin `{origin}` is not allowed; see --allowed-origin")));
            }
        }
        Ok(())
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.allowed_origins.contains(&origin) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else { return false };
        LOOPBACK.contains(&strip_port(rest))
    }

    /// The holder of the static token a request presents, by its name: all the admin listener,
    /// which trusts its own tokens file only, asks. Only [`Authorization`](SINGLE) once:
    /// [`check_single`] runs first.
    pub fn token_holder(&self, headers: &HeaderMap) -> Result<String, HeaderRefusal> {
        let Some(presented) = bearer(headers) else {
            return Err((StatusCode::UNAUTHORIZED, "missing bearer token: send `Authorization: Bearer TOKEN`".into()));
        };
        self.static_holder(presented).ok_or((StatusCode::UNAUTHORIZED, "invalid bearer token".into()))
    }

    /// The name of the static token `presented` is, compared against every token in constant
    /// time, so timing reveals neither which token nor how much of one matched.
    fn static_holder(&self, presented: &str) -> Option<String> {
        self.tokens.holder(presented)
    }

    /// Who the caller is: a static token's holder or an access token's subject when
    /// authentication is on, `None` when off. Only [`Authorization`](SINGLE) once: [`check_single`]
    /// runs first.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Principal>, Denied> {
        self.authenticate_from(headers, None).await
    }

    /// [`Guard::authenticate`] for a request from `client`: the introspections an address may
    /// cause are bounded.
    pub async fn authenticate_from(&self, headers: &HeaderMap, client: Option<std::net::IpAddr>) -> Result<Option<Principal>, Denied> {
        if !self.auth_enabled() {
            return Ok(None);
        }
        let Some(presented) = bearer(headers) else {
            return Err(Denied::Missing);
        };
        if let Some(who) = self.static_holder(presented) {
            return Ok(Some(Principal::Token(who)));
        }
        let Some(oauth) = &self.oauth else { return Err(Denied::Invalid) };
        match oauth.verify_from(presented, client).await {
            Ok(user) => match oauth.missing_scopes(&user) {
                missing if missing.is_empty() => Ok(Some(Principal::User(Arc::new(user)))),
                missing => Err(Denied::InsufficientScope(missing)),
            },
            Err(Rejection::Invalid(_)) => Err(Denied::Invalid),
            Err(Rejection::Unavailable) => Err(Denied::Unavailable),
            Err(Rejection::Throttled { retry_after_secs }) => Err(Denied::Throttled { retry_after_secs }),
        }
    }
}

/// The bearer token a request presents (the scheme is case-insensitive, RFC 9110 §11.1).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host })
}

/// Reads tokens: one per line, `NAME TOKEN` or just `TOKEN` (then named by its line number).
/// Blank lines and `#` comments are skipped.
pub fn parse_tokens(text: &str, source: &str) -> Vec<(String, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            Some(match line.split_once(char::is_whitespace) {
                Some((name, token)) => (name.to_owned(), token.trim().to_owned()),
                None => (format!("{source}:{}", n + 1), line.to_owned()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_hosts_and_origins_pass_others_are_forbidden() {
        let g = Guard::new(&[], &["https://app.example".into()], vec![], None);
        assert!(g.check_origin(&headers(&[("host", "127.0.0.1:8080"), ("origin", "http://localhost:3000")])).is_ok());
        assert!(g.check_origin(&headers(&[("host", "[::1]:80")])).is_ok());
        assert!(g.check_origin(&headers(&[("host", "localhost"), ("origin", "https://app.example")])).is_ok());
        assert_eq!(g.check_origin(&headers(&[("host", "evil.example.com")])).unwrap_err().0, StatusCode::FORBIDDEN);
        assert_eq!(g.check_origin(&headers(&[("host", "localhost"), ("origin", "http://evil.example.com")])).unwrap_err().0, StatusCode::FORBIDDEN);
    }

    #[test]
    fn a_repeated_routing_header_is_refused_naming_it() {
        let pairs = [
            ("host", "Host", "localhost", "evil.example.com"),
            ("origin", "Origin", "http://localhost", "http://evil.example.com"),
            ("authorization", "Authorization", "Bearer a", "Bearer b"),
            ("mcp-protocol-version", "MCP-Protocol-Version", "2026-07-28", "2025-11-25"),
            ("mcp-method", "Mcp-Method", "tools/call", "tools/list"),
            ("mcp-name", "Mcp-Name", "echo", "delete_everything"),
            ("mcp-session-id", "Mcp-Session-Id", "a", "b"),
        ];
        for (key, name, first, second) in pairs {
            let mut two = headers(&[("host", "localhost")]);
            two.insert(key, first.parse().unwrap());
            assert!(check_single(&two).is_ok(), "one {name} passes");
            two.append(key, second.parse().unwrap());
            assert_eq!(check_single(&two).unwrap_err(), (StatusCode::BAD_REQUEST, format!("more than one {name} header")));
        }
        // Even two equal copies: nothing downstream is bound to read them as one.
        let mut same = headers(&[("origin", "http://localhost")]);
        same.append("origin", "http://localhost".parse().unwrap());
        assert_eq!(check_single(&same).unwrap_err().1, "more than one Origin header");
    }

    #[tokio::test]
    async fn bearer_tokens_name_their_holder() {
        let g = Guard::new(&[], &[], parse_tokens("# ops\nalice s3cret\nbob  other\n", "tokens"), None);
        let holder = |name: &str| Ok(Some(Principal::Token(name.into())));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Bearer s3cret")])).await, holder("alice"));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Bearer nope")])).await, Err(Denied::Invalid));
        assert_eq!(g.authenticate(&headers(&[])).await, Err(Denied::Missing));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Bearer ")])).await, Err(Denied::Missing));
        // Schemes are case-insensitive; other schemes are not bearer tokens.
        assert_eq!(g.authenticate(&headers(&[("authorization", "bearer s3cret")])).await, holder("alice"));
        assert_eq!(g.authenticate(&headers(&[("authorization", "BEARER other")])).await, holder("bob"));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Basic s3cret")])).await, Err(Denied::Missing));
    }
}
