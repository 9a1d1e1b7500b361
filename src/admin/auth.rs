//! Who may use the admin listener, and how a browser proves each action is its own.
//!
//! Two ways in:
//! - **A bearer token** (`Authorization: Bearer TOKEN`), for scripts: one of
//!   `--admin-tokens-file`, or, with `--admin-public-url`, an OAuth access token a trusted issuer
//!   issued for the console (see [`AdminOAuth`]). A browser never attaches one on its own, so a
//!   request that carries one cannot have been forged by another site: it needs nothing more.
//! - **A sign-in** (`POST /api/login` with an admin token in a JSON body) gives the console an
//!   `HttpOnly; SameSite=Strict` session cookie, so the token never stays in the page's reach,
//!   and a CSRF token bound to that sign-in. A cookie *is* attached by the browser, so every
//!   request that changes something and rides on the cookie must also carry the CSRF token in
//!   the `X-Corral-CSRF` header (which a cross-site form or a simple request cannot set) and a
//!   JSON body type. SameSite=Strict already keeps the cookie off cross-site requests; the
//!   header is the second lock for browsers or proxies that do not honour it.
//!
//! Sign-ins are kept in memory (a restart signs everyone out), at most [`MAX_LOGINS`] (the
//! oldest is dropped for a new one) and each for [`LOGIN_IDLE`] without use.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use subtle::ConstantTimeEq;

use super::refusal::ApiRefusal;
use crate::principal::{Owner, Principal, Wire};
use crate::transport::http::{Denied, Guard};

/// The session cookie's name.
pub const COOKIE: &str = "corral_admin";
/// The header a cookie-borne request that changes something must carry.
pub const CSRF_HEADER: &str = "x-corral-csrf";
/// Sign-ins kept at once.
const MAX_LOGINS: usize = 256;
/// A sign-in unused this long is forgotten.
const LOGIN_IDLE: Duration = Duration::from_secs(8 * 3600);

/// What an OAuth access token must grant to use the console, besides being valid for it.
#[derive(Clone, Debug)]
pub struct AdminOAuth {
    /// The scope it must grant (`--admin-oauth-scope`); the token check asks for it.
    pub scope: String,
    /// A group or role it must carry as well (`--admin-oauth-group`), when one is named.
    pub group: Option<String>,
}

/// Who is asking, and how they proved it.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The token's name in the tokens file, or an OAuth user as `user:{issuer} {subject}`.
    pub who: String,
    /// The sign-in's CSRF token when the request rode on the cookie; `None` for a bearer token.
    pub csrf: Option<String>,
}

struct Login {
    who: String,
    csrf: String,
    last_used: Instant,
}

/// The tokens and the live sign-ins.
pub struct Auth {
    guard: Guard,
    oauth: Option<AdminOAuth>,
    logins: Mutex<HashMap<String, Login>>,
}

impl Auth {
    /// `guard` checks `Host`/`Origin`, holds the admin tokens and, with `oauth`, the token check
    /// of the console's audience and scope (at least one of them: see `cli::host`).
    pub fn new(guard: Guard, oauth: Option<AdminOAuth>) -> Auth {
        Auth { guard, oauth, logins: Mutex::new(HashMap::new()) }
    }

    /// Host and Origin (DNS rebinding, cross-site requests), each header once.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), ApiRefusal> {
        crate::transport::http::check_single(headers).map_err(|(s, m)| ApiRefusal::new(s, m))?;
        self.guard.check_origin(headers).map_err(|(s, m)| ApiRefusal::new(s, m))
    }

    /// The caller of a request: a bearer token, else the session cookie.
    pub async fn caller(&self, headers: &HeaderMap) -> Result<Caller, ApiRefusal> {
        if headers.contains_key("authorization") {
            return self.bearer(headers).await;
        }
        let Some(id) = cookie(headers, COOKIE) else {
            return Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "not signed in: sign in with an admin token, or send `Authorization: Bearer TOKEN`"));
        };
        let mut logins = self.logins.lock().unwrap();
        match logins.get_mut(id) {
            // Its token was taken out of the tokens file since (the file is reloaded live).
            Some(login) if !self.guard.tokens().names(&login.who) => {
                logins.remove(id);
                Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "the sign-in's admin token was revoked: sign in again"))
            }
            Some(login) if login.last_used.elapsed() < LOGIN_IDLE => {
                login.last_used = Instant::now();
                Ok(Caller { who: login.who.clone(), csrf: Some(login.csrf.clone()) })
            }
            Some(_) => {
                logins.remove(id);
                Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "the sign-in expired: sign in again"))
            }
            None => Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "the sign-in is unknown (the host restarted, or it was signed out): sign in again")),
        }
    }

    /// The holder of the request's bearer token: an admin token's name, or an OAuth user whose
    /// token is for the console, grants its scope and carries its group.
    async fn bearer(&self, headers: &HeaderMap) -> Result<Caller, ApiRefusal> {
        let Some(oauth) = &self.oauth else {
            let who = self.guard.token_holder(headers).map_err(|(s, m)| ApiRefusal::new(s, m))?;
            return Ok(Caller { who, csrf: None });
        };
        let insufficient = |message: String| {
            ApiRefusal::new(StatusCode::FORBIDDEN, message).with_challenge(format!("Bearer error=\"insufficient_scope\", scope=\"{}\"", oauth.scope))
        };
        let principal = match self.guard.authenticate(headers).await {
            Ok(Some(principal)) => principal,
            Ok(None) | Err(Denied::Missing) => {
                return Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "missing bearer token: send `Authorization: Bearer TOKEN`"))
            }
            Err(Denied::Invalid) => return Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "invalid bearer token")),
            Err(Denied::InsufficientScope(_)) => {
                return Err(insufficient(format!("insufficient_scope: the access token does not grant the scope {}", oauth.scope)))
            }
            // The console checks no opaque token on a client address's account.
            Err(Denied::Unavailable | Denied::Throttled { .. }) => {
                return Err(ApiRefusal::new(StatusCode::SERVICE_UNAVAILABLE, "the token's authorization server cannot be reached now; try again later"))
            }
        };
        if let (Principal::User(user), Some(group)) = (&principal, &oauth.group) {
            if !user.groups.contains(group) {
                return Err(insufficient(format!("the access token is not in the group or role {group}, which the console needs")));
            }
        }
        let who = match principal {
            Principal::Token(name) => name,
            other => Owner::new(other, Wire::Sessions).principal_key().to_owned(),
        };
        Ok(Caller { who, csrf: None })
    }

    /// The checks of a request that changes something, once its caller is known: a cookie-borne
    /// one must carry its sign-in's CSRF token and a JSON body type.
    pub fn check_action(&self, caller: &Caller, headers: &HeaderMap) -> Result<(), ApiRefusal> {
        let Some(expected) = &caller.csrf else { return Ok(()) };
        let presented = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        let Some(presented) = presented else {
            return Err(ApiRefusal::new(
                StatusCode::FORBIDDEN,
                "missing X-Corral-CSRF header: an action on the session cookie needs the CSRF token `GET /api/session` gives (a cross-site form cannot send it)",
            ));
        };
        if !bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
            return Err(ApiRefusal::new(StatusCode::FORBIDDEN, "the X-Corral-CSRF header does not match this sign-in's CSRF token"));
        }
        check_json(headers)
    }

    /// Signs in with `token`: the new sign-in's cookie value and caller.
    pub fn login(&self, token: &str) -> Result<(String, Caller), ApiRefusal> {
        let mut headers = HeaderMap::new();
        let value = format!("Bearer {token}").parse().map_err(|_| ApiRefusal::new(StatusCode::UNAUTHORIZED, "invalid admin token"))?;
        headers.insert("authorization", value);
        let who = match self.guard.token_holder(&headers) {
            Ok(who) => who,
            Err(_) => return Err(ApiRefusal::new(StatusCode::UNAUTHORIZED, "invalid admin token")),
        };
        let (id, csrf) = (random_token(), random_token());
        let mut logins = self.logins.lock().unwrap();
        logins.retain(|_, l| l.last_used.elapsed() < LOGIN_IDLE);
        if logins.len() >= MAX_LOGINS {
            if let Some(oldest) = logins.iter().min_by_key(|(_, l)| l.last_used).map(|(k, _)| k.clone()) {
                logins.remove(&oldest);
            }
        }
        logins.insert(id.clone(), Login { who: who.clone(), csrf: csrf.clone(), last_used: Instant::now() });
        Ok((id, Caller { who, csrf: Some(csrf) }))
    }

    /// Forgets the sign-in of the request's cookie, if any.
    pub fn logout(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, COOKIE) {
            self.logins.lock().unwrap().remove(id);
        }
    }
}

/// A body that changes something must be JSON: a cross-site form (or a "simple" fetch) cannot
/// send that type without the browser asking first, which this listener never allows.
pub fn check_json(headers: &HeaderMap) -> Result<(), ApiRefusal> {
    let kind = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    let shown = if kind.is_empty() { "none".to_owned() } else { format!("`{kind}`") };
    Err(ApiRefusal::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, format!("Content-Type {shown}: an admin action takes `application/json`")))
}

/// The `Set-Cookie` value of a sign-in (`None`: the one that clears it).
pub fn set_cookie(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}", LOGIN_IDLE.as_secs()),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// 256 random bits, hex.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS has randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Auth {
        Auth::new(Guard::new(&[], &[], vec![("ops".into(), "s3cret".into())], None), None)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[tokio::test]
    async fn a_sign_in_gives_a_cookie_whose_actions_need_its_csrf_token() {
        let auth = auth();
        assert_eq!(auth.login("wrong").unwrap_err().status, StatusCode::UNAUTHORIZED);
        let (id, caller) = auth.login("s3cret").unwrap();
        assert_eq!(caller.who, "ops");
        let csrf = caller.csrf.unwrap();
        let cookie = format!("other=1; {COOKIE}={id}");
        let by_cookie = auth.caller(&headers(&[("cookie", &cookie)])).await.unwrap();
        assert_eq!(by_cookie.who, "ops");
        let form = headers(&[("cookie", &cookie), ("content-type", "application/x-www-form-urlencoded")]);
        assert!(auth.check_action(&by_cookie, &form).unwrap_err().message.starts_with("missing X-Corral-CSRF header"));
        let wrong = headers(&[("cookie", &cookie), (CSRF_HEADER, "nope"), ("content-type", "application/json")]);
        assert_eq!(auth.check_action(&by_cookie, &wrong).unwrap_err().status, StatusCode::FORBIDDEN);
        let form_with_token = headers(&[("cookie", &cookie), (CSRF_HEADER, &csrf), ("content-type", "text/plain")]);
        assert_eq!(auth.check_action(&by_cookie, &form_with_token).unwrap_err().status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let right = headers(&[("cookie", &cookie), (CSRF_HEADER, &csrf), ("content-type", "application/json")]);
        assert!(auth.check_action(&by_cookie, &right).is_ok());
        auth.logout(&right);
        assert_eq!(auth.caller(&right).await.unwrap_err().status, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn a_bearer_token_needs_no_csrf_token() {
        let auth = auth();
        let bearer = headers(&[("authorization", "Bearer s3cret")]);
        let caller = auth.caller(&bearer).await.unwrap();
        assert!(auth.check_action(&caller, &bearer).is_ok());
        assert_eq!(auth.caller(&headers(&[("authorization", "Bearer nope")])).await.unwrap_err().message, "invalid bearer token");
        assert_eq!(auth.caller(&headers(&[])).await.unwrap_err().status, StatusCode::UNAUTHORIZED);
        assert_eq!(auth.caller(&headers(&[("cookie", "corral_admin=forged")])).await.unwrap_err().status, StatusCode::UNAUTHORIZED);
    }
}
