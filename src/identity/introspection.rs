//! Opaque access tokens, checked by asking their issuer (RFC 7662 token introspection).
//!
//! Some authorization servers issue access tokens that are handles, not JWTs: nothing in them
//! can be checked locally. When the operator names a client to ask as
//! (`--oauth-introspection-client ISSUER=CLIENT_ID` and its secret file), a token that does not
//! parse as a JWT is POSTed to the issuer's introspection endpoint (the one its metadata names,
//! or `--oauth-introspection-endpoint`), authenticated as that client.
//!
//! The answer is trusted only as far as it binds the token to this host: `active` must be true,
//! `iss` must be the issuer, `aud` must name this host's audience (a missing `aud` is a refusal,
//! never a pass), `exp` and `nbf` hold with the leeway, and a sender-constrained token (DPoP,
//! mTLS), whose proof corral does not check, is refused. An active answer is kept
//! ([`super::answers`]) for the token's remaining life, at most the configured age; a refusal is
//! remembered briefly ([`super::refusals`]); a call to the issuer is taken from the client
//! address's bucket ([`super::throttle`]); an endpoint that cannot be reached costs at most the
//! fetch timeout and answers 503, never a hang.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::Value;

use tokio::sync::OnceCell;

use super::answers::{digest, Answers, Digested};
use super::claims::{check_times, user_from_claims, Claims};
use super::discovery;
use super::fetch::Fetcher;
use super::metrics::IntrospectionCounts;
use super::refusals::Refusals;
use super::rejection::{Reason, Rejection};
use super::throttle::{IntrospectionRate, Throttle};
use super::IssuerUrl;
use crate::principal::User;

/// The secret corral authenticates to the introspection endpoint with. It prints as `…` and is
/// read from a file only, so it is in no command line, environment listing or log.
#[derive(Clone)]
pub struct ClientSecret(Arc<str>);

impl ClientSecret {
    /// The secret in the file at `path`: its text, without the surrounding white space. The
    /// error names the file and what is wrong, never its content.
    pub fn read(path: &Path) -> Result<ClientSecret, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let secret = text.trim();
        if secret.is_empty() {
            return Err(format!("{} is empty: it must hold the introspection client's secret", path.display()));
        }
        if secret.lines().count() > 1 {
            return Err(format!("{} holds more than one line: it must hold the introspection client's secret alone", path.display()));
        }
        Ok(ClientSecret(secret.into()))
    }

    /// A secret given as text (tests).
    pub fn new(secret: &str) -> ClientSecret {
        ClientSecret(secret.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecret(…)")
    }
}

/// How opaque tokens are introspected: the flags, as `cli::host` decided them.
#[derive(Clone, Debug)]
pub struct IntrospectionSettings {
    /// The issuer asked (one of the trusted issuers): answers must name it as `iss`.
    pub issuer: IssuerUrl,
    /// The client corral asks as.
    pub client_id: String,
    /// That client's secret (HTTP Basic authentication, RFC 6749 §2.3.1).
    pub secret: ClientSecret,
    /// The endpoint, when given; else the issuer's metadata names it.
    pub endpoint: Option<String>,
    /// How long an active answer is kept at most.
    pub max_age: Duration,
    /// Answers kept at once (and refusals remembered at once).
    pub capacity: usize,
    /// Introspections one client address may cause.
    pub rate: IntrospectionRate,
}

/// Introspections under way, by the token's digest.
type Flights = Mutex<HashMap<Digested, Arc<OnceCell<Result<User, Rejection>>>>>;

/// One request's part in an introspection under way: the answer it shares. The flight leaves
/// the map once it has an answer (later requests read the kept answer, or ask again after a
/// refusal), or when its last waiter gives up (a client gone before the issuer answered), so
/// the map holds only flights someone waits on.
struct Flight<'a> {
    flights: &'a Flights,
    key: Digested,
    answer: Arc<OnceCell<Result<User, Rejection>>>,
}

impl<'a> Flight<'a> {
    fn join(flights: &'a Flights, key: Digested) -> Flight<'a> {
        let answer = flights.lock().unwrap().entry(key).or_default().clone();
        Flight { flights, key, answer }
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut flights = self.flights.lock().unwrap();
        // Under the map's lock no one can join meanwhile: two references are the map's and ours.
        let last = Arc::strong_count(&self.answer) <= 2;
        if flights.get(&self.key).is_some_and(|current| Arc::ptr_eq(current, &self.answer)) && (self.answer.initialized() || last) {
            flights.remove(&self.key);
        }
    }
}

/// Asks one issuer about opaque tokens, and keeps the answers.
pub(super) struct Introspector {
    issuer: IssuerUrl,
    audiences: Vec<String>,
    leeway: Duration,
    cooldown: Duration,
    fetcher: Fetcher,
    /// `Basic …` of the client id and secret, made once.
    authorization: String,
    /// The endpoint, once known (given, or discovered).
    endpoint: RwLock<Option<String>>,
    /// Held while discovering; when discovery last failed.
    discovering: tokio::sync::Mutex<Option<Instant>>,
    answers: Answers,
    /// Tokens refused lately, by digest: asked about again only after a while.
    refusals: Refusals,
    /// Introspections each client address may still cause.
    throttle: Throttle,
    /// Introspections under way, by the token's digest: requests that bring the same new token
    /// at once share one call to the issuer and its answer (a refusal or an unreachable
    /// issuer included) instead of asking once each.
    flights: Flights,
    /// Its calls and cache hits, for `/metrics`.
    counts: IntrospectionCounts,
}

impl Introspector {
    /// An introspector for `settings`, accepting answers whose `aud` names one of `audiences`.
    /// Discovery of the endpoint (when not given) is left to the first token, or to
    /// [`Introspector::discover`] at start.
    pub fn new(settings: &IntrospectionSettings, audiences: Vec<String>, leeway: Duration, cooldown: Duration, fetcher: Fetcher) -> Introspector {
        let credentials = format!("{}:{}", form_encode(&settings.client_id), form_encode(settings.secret.expose()));
        let authorization = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        Introspector {
            issuer: settings.issuer.clone(),
            audiences,
            leeway,
            cooldown,
            fetcher,
            authorization,
            endpoint: RwLock::new(settings.endpoint.clone()),
            discovering: tokio::sync::Mutex::new(None),
            answers: Answers::new(settings.capacity, settings.max_age),
            refusals: Refusals::new(settings.capacity),
            throttle: Throttle::new(settings.rate),
            flights: Mutex::default(),
            counts: IntrospectionCounts::default(),
        }
    }

    /// Prometheus text of its calls, cache hits and answers kept.
    pub fn metrics_text(&self) -> String {
        self.counts.render(self.issuer.as_str(), self.answers.len())
    }

    /// Who `token`, brought from `client` (when known), names: from a kept answer or a refusal
    /// remembered, else by asking the issuer if the client's address may cause a call now.
    pub async fn check(&self, token: &str, client: Option<IpAddr>) -> Result<User, Rejection> {
        if let Some(user) = self.answers.get(token) {
            self.counts.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((*user).clone());
        }
        let key = digest(token);
        if let Some(reason) = self.refusals.get(&key, Instant::now()) {
            self.counts.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Err(Rejection::Invalid(reason));
        }
        if let Some(client) = client {
            if let Err(wait) = self.throttle.take(client, Instant::now()) {
                self.counts.throttled.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%client, "introspection refused: the client address asked too often");
                return Err(Rejection::Throttled { retry_after_secs: wait.as_secs() });
            }
        }
        let flight = Flight::join(&self.flights, key);
        let answer = flight.answer.get_or_init(|| self.introspect(token)).await.clone();
        if let Err(Rejection::Invalid(reason)) = answer {
            self.refusals.put(key, reason, Instant::now());
        }
        answer
    }

    /// Asks the issuer about `token`, and keeps an active answer.
    async fn introspect(&self, token: &str) -> Result<User, Rejection> {
        let endpoint = self.endpoint().await.map_err(|e| {
            tracing::warn!(issuer = %self.issuer, "cannot find the introspection endpoint: {e}");
            self.counts.unreachable.fetch_add(1, Ordering::Relaxed);
            Rejection::Unavailable
        })?;
        let form = format!("token={}&token_type_hint=access_token", form_encode(token));
        let answer = self.fetcher.post_form(&endpoint, &self.authorization, form).await.map_err(|e| {
            tracing::warn!(issuer = %self.issuer, endpoint, "token introspection failed: {e}");
            self.counts.unreachable.fetch_add(1, Ordering::Relaxed);
            Rejection::Unavailable
        })?;
        match read_answer(&answer, &self.issuer, &self.audiences, self.leeway, unix_now()) {
            Ok((user, expires)) => {
                self.counts.active.fetch_add(1, Ordering::Relaxed);
                let expires = expires.map(|exp| Instant::now() + Duration::from_secs(exp.saturating_sub(unix_now())));
                self.answers.put(token, Arc::new(user.clone()), expires);
                Ok(user)
            }
            Err(reason) => {
                self.counts.refused.fetch_add(1, Ordering::Relaxed);
                Err(Rejection::Invalid(reason))
            }
        }
    }

    /// Finds the endpoint through the issuer's metadata once, so the first token does not wait
    /// for it (call at start; a failure is logged and left to the first token to retry).
    pub async fn discover(&self) {
        if let Err(e) = self.endpoint().await {
            tracing::warn!(issuer = %self.issuer, "cannot find the introspection endpoint yet: {e}");
        }
    }

    /// The endpoint: given, found, or found now (one discovery at a time, and after a failure
    /// not again before the cool-down, so an unreachable issuer is not asked on every request).
    async fn endpoint(&self) -> Result<String, String> {
        if let Some(known) = self.endpoint.read().unwrap().clone() {
            return Ok(known);
        }
        let mut failed_at = self.discovering.lock().await;
        if let Some(known) = self.endpoint.read().unwrap().clone() {
            return Ok(known);
        }
        if let Some(at) = *failed_at {
            if at.elapsed() < self.cooldown {
                return Err(format!("the issuer's metadata could not be read {:?} ago; not asking again yet", at.elapsed()));
            }
        }
        let found = discovery::discover(&self.fetcher, &self.issuer).await.and_then(|metadata| {
            metadata.introspection_endpoint.ok_or_else(|| "its metadata names no introspection_endpoint: pass --oauth-introspection-endpoint".to_owned())
        });
        match found {
            Ok(endpoint) => {
                *self.endpoint.write().unwrap() = Some(endpoint.clone());
                *failed_at = None;
                Ok(endpoint)
            }
            Err(e) => {
                *failed_at = Some(Instant::now());
                Err(e)
            }
        }
    }
}

/// Reads an introspection answer (RFC 7662 §2.2) into the user it names and the token's `exp`,
/// or the reason it is refused.
fn read_answer(answer: &Value, issuer: &IssuerUrl, audiences: &[String], leeway: Duration, now: u64) -> Result<(User, Option<u64>), Reason> {
    if answer.get("active") != Some(&Value::Bool(true)) {
        return Err(Reason::Inactive);
    }
    if answer.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
        return Err(Reason::Issuer);
    }
    let named = |aud: &str| audiences.iter().any(|a| a == aud);
    let audience_ok = match answer.get("aud") {
        Some(Value::String(aud)) => named(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(named),
        _ => false,
    };
    if !audience_ok {
        return Err(Reason::Audience);
    }
    let exp = check_times(answer.get("exp"), answer.get("nbf"), now, leeway, false)?;
    // A token bound to a key (DPoP, mTLS) is only good with a proof corral does not check.
    let bearer = answer.get("token_type").and_then(Value::as_str).is_none_or(|t| t.eq_ignore_ascii_case("bearer"));
    if !bearer || answer.get("cnf").is_some_and(|c| !c.is_null()) {
        return Err(Reason::Type);
    }
    let mut claims = answer.clone();
    match claims.get("sub") {
        // A client credentials token names no user: its subject is the client, as in the JWTs
        // the same servers issue (RFC 9068 §2.2). Only when there is no `sub` at all: a `sub`
        // of another shape taken for the client would make every user of that client one.
        None | Some(Value::Null) => {
            let Some(client) = claims.get("client_id").and_then(Value::as_str).map(str::to_owned) else { return Err(Reason::Claims) };
            claims["sub"] = Value::String(client);
        }
        // A subject is a non-empty string (RFC 7519 §4.1.2), as the JWT path reads it.
        Some(Value::String(sub)) if !sub.is_empty() => {}
        Some(_) => return Err(Reason::Claims),
    }
    let claims: Claims = serde_json::from_value(claims).map_err(|_| Reason::Claims)?;
    Ok((user_from_claims(claims).ok_or(Reason::Claims)?, exp))
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `application/x-www-form-urlencoded` of one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_800_000_000;

    fn read(answer: Value) -> Result<(User, Option<u64>), Reason> {
        let issuer = IssuerUrl::parse("https://id.example").unwrap();
        read_answer(&answer, &issuer, &["https://corral.example/mcp".to_owned(), "corral".to_owned()], Duration::from_secs(30), NOW)
    }

    fn active(extra: Value) -> Value {
        let mut answer = json!({ "active": true, "iss": "https://id.example", "aud": "https://corral.example/mcp", "sub": "ada",
            "scope": "mcp tools", "client_id": "app", "exp": NOW + 600, "token_type": "Bearer" });
        answer.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        answer
    }

    #[tokio::test]
    async fn requests_with_the_same_new_token_share_one_flight_which_leaves_when_done_or_abandoned() {
        let flights = Flights::default();
        let (first, second) = (Flight::join(&flights, [1; 32]), Flight::join(&flights, [1; 32]));
        assert!(Arc::ptr_eq(&first.answer, &second.answer), "one flight for one token");
        let other = Flight::join(&flights, [2; 32]);
        assert_eq!(flights.lock().unwrap().len(), 2);
        // Abandoned by every waiter before an answer: gone, so the map cannot grow with tokens
        // whose clients left.
        drop(other);
        assert_eq!(flights.lock().unwrap().len(), 1);
        // Answered: gone as soon as one waiter has it; the other still reads it.
        first.answer.get_or_init(|| async { Err(Rejection::Unavailable) }).await;
        drop(first);
        assert!(flights.lock().unwrap().is_empty());
        assert_eq!(second.answer.get().cloned(), Some(Err(Rejection::Unavailable)));
    }

    #[test]
    fn an_active_answer_for_this_host_names_its_user() {
        let (user, exp) = read(active(json!({}))).unwrap();
        assert_eq!((user.issuer.as_str(), user.subject.as_str()), ("https://id.example", "ada"));
        assert_eq!(user.scopes, ["mcp", "tools"]);
        assert_eq!(user.client_id.as_deref(), Some("app"));
        assert_eq!(exp, Some(NOW + 600));
        // An extra audience in a list; no exp (kept for the max age only).
        let (user, exp) = read(active(json!({ "aud": ["other", "corral"], "exp": null }))).unwrap();
        assert_eq!((user.subject.as_str(), exp), ("ada", None));
        // Client credentials: the client is the subject.
        let (user, _) = read(active(json!({ "sub": null }))).unwrap();
        assert_eq!(user.subject, "app");
    }

    #[test]
    fn an_answer_that_does_not_bind_the_token_to_this_host_is_refused() {
        assert_eq!(read(json!({ "active": false })).unwrap_err(), Reason::Inactive);
        assert_eq!(read(active(json!({ "active": "true" }))).unwrap_err(), Reason::Inactive);
        assert_eq!(read(active(json!({ "iss": "https://evil.example" }))).unwrap_err(), Reason::Issuer);
        assert_eq!(read(active(json!({ "iss": null }))).unwrap_err(), Reason::Issuer);
        assert_eq!(read(active(json!({ "aud": "https://other.example/mcp" }))).unwrap_err(), Reason::Audience);
        assert_eq!(read(active(json!({ "aud": null }))).unwrap_err(), Reason::Audience, "a missing aud is a refusal");
        assert_eq!(read(active(json!({ "exp": NOW - 31 }))).unwrap_err(), Reason::Expired);
        assert!(read(active(json!({ "exp": NOW - 10 }))).is_ok(), "within the leeway");
        assert_eq!(read(active(json!({ "exp": NOW as f64 + 600.5 }))).unwrap().1, Some(NOW + 600), "a NumericDate may have a fraction");
        assert_eq!(read(active(json!({ "nbf": NOW + 3600 }))).unwrap_err(), Reason::NotYetValid);
        assert_eq!(read(active(json!({ "exp": "soon" }))).unwrap_err(), Reason::Claims);
        assert_eq!(read(active(json!({ "token_type": "DPoP" }))).unwrap_err(), Reason::Type);
        assert_eq!(read(active(json!({ "cnf": { "jkt": "x" } }))).unwrap_err(), Reason::Type);
        assert_eq!(read(active(json!({ "sub": null, "client_id": null }))).unwrap_err(), Reason::Claims);
        // A subject that is not a non-empty string is refused, never replaced by the client.
        for sub in [json!(1001), json!(""), json!(["ada"]), json!(true)] {
            assert_eq!(read(active(json!({ "sub": sub }))).unwrap_err(), Reason::Claims, "{sub}");
        }
    }

    #[test]
    fn the_secret_never_prints_and_credentials_are_form_encoded() {
        let secret = ClientSecret::new("s3cret:with spaces");
        assert_eq!(format!("{secret:?}"), "ClientSecret(…)");
        let settings = IntrospectionSettings {
            issuer: IssuerUrl::parse("https://id.example").unwrap(),
            client_id: "corral rs".into(),
            secret,
            endpoint: None,
            max_age: Duration::from_secs(300),
            capacity: 10,
            rate: crate::identity::IntrospectionRate { per_second: 1.0, burst: 1 },
        };
        assert!(!format!("{settings:?}").contains("s3cret"));
        let introspector = Introspector::new(&settings, vec![], Duration::ZERO, Duration::ZERO, Fetcher::new(Duration::from_secs(1)).unwrap());
        let encoded = introspector.authorization.strip_prefix("Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "corral%20rs:s3cret%3Awith%20spaces");
    }

    #[test]
    fn a_secret_file_holds_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "  s3cret\n").unwrap();
        assert_eq!(ClientSecret::read(&path).unwrap().expose(), "s3cret");
        std::fs::write(&path, "\n").unwrap();
        assert!(ClientSecret::read(&path).unwrap_err().contains("is empty"));
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let refused = ClientSecret::read(&path).unwrap_err();
        assert!(refused.contains("more than one line") && !refused.contains("one\n"), "{refused}");
        assert!(ClientSecret::read(&dir.path().join("missing")).unwrap_err().contains("cannot read"));
    }
}
