//! The claims corral reads from an access token, the same names in a JWT's payload and in an
//! introspection answer (RFC 7662 §2.2 reuses the JWT claim names), and the user they name.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::rejection::Reason;
use crate::principal::User;

/// The claims read from a token (the registered ones `jsonwebtoken` checks are read again there),
/// or from an introspection answer, which uses the same names.
#[derive(Deserialize)]
pub(super) struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<StringOrList>,
    #[serde(default)]
    scp: Option<StringOrList>,
    #[serde(default)]
    groups: Option<StringOrList>,
    #[serde(default)]
    roles: Option<StringOrList>,
    #[serde(default)]
    realm_access: Option<RealmAccess>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    /// Read as a NumericDate by [`check_times`] (`jsonwebtoken` takes whole seconds only).
    #[serde(default)]
    exp: Option<Value>,
    #[serde(default)]
    nbf: Option<Value>,
}

impl Claims {
    /// The token's `exp` and `nbf` checked at `now` ([`check_times`]; a JWT must have `exp`).
    pub(super) fn check_times(&self, now: u64, leeway: Duration) -> Result<Option<u64>, Reason> {
        check_times(self.exp.as_ref(), self.nbf.as_ref(), now, leeway, true)
    }
}

/// A token's `exp` and `nbf`, RFC 7519 NumericDates (seconds since the epoch, a fraction
/// allowed), checked at `now` (seconds) with `leeway`: its `exp` in whole seconds (rounded down,
/// for how long it may be remembered), or why it is refused. A JWT and an introspection answer
/// alike; `exp` may be absent only where `required` is false.
pub(super) fn check_times(exp: Option<&Value>, nbf: Option<&Value>, now: u64, leeway: Duration, required: bool) -> Result<Option<u64>, Reason> {
    let date = |value: Option<&Value>| match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_f64().filter(|seconds| seconds.is_finite() && *seconds >= 0.0).map(Some).ok_or(Reason::Claims),
    };
    let (now, leeway) = (now as f64, leeway.as_secs_f64());
    let exp = date(exp)?;
    match exp {
        None if required => return Err(Reason::Claims),
        Some(exp) if exp + leeway <= now => return Err(Reason::Expired),
        _ => {}
    }
    if date(nbf)?.is_some_and(|nbf| nbf > now + leeway) {
        return Err(Reason::NotYetValid);
    }
    Ok(exp.map(|exp| exp.floor() as u64))
}

#[derive(Deserialize)]
struct RealmAccess {
    #[serde(default)]
    roles: Vec<String>,
}

/// A claim written as one space-separated string or as a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrList {
    String(String),
    List(Vec<String>),
}

impl StringOrList {
    fn into_vec(self) -> Vec<String> {
        match self {
            StringOrList::String(s) => s.split_whitespace().map(str::to_owned).collect(),
            StringOrList::List(list) => list,
        }
    }
}

/// The user `claims` name, with what a policy matches on, or `None` when the subject is empty
/// (it would name no one, or everyone whose token lacks one).
pub(super) fn user_from_claims(claims: Claims) -> Option<User> {
    if claims.sub.is_empty() {
        return None;
    }
    let scopes = claims.scope.or(claims.scp).map(StringOrList::into_vec).unwrap_or_default();
    let mut groups: Vec<String> = claims.groups.map(StringOrList::into_vec).unwrap_or_default();
    groups.extend(claims.roles.map(StringOrList::into_vec).unwrap_or_default());
    groups.extend(claims.realm_access.map(|r| r.roles).unwrap_or_default());
    Some(User { issuer: claims.iss, subject: claims.sub, scopes, groups, client_id: claims.client_id.or(claims.azp) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_become_a_user_with_scopes_groups_and_client() {
        let claims: Claims = serde_json::from_value(serde_json::json!({
            "iss": "https://id.example", "sub": "ada", "scp": ["mcp", "tools:read"],
            "groups": "ops dev", "realm_access": {"roles": ["admin"]}, "azp": "vscode"
        }))
        .unwrap();
        let user = user_from_claims(claims).unwrap();
        assert_eq!((user.issuer.as_str(), user.subject.as_str()), ("https://id.example", "ada"));
        assert_eq!(user.scopes, ["mcp", "tools:read"]);
        assert_eq!(user.groups, ["ops", "dev", "admin"]);
        assert_eq!(user.client_id.as_deref(), Some("vscode"));
    }

    #[test]
    fn times_are_numeric_dates_a_fraction_allowed() {
        use serde_json::json;
        let (now, leeway) = (1_000_000, Duration::from_secs(30));
        let check = |exp: Value, nbf: Value| check_times(Some(&exp), Some(&nbf), now, leeway, true);
        assert_eq!(check(json!(1_000_600.75), json!(999_999.5)), Ok(Some(1_000_600)), "fractions are dates");
        assert_eq!(check(json!(1_000_600), Value::Null), Ok(Some(1_000_600)));
        assert_eq!(check(json!(999_970.5), Value::Null), Ok(Some(999_970)), "within the leeway");
        assert_eq!(check(json!(999_969.5), Value::Null), Err(Reason::Expired));
        assert_eq!(check(json!(1_000_600), json!(1_000_030.5)), Err(Reason::NotYetValid));
        assert_eq!(check(json!("soon"), Value::Null), Err(Reason::Claims));
        assert_eq!(check(json!(-1), Value::Null), Err(Reason::Claims));
        assert_eq!(check(Value::Null, Value::Null), Err(Reason::Claims), "a JWT must have exp");
        assert_eq!(check_times(None, None, now, leeway, false), Ok(None), "an introspection answer need not");
    }
}
