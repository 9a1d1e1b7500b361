//! An issuer identifier as corral trusts it: an `https://` URL without query or fragment (RFC
//! 8414 §2), or `http://` on a loopback address (a test's authorization server).

use std::fmt;
use std::net::IpAddr;

/// A trusted authorization server's issuer identifier, kept exactly as given (a token's `iss`
/// must equal it byte for byte).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IssuerUrl(String);

impl IssuerUrl {
    /// Checks `text`: https (or http on loopback), a host, no query, no fragment.
    pub fn parse(text: &str) -> Result<IssuerUrl, String> {
        let url = http::Uri::try_from(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        let host = url.host().ok_or_else(|| format!("`{text}` has no host"))?;
        match url.scheme_str() {
            Some("https") => {}
            Some("http") if is_loopback(host) => {}
            Some("http") => return Err(format!("`{text}` is plain http: issuers must be https:// (http:// only on a loopback address)")),
            _ => return Err(format!("`{text}` is not an https:// URL")),
        }
        if text.contains('?') || text.contains('#') {
            return Err(format!("`{text}` has a query or fragment; an issuer identifier has neither (RFC 8414 §2)"));
        }
        Ok(IssuerUrl(text.to_owned()))
    }

    /// The identifier as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it is served over plain http (loopback only).
    pub fn is_plain(&self) -> bool {
        self.0.starts_with("http://")
    }
}

/// `localhost`, `127.0.0.0/8` or `[::1]`.
pub fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl fmt::Display for IssuerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_on_loopback_never_a_query() {
        assert!(IssuerUrl::parse("https://login.example.com/realms/corp").is_ok());
        assert!(IssuerUrl::parse("http://127.0.0.1:9797").is_ok());
        assert!(IssuerUrl::parse("http://localhost:8080/").is_ok());
        assert!(IssuerUrl::parse("http://[::1]:1").is_ok());
        assert!(IssuerUrl::parse("http://id.example.com").unwrap_err().contains("https://"));
        assert!(IssuerUrl::parse("https://id.example.com/?tenant=1").unwrap_err().contains("query"));
        assert!(IssuerUrl::parse("ftp://id.example.com").is_err());
        assert!(IssuerUrl::parse("id.example.com").is_err());
    }
}
