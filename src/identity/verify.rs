//! Checking one access token: from the `Authorization` header's credential to a [`User`], or a
//! [`Rejection`] whose reason is for logs and metrics only (a client learns no more than
//! `invalid_token`).
//!
//! The order is the cheap one: length, header (algorithm, type), the issuer named in the
//! unverified claims, the issuer's key from memory, then the signature and the claims (issuer
//! exact, audience) in one `jsonwebtoken::decode`, and `exp`/`nbf` with the leeway after it (as
//! RFC 7519 NumericDates, a fraction allowed, which `jsonwebtoken` refuses). A token whose
//! header does not parse is no JWT: with introspection configured it goes to its issuer
//! ([`super::introspection`]), else it is malformed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::answers::Answers;
use super::claims::{user_from_claims, Claims};
use super::fetch::Fetcher;
use super::introspection::Introspector;
use super::keys::{IssuerKeys, Missing};
use super::metrics::Metrics;
use super::rejection::{Reason, Rejection};
use super::OAuthSettings;
use crate::principal::User;

/// The longest token looked at. Access tokens of the servers in use are 1–4 KiB; a longer one
/// is refused before any decoding.
pub const MAX_TOKEN: usize = 16 * 1024;

/// Verified tokens remembered at once, keyed by their SHA-256 (never the token): a client sends
/// the same access token on every request, and checking its signature again each time (an RSA
/// verification, ~100 µs) would cost more than the call it carries.
const VERIFIED_CAPACITY: usize = 10_000;

/// The longest a verified token is remembered, within its own `exp`: how long a token signed by
/// a key the issuer has since withdrawn from its key set may still be taken.
const VERIFIED_MAX_AGE: Duration = Duration::from_secs(60);

/// The signature algorithms accepted: asymmetric only. `none` cannot be named (jsonwebtoken has
/// no such algorithm), and an HMAC token would be checked with a key the issuer published.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One trusted issuer, ready to check its tokens.
struct Issuer {
    keys: Arc<IssuerKeys>,
    relax_typ: bool,
    /// A `Validation` per algorithm, made once (issuer, audiences, required claims).
    validations: HashMap<Algorithm, Validation>,
}

/// The resource server's token check, shared by every request.
pub struct Verifier {
    settings: OAuthSettings,
    issuers: HashMap<String, Issuer>,
    /// Asks about opaque tokens, when configured.
    introspector: Option<Arc<Introspector>>,
    metrics: Metrics,
    /// Tokens whose signature and claims were checked, until they expire ([`VERIFIED_MAX_AGE`]
    /// at most).
    verified: Answers,
    /// The background key refreshers (and the introspection endpoint's discovery); they end
    /// with the verifier.
    refreshers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Verifier {
    fn drop(&mut self) {
        for refresher in &self.refreshers {
            refresher.abort();
        }
    }
}

#[derive(Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

impl Verifier {
    /// A verifier for `settings`, its issuers' keys fetched in the background from now on
    /// (call inside a tokio runtime).
    pub fn start(settings: OAuthSettings) -> Result<Arc<Verifier>, String> {
        let fetcher = Fetcher::new(settings.fetch_timeout)?;
        let mut issuers = HashMap::new();
        let mut refreshers = Vec::new();
        let mut introspector = None;
        for configured in &settings.issuers {
            let keys = Arc::new(IssuerKeys::new(configured.issuer.clone(), fetcher.clone(), settings.refetch_cooldown));
            refreshers.push(tokio::spawn(IssuerKeys::refresh_in_background(Arc::downgrade(&keys))));
            let audiences: Vec<&str> = std::iter::once(settings.audience.as_str()).chain(configured.extra_audiences.iter().map(String::as_str)).collect();
            if let Some(introspection) = settings.introspection.as_ref().filter(|i| i.issuer == configured.issuer) {
                let owned = audiences.iter().map(|a| a.to_string()).collect();
                let asking = Arc::new(Introspector::new(introspection, owned, settings.leeway, settings.refetch_cooldown, fetcher.clone()));
                let discovering = asking.clone();
                refreshers.push(tokio::spawn(async move { discovering.discover().await }));
                introspector = Some(asking);
            }
            let validations = ALGORITHMS
                .iter()
                .map(|alg| {
                    let mut validation = Validation::new(*alg);
                    // `exp` and `nbf` are RFC 7519 NumericDates, which may have a fraction:
                    // `jsonwebtoken` takes whole seconds only, so they are checked after it
                    // (`Claims::check_times`), `exp` required there.
                    validation.validate_exp = false;
                    validation.validate_nbf = false;
                    validation.set_issuer(&[configured.issuer.as_str()]);
                    validation.set_audience(&audiences);
                    validation.set_required_spec_claims(&["iss", "aud", "sub"]);
                    (*alg, validation)
                })
                .collect();
            issuers.insert(configured.issuer.as_str().to_owned(), Issuer { keys, relax_typ: configured.relax_typ, validations });
        }
        if let Some(introspection) = &settings.introspection {
            if introspector.is_none() {
                return Err(format!("the introspection issuer {} is not a trusted issuer", introspection.issuer));
            }
        }
        let verified = Answers::new(VERIFIED_CAPACITY, VERIFIED_MAX_AGE);
        Ok(Arc::new(Verifier { settings, issuers, introspector, metrics: Metrics::default(), verified, refreshers }))
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// Checks `token` (the credential after `Bearer `) and names its subject. Counted; a refusal
    /// is logged by reason at debug level (never the token).
    pub async fn verify(&self, token: &str) -> Result<User, Rejection> {
        self.verify_from(token, None).await
    }

    /// [`Verifier::verify`] for a token brought from `client`: an opaque token's introspection
    /// is taken from that address's bucket.
    pub async fn verify_from(&self, token: &str, client: Option<std::net::IpAddr>) -> Result<User, Rejection> {
        let result = self.check(token, client).await;
        match &result {
            Ok(_) => self.metrics.accepted(),
            Err(Rejection::Invalid(reason)) => {
                tracing::debug!(reason = reason.as_str(), "access token refused");
                self.metrics.refused(*reason)
            }
            Err(Rejection::Unavailable) => self.metrics.unavailable(),
            // Counted by the introspector.
            Err(Rejection::Throttled { .. }) => {}
        }
        result
    }

    async fn check(&self, token: &str, client: Option<std::net::IpAddr>) -> Result<User, Rejection> {
        use Rejection::Invalid;
        if token.len() > MAX_TOKEN {
            return Err(Invalid(Reason::TooLong));
        }
        if let Some(user) = self.verified.get(token) {
            return Ok(User::clone(&user));
        }
        let header = match jsonwebtoken::decode_header(token) {
            Ok(header) => header,
            Err(e) => match &self.introspector {
                // Not a JWT: an opaque token only its issuer can vouch for.
                Some(introspector) => return introspector.check(token, client).await,
                None => {
                    return Err(match e.kind() {
                        ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => Invalid(Reason::Algorithm),
                        _ => Invalid(Reason::Malformed),
                    })
                }
            },
        };
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Invalid(Reason::Algorithm));
        }
        // Extensions this check does not know must not be ignored (RFC 7515 §4.1.11).
        if header.crit.is_some() {
            return Err(Invalid(Reason::Malformed));
        }
        let claimed: IssuerOnly = jsonwebtoken::dangerous::insecure_decode_claims(token).map_err(|_| Invalid(Reason::Malformed))?;
        let issuer = claimed.iss.as_deref().and_then(|iss| self.issuers.get(iss)).ok_or(Invalid(Reason::Issuer))?;
        if !type_accepted(header.typ.as_deref(), issuer.relax_typ) {
            return Err(Invalid(Reason::Type));
        }
        let key = issuer.keys.key(header.kid.as_deref()).await.map_err(|missing| match missing {
            Missing::Unknown => Invalid(Reason::UnknownKey),
            Missing::Unavailable => Rejection::Unavailable,
        })?;
        if !key.fits(header.alg) {
            return Err(Invalid(Reason::Algorithm));
        }
        let validation = &issuer.validations[&header.alg];
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, validation).map_err(|e| {
            Invalid(match e.kind() {
                ErrorKind::InvalidSignature | ErrorKind::InvalidEcdsaKey | ErrorKind::InvalidRsaKey(_) | ErrorKind::InvalidEddsaKey => Reason::Signature,
                ErrorKind::ExpiredSignature => Reason::Expired,
                ErrorKind::ImmatureSignature => Reason::NotYetValid,
                ErrorKind::InvalidAudience => Reason::Audience,
                ErrorKind::InvalidIssuer => Reason::Issuer,
                ErrorKind::InvalidAlgorithm => Reason::Algorithm,
                ErrorKind::MissingRequiredClaim(_) | ErrorKind::InvalidClaimFormat(_) => Reason::Claims,
                _ => Reason::Malformed,
            })
        })?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let exp = data.claims.check_times(now, self.settings.leeway).map_err(Invalid)?;
        let expires = exp.map(|exp| Instant::now() + Duration::from_secs(exp.saturating_sub(now)));
        let user = user_from_claims(data.claims).ok_or(Invalid(Reason::Claims))?;
        self.verified.put(token, Arc::new(user.clone()), expires);
        Ok(user)
    }

    /// The scopes of `--oauth-scope` that `user`'s token does not grant.
    pub fn missing_scopes(&self, user: &User) -> Vec<String> {
        self.settings.required_scopes.iter().filter(|s| !user.scopes.contains(s)).cloned().collect()
    }

    /// Prometheus text: tokens by outcome, key fetches and keys per issuer, introspections.
    pub fn metrics_text(&self) -> String {
        let mut text = self.metrics.render(self.issuers.iter().map(|(name, issuer)| (name.as_str(), &issuer.keys.counts)));
        if let Some(introspector) = &self.introspector {
            text.push_str(&introspector.metrics_text());
        }
        text
    }
}

/// RFC 9068 §4: `at+jwt` (or `application/at+jwt`, any case). A relaxed issuer's `JWT` or
/// untyped tokens pass too; an ID token is still refused by its audience.
fn type_accepted(typ: Option<&str>, relaxed: bool) -> bool {
    match typ {
        Some(t) if t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt") => true,
        Some(t) if t.eq_ignore_ascii_case("jwt") => relaxed,
        None => relaxed,
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_9068_type_unless_relaxed() {
        assert!(type_accepted(Some("at+jwt"), false));
        assert!(type_accepted(Some("application/AT+JWT"), false));
        assert!(!type_accepted(Some("JWT"), false));
        assert!(!type_accepted(None, false));
        assert!(type_accepted(Some("JWT"), true));
        assert!(type_accepted(None, true));
        assert!(!type_accepted(Some("id_token+jwt"), true));
    }
}
