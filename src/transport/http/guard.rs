//! Who may talk to the HTTP endpoint: DNS-rebinding protection (`Host`, `Origin`) and optional
//! bearer tokens.

use std::collections::HashSet;

use axum::http::{HeaderMap, StatusCode};
use subtle::ConstantTimeEq;

/// Request checks, set up once from the flags.
pub struct Guard {
    allowed_hosts: HashSet<String>,
    allowed_origins: HashSet<String>,
    /// (identity, token); empty when authentication is off.
    tokens: Vec<(String, Vec<u8>)>,
}

/// Why a request's headers were turned away: the status and a message for the body. (Not a
/// plugin's `registry::Refusal`.)
pub type HeaderRefusal = (StatusCode, String);

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The headers a request may carry once at most, as their names are written in messages. Each is
/// checked or routed on by reading one copy, while a proxy, a log or the next hop may read the
/// other: two copies are refused rather than guessed between.
const SINGLE: [&str; 6] = ["Host", "Origin", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"];

/// Refuses (400) a request that repeats a header of [`SINGLE`], naming it.
pub fn check_single(headers: &HeaderMap) -> Result<(), HeaderRefusal> {
    match SINGLE.iter().find(|name| headers.get_all(**name).iter().nth(1).is_some()) {
        Some(name) => Err((StatusCode::BAD_REQUEST, format!("more than one {name} header"))),
        None => Ok(()),
    }
}

impl Guard {
    /// `extra_hosts` and `extra_origins` add to the loopback names that are always allowed.
    pub fn new(extra_hosts: &[String], extra_origins: &[String], tokens: Vec<(String, String)>) -> Guard {
        let allowed_hosts = LOOPBACK.iter().map(|h| h.to_string()).chain(extra_hosts.iter().map(|h| h.to_ascii_lowercase())).collect();
        let allowed_origins = extra_origins.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()).collect();
        let tokens = tokens.into_iter().map(|(who, token)| (who, token.into_bytes())).collect();
        Guard { allowed_hosts, allowed_origins, tokens }
    }

    /// Whether requests need a bearer token.
    pub fn auth_enabled(&self) -> bool {
        !self.tokens.is_empty()
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

    /// The caller's identity: the token's name when authentication is on, `None` when off.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<String>, HeaderRefusal> {
        if self.tokens.is_empty() {
            return Ok(None);
        }
        // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` is `Bearer`.
        let presented = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim_start().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(presented) = presented else {
            return Err((StatusCode::UNAUTHORIZED, "missing bearer token: send `Authorization: Bearer TOKEN`".into()));
        };
        // Compare against every token in constant time, so timing reveals neither which token
        // nor how much of one matched.
        let mut found = None;
        for (who, token) in &self.tokens {
            if bool::from(token.as_slice().ct_eq(presented.as_bytes())) {
                found = Some(who.clone());
            }
        }
        found.map(Some).ok_or((StatusCode::UNAUTHORIZED, "invalid bearer token".into()))
    }
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
        let g = Guard::new(&[], &["https://app.example".into()], vec![]);
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

    #[test]
    fn bearer_tokens_name_their_holder() {
        let g = Guard::new(&[], &[], parse_tokens("# ops\nalice s3cret\nbob  other\n", "tokens"));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Bearer s3cret")])).unwrap(), Some("alice".into()));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Bearer nope")])).unwrap_err().0, StatusCode::UNAUTHORIZED);
        assert_eq!(g.authenticate(&headers(&[])).unwrap_err().0, StatusCode::UNAUTHORIZED);
        // Schemes are case-insensitive; other schemes are not bearer tokens.
        assert_eq!(g.authenticate(&headers(&[("authorization", "bearer s3cret")])).unwrap(), Some("alice".into()));
        assert_eq!(g.authenticate(&headers(&[("authorization", "BEARER other")])).unwrap(), Some("bob".into()));
        assert_eq!(g.authenticate(&headers(&[("authorization", "Basic s3cret")])).unwrap_err().0, StatusCode::UNAUTHORIZED);
    }
}
