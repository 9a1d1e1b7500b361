//! Who a caller secret belongs to: a principal that is the same person from one request to
//! the next, written as the audit trail writes principals.

use std::fmt;
use std::str::FromStr;

use crate::principal::{Owner, Principal, Wire};

/// A principal that can hold secrets: the local user (`local`), a static token's holder
/// (`token:NAME`), or an OAuth subject of its issuer (`user:ISSUER SUBJECT`). An HTTP session
/// without authentication and the anonymous 2026-07-28 client are nobody in particular, so
/// they hold none. Both eras' requests of one principal share its secrets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Holder(String);

impl Holder {
    /// The holder a request's owner is, if it can hold secrets.
    pub fn of(owner: &Owner) -> Option<Holder> {
        match owner.principal() {
            Principal::Local | Principal::Token(_) | Principal::User(_) => Some(Holder(owner.principal_key().to_owned())),
            Principal::Session(_) | Principal::Anonymous => None,
        }
    }

    /// A holder as a store keeps it (only ever written by [`Holder::as_str`]).
    pub(super) fn from_stored(text: &str) -> Holder {
        Holder(text.to_owned())
    }

    /// The stored form (`token:ci`): what the rows are keyed by and the audit trail shows.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Holder {
    type Err = String;

    /// A principal as `--principal` takes it, in the audit trail's words.
    fn from_str(text: &str) -> Result<Holder, String> {
        let hint = "write it as the audit trail does: `local`, `token:NAME`, or `user:ISSUER SUBJECT`";
        let owner = Owner::parse(text).filter(|o| o.wire() == Wire::Sessions).ok_or_else(|| format!("{text:?} is not a principal: {hint}"))?;
        let empty = match owner.principal() {
            Principal::Token(name) => name.is_empty(),
            Principal::User(user) => user.issuer.is_empty() || user.subject.is_empty(),
            _ => false,
        };
        if empty {
            return Err(format!("{text:?} names no one: {hint}"));
        }
        Holder::of(&owner).ok_or_else(|| format!("{text:?} cannot hold secrets: it is nobody in particular from one request to the next; {hint}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::principal::User;

    #[test]
    fn holders_read_as_the_audit_trail_writes_them_and_both_eras_share_one() {
        for text in ["local", "token:ci", "user:https://id.example ada lovelace"] {
            assert_eq!(text.parse::<Holder>().unwrap().as_str(), text);
        }
        let user = Principal::User(Arc::new(User { issuer: "https://id.example".into(), subject: "ada".into(), ..User::default() }));
        let sessions = Holder::of(&Owner::new(user.clone(), Wire::Sessions)).unwrap();
        assert_eq!(Holder::of(&Owner::new(user, Wire::Stateless)), Some(sessions.clone()));
        assert_eq!(sessions.as_str(), "user:https://id.example ada");
        assert_eq!(Holder::of(&Owner::new(Principal::Anonymous, Wire::Stateless)), None);
        assert_eq!(Holder::of(&Owner::new(Principal::Session("s".into()), Wire::Sessions)), None);
        for bad in ["ci", "token:", "modern:token:ci", "session:abc", "anonymous", "user:https://id.example", ""] {
            assert!(bad.parse::<Holder>().is_err(), "{bad}");
        }
        assert!("session:abc".parse::<Holder>().unwrap_err().contains("cannot hold secrets"));
    }
}
