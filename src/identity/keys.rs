//! One issuer's signing keys, kept in memory.
//!
//! The set is fetched in the background at start and every [`REFRESH`] (a failure keeps the last
//! good set and retries after [`RETRY`]); a request reads it without waiting. A key id the set
//! does not hold is the one case a request fetches: the issuer may have rotated its keys. That
//! fetch is shared by the requests that need it, bounded by the fetch timeout, and made at most
//! once per cool-down, so tokens with made-up key ids cannot turn corral into a flood of fetches
//! at the issuer. A token whose signature fails never fetches anything.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;

use super::discovery;
use super::fetch::Fetcher;
use super::metrics::FetchCounts;
use super::IssuerUrl;

/// How often the key set is fetched again while all goes well.
pub const REFRESH: Duration = Duration::from_secs(300);
/// How soon a failed background fetch is tried again.
pub const RETRY: Duration = Duration::from_secs(15);

/// A verification key, ready for use.
pub struct Key {
    /// The key, as `jsonwebtoken` checks signatures with it.
    pub decoding: DecodingKey,
    /// The algorithm the JWK pins (`alg`), if it does.
    pub alg: Option<Algorithm>,
}

impl Key {
    /// Whether a token signed with `alg` may be checked with this key: the key's family, and
    /// the JWK's own `alg` when it names one.
    pub fn fits(&self, alg: Algorithm) -> bool {
        self.decoding.family() == alg.family() && self.alg.is_none_or(|own| own == alg)
    }
}

/// The keys of one fetch.
#[derive(Default)]
struct KeySet {
    by_id: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`: used only by a token without one, when the set has no other key.
    unnamed: Vec<Arc<Key>>,
    /// Whether a fetch ever succeeded.
    fetched: bool,
}

/// Why no key was found for a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The set (fetched, and fetched again if allowed) holds no key by that id.
    Unknown,
    /// The issuer's keys were never fetched: it has been unreachable since start.
    Unavailable,
}

/// One issuer's keys and how to fetch them.
pub struct IssuerKeys {
    issuer: IssuerUrl,
    fetcher: Fetcher,
    cooldown: Duration,
    set: RwLock<Arc<KeySet>>,
    /// Held while fetching; remembers when a request last made a fetch.
    fetching: tokio::sync::Mutex<Option<Instant>>,
    /// Found through discovery once.
    jwks_uri: RwLock<Option<String>>,
    /// Its fetches, for `/metrics`.
    pub counts: FetchCounts,
}

impl IssuerKeys {
    /// Keys of `issuer`, none fetched yet.
    pub fn new(issuer: IssuerUrl, fetcher: Fetcher, cooldown: Duration) -> IssuerKeys {
        IssuerKeys {
            issuer,
            fetcher,
            cooldown,
            set: RwLock::default(),
            fetching: tokio::sync::Mutex::new(None),
            jwks_uri: RwLock::default(),
            counts: FetchCounts::default(),
        }
    }

    /// Whose keys these are.
    pub fn issuer(&self) -> &IssuerUrl {
        &self.issuer
    }

    /// The key for a token's `kid`, from memory; fetching again only for an id the set does not
    /// hold (at most once per cool-down).
    pub async fn key(&self, kid: Option<&str>) -> Result<Arc<Key>, Missing> {
        if let Some(key) = self.cached(kid) {
            return Ok(key);
        }
        let mut last = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(key) = self.cached(kid) {
            return Ok(key);
        }
        let fetched = self.set.read().unwrap().fetched;
        if last.is_none_or(|at| at.elapsed() >= self.cooldown) {
            *last = Some(Instant::now());
            if let Err(e) = self.fetch().await {
                tracing::warn!(issuer = %self.issuer, "cannot fetch the signing keys for an unknown key id: {e}");
            }
        }
        drop(last);
        match self.cached(kid) {
            Some(key) => Ok(key),
            None if !fetched && !self.set.read().unwrap().fetched => Err(Missing::Unavailable),
            None => Err(Missing::Unknown),
        }
    }

    fn cached(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        let set = self.set.read().unwrap();
        match kid {
            Some(kid) => set.by_id.get(kid).cloned(),
            None if set.by_id.is_empty() && set.unnamed.len() == 1 => set.unnamed.first().cloned(),
            None => None,
        }
    }

    /// Fetches the metadata (once) and the key set, replacing the set held. Counted; the error
    /// says why for the log.
    pub async fn fetch(&self) -> Result<usize, String> {
        let result = self.fetch_uncounted().await;
        match &result {
            Ok(n) => {
                self.counts.ok.fetch_add(1, Ordering::Relaxed);
                self.counts.keys.store(*n as u64, Ordering::Relaxed);
            }
            Err(_) => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    async fn fetch_uncounted(&self) -> Result<usize, String> {
        let known = self.jwks_uri.read().unwrap().clone();
        let jwks_uri = match known {
            Some(uri) => uri,
            None => {
                let metadata = discovery::discover(&self.fetcher, &self.issuer).await?;
                *self.jwks_uri.write().unwrap() = Some(metadata.jwks_uri.clone());
                metadata.jwks_uri
            }
        };
        let document = self.fetcher.json(&jwks_uri).await.map_err(|e| format!("{jwks_uri}: {e}"))?;
        let set = read_set(&document);
        let n = set.by_id.len() + set.unnamed.len();
        if n == 0 {
            return Err(format!("{jwks_uri}: no usable signing key"));
        }
        *self.set.write().unwrap() = Arc::new(set);
        Ok(n)
    }

    /// Keeps the set fresh until the verifier is gone: a fetch at once, then every [`REFRESH`]
    /// (after a failure, every [`RETRY`]).
    pub async fn refresh_in_background(keys: Weak<IssuerKeys>) {
        loop {
            let Some(this) = keys.upgrade() else { return };
            let wait = match this.fetch().await {
                Ok(n) => {
                    tracing::debug!(issuer = %this.issuer, "{n} signing key(s) fetched");
                    REFRESH
                }
                Err(e) => {
                    tracing::warn!(issuer = %this.issuer, "cannot fetch the signing keys (the keys held keep working): {e}");
                    RETRY
                }
            };
            drop(this);
            tokio::time::sleep(wait).await;
        }
    }
}

/// The signature keys of a JWK set; others (encryption keys, symmetric keys, unknown types) are
/// skipped one by one rather than failing the set.
fn read_set(document: &Value) -> KeySet {
    let mut set = KeySet { fetched: true, ..KeySet::default() };
    let keys = document.get("keys").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for value in keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else { continue };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
        // A symmetric key in a published set would let anyone who read it sign tokens.
        if decoding.family() == AlgorithmFamily::Hmac {
            continue;
        }
        let alg = jwk.common.key_algorithm.and_then(|a| a.to_string().parse::<Algorithm>().ok());
        let key = Arc::new(Key { decoding, alg });
        match jwk.common.key_id {
            Some(kid) => {
                set.by_id.insert(kid, key);
            }
            None => set.unnamed.push(key),
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_set_keeps_signature_keys_and_skips_the_rest() {
        let set = read_set(&json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec", "alg": "ES256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "XYZ", "kid": "odd"}
        ]}));
        assert_eq!(set.by_id.keys().collect::<Vec<_>>(), ["ec"]);
        let key = &set.by_id["ec"];
        assert!(key.fits(Algorithm::ES256));
        assert!(!key.fits(Algorithm::ES384), "the JWK pins ES256");
        assert!(!key.fits(Algorithm::RS256));
    }
}
