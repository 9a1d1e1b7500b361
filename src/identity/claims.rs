//! The claims corral reads from an access token, the same names in a JWT's payload and in an
//! introspection answer (RFC 7662 §2.2 reuses the JWT claim names), and the user they name.

use serde::Deserialize;

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
    /// Checked by the validation; read again for how long a verified token may be remembered.
    #[serde(default)]
    exp: Option<u64>,
}

impl Claims {
    /// When the token expires, in seconds since the Unix epoch.
    pub(super) fn expires(&self) -> Option<u64> {
        self.exp
    }
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
}
