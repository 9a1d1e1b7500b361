//! A plugin's `[permissions]`: what it may reach beyond its own memory. Default deny.
//!
//! Every field parsed here is enforced by the runtime; there is deliberately no syntax for
//! anything the runtime cannot enforce (CIDR ranges, deny lists, UDP, listening sockets).

use std::net::IpAddr;
use std::path::PathBuf;

/// The grants of one plugin, checked and resolved at load time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Permissions {
    /// Directories preopened in the guest.
    pub dirs: Vec<DirGrant>,
    /// Variables the guest sees, in manifest order. Values are never logged or shown.
    pub env: Vec<EnvVar>,
    /// Where outgoing connections (TCP, `wasi:http`) may go.
    pub network: Vec<NetPattern>,
}

impl Permissions {
    /// Whether the plugin is granted nothing (the default).
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.env.is_empty() && self.network.is_empty()
    }

    /// One line for people; names variables but never their values.
    pub fn summary(&self) -> String {
        if self.is_empty() {
            return "no permissions".into();
        }
        let mut parts = Vec::new();
        if !self.dirs.is_empty() {
            let dirs: Vec<String> =
                self.dirs.iter().map(|d| format!("{} = {} ({})", d.guest, d.host.display(), if d.writable { "rw" } else { "ro" })).collect();
            parts.push(format!("dirs {}", dirs.join(", ")));
        }
        if !self.env.is_empty() {
            let env: Vec<String> = self.env.iter().map(|v| format!("{} ({})", v.name, if v.passed { "passed" } else { "set" })).collect();
            parts.push(format!("env {}", env.join(", ")));
        }
        if !self.network.is_empty() {
            let net: Vec<String> = self.network.iter().map(ToString::to_string).collect();
            parts.push(format!("network {}", net.join(", ")));
        }
        parts.join("; ")
    }

    /// The grants as JSON (variable names only).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "dirs": self.dirs.iter().map(|d| serde_json::json!({ "host": d.host, "guest": d.guest, "mode": if d.writable { "rw" } else { "ro" } })).collect::<Vec<_>>(),
            "env": {
                "passed": self.env.iter().filter(|v| v.passed).map(|v| &v.name).collect::<Vec<_>>(),
                "set": self.env.iter().filter(|v| !v.passed).map(|v| &v.name).collect::<Vec<_>>(),
            },
            "network": self.network.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })
    }
}

/// A host directory preopened in the guest.
#[derive(Clone, Debug, PartialEq)]
pub struct DirGrant {
    /// Absolute, canonical host path.
    pub host: PathBuf,
    /// Where the guest finds it (absolute).
    pub guest: String,
    /// Read-write (`mode = "rw"`) rather than read-only.
    pub writable: bool,
}

/// One environment variable given to the guest.
#[derive(Clone, PartialEq)]
pub struct EnvVar {
    /// The variable's name.
    pub name: String,
    /// Its value; never logged or shown.
    pub value: String,
    /// Passed through from the host's environment (rather than set in the manifest).
    pub passed: bool,
}

impl std::fmt::Debug for EnvVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvVar").field("name", &self.name).field("passed", &self.passed).finish_non_exhaustive()
    }
}

/// The host part of a network pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum HostPattern {
    /// One DNS name, lower case.
    Name(String),
    /// `*.example.com`: any name ending in `.example.com` (not `example.com` itself).
    Subdomains(String),
    /// One address (an IPv6 one is written in brackets).
    Ip(IpAddr),
}

/// `host:port` an outgoing connection may go to; `port` `None` is `*`.
#[derive(Clone, Debug, PartialEq)]
pub struct NetPattern {
    /// The host or hosts allowed.
    pub host: HostPattern,
    /// The port allowed; `None` allows any.
    pub port: Option<u16>,
}

impl NetPattern {
    /// Parses `api.example.com:443`, `*.example.com:*`, `127.0.0.1:8080` or `[::1]:80`.
    pub fn parse(text: &str) -> Result<NetPattern, String> {
        let bad = |why: &str| format!("`{text}` {why}; write host:port, e.g. \"api.example.com:443\", \"*.example.com:443\" or \"127.0.0.1:8080\"");
        if text.contains('/') {
            return Err(bad("looks like a CIDR range or URL, which corral does not accept"));
        }
        let (host, port) = text.rsplit_once(':').ok_or_else(|| bad("has no port"))?;
        let port = match port {
            "*" => None,
            p => Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad("has a port that is not a number from 1 to 65535 or *"))?),
        };
        let host = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            HostPattern::Ip(IpAddr::V6(inner.parse().map_err(|_| bad("has an invalid IPv6 address"))?))
        } else if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
            HostPattern::Ip(IpAddr::V4(ip))
        } else if let Some(domain) = host.strip_prefix("*.") {
            check_dns_name(domain).map_err(|e| bad(&e))?;
            HostPattern::Subdomains(domain.to_ascii_lowercase())
        } else {
            check_dns_name(host).map_err(|e| bad(&e))?;
            HostPattern::Name(host.to_ascii_lowercase())
        };
        Ok(NetPattern { host, port })
    }

    /// Whether a DNS name may be resolved under this pattern (ports are checked at connect).
    pub fn allows_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        match &self.host {
            HostPattern::Name(n) => *n == name,
            HostPattern::Subdomains(d) => name.len() > d.len() + 1 && name.ends_with(d.as_str()) && name.as_bytes()[name.len() - d.len() - 1] == b'.',
            HostPattern::Ip(ip) => name.parse::<IpAddr>().is_ok_and(|n| n == *ip),
        }
    }

    /// Whether `port` is allowed by this pattern.
    pub fn allows_port(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

impl std::fmt::Display for NetPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostPattern::Name(n) => write!(f, "{n}")?,
            HostPattern::Subdomains(d) => write!(f, "*.{d}")?,
            HostPattern::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => write!(f, ":*"),
        }
    }
}

fn check_dns_name(name: &str) -> Result<(), String> {
    let ok_label =
        |l: &str| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') && !l.starts_with('-') && !l.ends_with('-');
    if name.is_empty() || name.len() > 253 || !name.split('.').all(ok_label) {
        return Err(if name.contains('*') { "has a wildcard other than a leading `*.`".into() } else { "has an invalid host name".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_match() {
        let p = NetPattern::parse("*.Example.com:443").unwrap();
        assert!(p.allows_name("api.example.com") && p.allows_name("a.b.example.com."));
        assert!(!p.allows_name("example.com") && !p.allows_name("badexample.com"));
        assert!(p.allows_port(443) && !p.allows_port(80));
        let p = NetPattern::parse("localhost:*").unwrap();
        assert!(p.allows_name("LOCALHOST") && p.allows_port(1));
        assert_eq!(NetPattern::parse("[::1]:80").unwrap().host, HostPattern::Ip("::1".parse().unwrap()));
        assert_eq!(NetPattern::parse("127.0.0.1:8080").unwrap().to_string(), "127.0.0.1:8080");
    }

    #[test]
    fn unenforceable_patterns_are_refused() {
        for bad in ["10.0.0.0/8:80", "example.com", "example.com:0", "example.com:http", "ex*ample.com:80", "*:80", "http://example.com:80", "a..b:1"] {
            assert!(NetPattern::parse(bad).is_err(), "{bad} should be refused");
        }
    }
}
