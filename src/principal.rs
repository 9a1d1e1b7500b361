//! Who a request acts for ([`Principal`]) and who owns what it creates ([`Owner`]).
//!
//! Tasks and results kept by reference belong to an owner, and only that owner sees or steers
//! them. The stores keep an owner as one string, its [`Owner::key`]; this module is the only
//! place that writes or reads that string's grammar, so the rest of the host compares owners,
//! never parses them.

use std::fmt;
use std::sync::Arc;

/// Who a request acts for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Principal {
    /// The local user at the other end of a stdio connection.
    Local,
    /// The holder of a bearer token from `--auth-tokens-file`, by the token's name (never the
    /// token itself).
    Token(String),
    /// An HTTP session without authentication, by its session id: it lives in one host's
    /// memory, so what it owns is reachable only through it.
    Session(String),
    /// A 2026-07-28 client over HTTP without authentication. They all share it: the task id,
    /// which is unguessable, is then the only capability to a task (as the tasks extension
    /// says).
    Anonymous,
    /// The subject of an OAuth access token an authorization server issued, with the claims a
    /// policy matches on. Two tokens for the same issuer and subject are the same principal.
    User(Arc<User>),
}

/// A signed-in user (or client): who issued the token, whom it names, and what it grants.
///
/// Equality and hashing look at `issuer` and `subject` only: the scopes of a user's next token
/// may differ, and what the user owns must not.
#[derive(Clone, Debug, Default)]
pub struct User {
    /// The authorization server that issued the token (`iss`), exactly as it wrote it.
    pub issuer: String,
    /// Whom the token names (`sub`).
    pub subject: String,
    /// The scopes the token grants (`scope`, space-separated, or `scp`).
    pub scopes: Vec<String>,
    /// The groups and roles the token carries (`groups`, `roles`, Keycloak's `realm_access.roles`).
    pub groups: Vec<String>,
    /// The OAuth client the token was issued to (`client_id` or `azp`), when it says.
    pub client_id: Option<String>,
}

impl PartialEq for User {
    fn eq(&self, other: &User) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }
}

impl Eq for User {}

impl std::hash::Hash for User {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.issuer.hash(state);
        self.subject.hash(state);
    }
}

/// Which wire made what an owner owns. Each era reads only its own tasks: their shapes and
/// rules differ (a 2026-07-28 task inlines its outcome and takes `tasks/update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wire {
    /// 2025-11-25: initialized sessions.
    Sessions,
    /// 2026-07-28: stateless requests.
    Stateless,
}

/// Who owns a task or a kept result: a principal on one wire.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    principal: Principal,
    wire: Wire,
    /// The stored form, made once.
    key: Arc<str>,
}

const LOCAL: &str = "local";
const TOKEN: &str = "token:";
const SESSION: &str = "session:";
const ANONYMOUS: &str = "anonymous";
/// `user:{issuer} {subject}`: an issuer is a URL, which holds no space, so the first space
/// ends it whatever the subject holds.
const USER: &str = "user:";
const STATELESS: &str = "modern:";

impl Owner {
    /// `principal` on `wire`.
    pub fn new(principal: Principal, wire: Wire) -> Owner {
        let principal_key = match &principal {
            Principal::Local => LOCAL.to_owned(),
            Principal::Token(name) => format!("{TOKEN}{name}"),
            Principal::Session(id) => format!("{SESSION}{id}"),
            Principal::Anonymous => ANONYMOUS.to_owned(),
            Principal::User(user) => format!("{USER}{} {}", user.issuer, user.subject),
        };
        let key = match wire {
            Wire::Sessions => principal_key,
            Wire::Stateless => format!("{STATELESS}{principal_key}"),
        };
        Owner { principal, wire, key: key.into() }
    }

    /// The owner a stored key names, `None` for a key this grammar never wrote.
    pub fn parse(key: &str) -> Option<Owner> {
        let (wire, rest) = match key.strip_prefix(STATELESS) {
            Some(rest) => (Wire::Stateless, rest),
            None => (Wire::Sessions, key),
        };
        let principal = if rest == LOCAL {
            Principal::Local
        } else if rest == ANONYMOUS {
            Principal::Anonymous
        } else if let Some(name) = rest.strip_prefix(TOKEN) {
            Principal::Token(name.to_owned())
        } else if let Some(id) = rest.strip_prefix(SESSION) {
            Principal::Session(id.to_owned())
        } else if let Some((issuer, subject)) = rest.strip_prefix(USER).and_then(|user| user.split_once(' ')) {
            Principal::User(Arc::new(User { issuer: issuer.to_owned(), subject: subject.to_owned(), ..User::default() }))
        } else {
            return None;
        };
        Some(Owner { principal, wire, key: key.into() })
    }

    /// The same principal on the 2026-07-28 wire.
    pub fn stateless(&self) -> Owner {
        match self.wire {
            Wire::Stateless => self.clone(),
            Wire::Sessions => Owner::new(self.principal.clone(), Wire::Stateless),
        }
    }

    /// The stored form: what the task store compares.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key's principal part (`token:ci`, `user:{issuer} {subject}`, `local`, …), without
    /// the wire: who acted, as the audit trail names them (never a secret).
    pub fn principal_key(&self) -> &str {
        match self.wire {
            Wire::Stateless => &self.key[STATELESS.len()..],
            Wire::Sessions => &self.key,
        }
    }

    /// Who this is.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Which wire's tasks these are.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Whether the owner can still reach what it owns once the host that held it is gone. An
    /// HTTP session without auth lived only in that host's memory; the local user, a token's
    /// holder and the 2026-07-28 clients (who hold their task ids) come back.
    pub fn outlives_host(&self) -> bool {
        !matches!(self.principal, Principal::Session(_))
    }
}

impl fmt::Display for Owner {
    /// The principal as logs show it: never a secret (a token by its name only).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

/// The address a client counts as wherever one client is bounded by where it connects from
/// (connections, streams without authentication, sign-in and introspection throttles): an IPv4
/// address whole, an IPv6 address by its /64, the block one host is usually given, so a client
/// cannot step through its own addresses; an IPv4-mapped address as its IPv4 address.
pub fn client_address(ip: std::net::IpAddr) -> std::net::IpAddr {
    use std::net::IpAddr;
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owner_reads_back_from_its_key_and_the_keys_of_older_rows_read_too() {
        let user = User { issuer: "https://id.example".into(), subject: "ada lovelace".into(), scopes: vec!["mcp".into()], ..User::default() };
        for principal in
            [Principal::Local, Principal::Token("ci".into()), Principal::Session("a1b2".into()), Principal::Anonymous, Principal::User(Arc::new(user))]
        {
            for wire in [Wire::Sessions, Wire::Stateless] {
                let owner = Owner::new(principal.clone(), wire);
                assert_eq!(Owner::parse(owner.key()), Some(owner.clone()), "{owner}");
            }
        }
        // The strings earlier versions stored.
        assert_eq!(Owner::parse("local").unwrap().principal(), &Principal::Local);
        assert_eq!(Owner::parse("token:ci").unwrap(), Owner::new(Principal::Token("ci".into()), Wire::Sessions));
        assert_eq!(Owner::parse("modern:anonymous").unwrap(), Owner::new(Principal::Anonymous, Wire::Stateless));
        assert_eq!(Owner::parse("modern:token:ci").unwrap().stateless(), Owner::new(Principal::Token("ci".into()), Wire::Stateless));
        assert_eq!(Owner::parse("nobody"), None);
    }

    #[test]
    fn a_client_address_is_an_ipv4_address_or_an_ipv6_64() {
        let at = |s: &str| client_address(s.parse().unwrap()).to_string();
        assert_eq!(at("192.0.2.7"), "192.0.2.7");
        assert_eq!(at("2001:db8:1:2:ffff::1"), "2001:db8:1:2::");
        assert_eq!(at("::ffff:192.0.2.9"), "192.0.2.9");
    }

    #[test]
    fn only_a_session_owner_ends_with_its_host() {
        assert!(!Owner::new(Principal::Session("s".into()), Wire::Sessions).outlives_host());
        assert!(Owner::new(Principal::Local, Wire::Sessions).outlives_host());
        assert!(Owner::new(Principal::Token("t".into()), Wire::Stateless).outlives_host());
        assert_eq!(Owner::new(Principal::Local, Wire::Sessions).stateless().key(), "modern:local");
        assert_eq!(Owner::new(Principal::Token("ci".into()), Wire::Sessions).stateless().principal_key(), "token:ci");
        assert_eq!(Owner::new(Principal::Local, Wire::Sessions).principal_key(), "local");
        assert_eq!(Owner::new(Principal::Token("t".into()), Wire::Stateless).principal_key(), "token:t");
        assert_eq!(Owner::new(Principal::Token("t".into()), Wire::Sessions).principal_key(), "token:t");
    }
}
