//! A plugin's `[secrets.NAME]`: the credentials it needs, declared so the host can resolve them
//! per call (a caller's own, or the operator's) and put them into that call's environment only.
//!
//! Only names, scopes and words for people live here; values never pass through `config`.

use std::fmt;

/// Who gives a secret's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecretScope {
    /// Each principal gives their own (stored encrypted, per principal).
    Caller,
    /// The operator gives one for every caller (`--secrets-dir`).
    Host,
}

impl SecretScope {
    /// The manifest's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretScope::Caller => "caller",
            SecretScope::Host => "host",
        }
    }
}

impl fmt::Display for SecretScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One declared secret: the guest reads it as the environment variable `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretDecl {
    /// The variable's name, also the secret's name in the stores and on the page.
    pub name: String,
    /// Who gives it.
    pub scope: SecretScope,
    /// What it is for, shown to whoever is asked for it.
    pub description: String,
    /// Where a person gets such a credential (an `https://` URL, or `http://` on a loopback host).
    pub help_url: Option<String>,
}

/// The longest secret name: it is an environment variable name and a row key.
const MAX_NAME: usize = 64;

/// A secret name is an environment variable a POSIX shell could also name: `A-Z`, `a-z`, `0-9`
/// and `_`, not starting with a digit, at most 64 characters.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    let ok_start = name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if ok_start && name.len() <= MAX_NAME && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(())
    } else {
        Err(format!("{name:?} is not a secret name: 1-{MAX_NAME} characters of A-Z, a-z, 0-9 and `_`, not starting with a digit"))
    }
}

/// Reads a scope word.
pub fn parse_scope(word: &str) -> Result<SecretScope, String> {
    match word {
        "caller" => Ok(SecretScope::Caller),
        "host" => Ok(SecretScope::Host),
        other => Err(format!("scope {other:?} is neither \"caller\" (each principal gives their own) nor \"host\" (the operator gives one)")),
    }
}

/// A help URL is shown to people as a link: only `https://`, or `http://` on a loopback host.
pub fn check_help_url(url: &str) -> Result<(), String> {
    let refuse = || format!("help_url {url:?} must be an https:// URL (or http:// on localhost or 127.0.0.1)");
    let (scheme, rest) = url.split_once("://").ok_or_else(refuse)?;
    let host_and_port = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match host_and_port.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => host_and_port,
    };
    let clean = !url.contains(char::is_whitespace) && !url.chars().any(char::is_control) && !host.is_empty() && !host.contains('@');
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    match scheme {
        "https" if clean => Ok(()),
        "http" if clean && loopback => Ok(()),
        _ => Err(refuse()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_scopes_and_urls_are_checked() {
        for good in ["GITHUB_TOKEN", "_x", "a1"] {
            assert!(check_secret_name(good).is_ok(), "{good}");
        }
        for bad in ["", "1A", "A-B", "A B", "A=B", &"A".repeat(65)] {
            assert!(check_secret_name(bad).unwrap_err().contains("is not a secret name"), "{bad}");
        }
        assert_eq!(parse_scope("caller"), Ok(SecretScope::Caller));
        assert_eq!(parse_scope("host"), Ok(SecretScope::Host));
        assert!(parse_scope("user").unwrap_err().contains("\"user\""));
        for good in ["https://github.com/settings/tokens", "http://127.0.0.1:8080/x", "http://localhost/help"] {
            assert!(check_help_url(good).is_ok(), "{good}");
        }
        for bad in ["github.com", "http://example.com/", "javascript:alert(1)", "https://", "https://a b", "https://user@evil"] {
            assert!(check_help_url(bad).is_err(), "{bad}");
        }
    }
}
