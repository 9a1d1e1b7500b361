//! `requestState` of an input-required result: what a retried 2026-07-28 request must bring back
//! so that any replica can go on where the first one stopped, without its memory.
//!
//! The state holds the answers recorded in earlier rounds, bound to the principal that asked
//! (the owner), to the request (a digest of its method and the params that decide what the call
//! does) and to an expiry. The client holds it and may change it, so it is signed with a keyed MAC
//! (HMAC-SHA-256) under the host's secret: a replica that shares the secret verifies it, any
//! other change is refused. It is signed, not encrypted: the answers in it are the client's own.
//!
//! Wire form: `base64url(payload JSON) "." base64url(MAC over the payload's bytes)`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// How long a client has to answer an input-required result and retry.
pub const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// The fewest bytes a host secret has.
pub const MIN_SECRET_BYTES: usize = 32;

/// The key requestStates are signed with (`--state-secret-file`, `CORRAL_STATE_SECRET`): every
/// replica behind one address needs the same one, or a retry that reaches another replica is
/// refused.
#[derive(Clone)]
pub struct StateSecret(std::sync::Arc<[u8]>);

impl std::fmt::Debug for StateSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSecret(..)")
    }
}

impl StateSecret {
    /// A random secret for this process only: a retry must come back to this process.
    pub fn random() -> StateSecret {
        let mut bytes = [0u8; MIN_SECRET_BYTES];
        getrandom::fill(&mut bytes).expect("the operating system's random source works");
        StateSecret(bytes.into())
    }

    /// A secret written as hex (e.g. `openssl rand -hex 32`), surrounding whitespace ignored.
    pub fn from_hex(text: &str) -> Result<StateSecret, String> {
        let text = text.trim();
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("the state secret must be hexadecimal (0-9, a-f), e.g. the output of `openssl rand -hex 32`".into());
        }
        if !text.len().is_multiple_of(2) {
            return Err("the state secret has an odd number of hex digits".into());
        }
        if text.len() < MIN_SECRET_BYTES * 2 {
            return Err(format!("the state secret must be at least {MIN_SECRET_BYTES} bytes ({} hex digits); it has {}", MIN_SECRET_BYTES * 2, text.len()));
        }
        let bytes: Vec<u8> = (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("checked hex digits")).collect();
        Ok(StateSecret(bytes.into()))
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }
}

/// What a requestState says, once verified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Payload {
    /// The owner (principal) the state was issued to.
    owner: String,
    /// [`request_digest`] of the request it was issued for.
    request: String,
    /// Milliseconds since the Unix epoch after which it is refused.
    expires: u64,
    /// Answers of earlier rounds, under their keys, as the client sent them.
    answers: Map<String, Value>,
}

/// Why a requestState was refused; each names the problem for the -32602 message.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not of the wire form, or its MAC does not verify (changed, or signed with another secret).
    #[error("requestState was not issued by this server or was modified (its signature does not verify)")]
    Tampered,
    /// Past its expiry.
    #[error("requestState expired; call again without it")]
    Expired,
    /// Issued to another principal.
    #[error("requestState was issued to another client")]
    OtherOwner,
    /// Issued for another request (method, name, URI or arguments differ).
    #[error("requestState was issued for another request (a different method, name, URI or arguments)")]
    OtherRequest,
}

/// A digest of what decides what a call does: its method and `subject` (the params without
/// `_meta`, `inputResponses` and `requestState`), in canonical form (object keys sorted).
pub fn request_digest(method: &str, subject: &Value) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_bytes());
    hash.update([0]);
    hash.update(canonical(subject).to_string().as_bytes());
    B64.encode(hash.finalize())
}

/// `value` with every object's keys in order, whatever order the client wrote them in.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn now_ms(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Signs the answers recorded so far for `owner`'s request `request` (a [`request_digest`]).
pub fn seal(secret: &StateSecret, owner: &str, request: &str, answers: Map<String, Value>, now: SystemTime) -> String {
    let payload = Payload { owner: owner.to_owned(), request: request.to_owned(), expires: now_ms(now + STATE_TTL), answers };
    let bytes = serde_json::to_vec(&payload).expect("a payload serializes");
    let mut mac = secret.mac();
    mac.update(&bytes);
    format!("{}.{}", B64.encode(&bytes), B64.encode(mac.finalize().into_bytes()))
}

/// The answers a requestState recorded, after checking its MAC, expiry, owner and request.
pub fn open(secret: &StateSecret, state: &str, owner: &str, request: &str, now: SystemTime) -> Result<Map<String, Value>, StateError> {
    let (payload, tag) = state.split_once('.').ok_or(StateError::Tampered)?;
    let bytes = B64.decode(payload).map_err(|_| StateError::Tampered)?;
    let tag = B64.decode(tag).map_err(|_| StateError::Tampered)?;
    let mut mac = secret.mac();
    mac.update(&bytes);
    mac.verify_slice(&tag).map_err(|_| StateError::Tampered)?;
    let payload: Payload = serde_json::from_slice(&bytes).map_err(|_| StateError::Tampered)?;
    if now_ms(now) > payload.expires {
        return Err(StateError::Expired);
    }
    if payload.owner != owner {
        return Err(StateError::OtherOwner);
    }
    if payload.request != request {
        return Err(StateError::OtherRequest);
    }
    Ok(payload.answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret() -> StateSecret {
        StateSecret::from_hex(&"ab".repeat(32)).unwrap()
    }

    fn answers() -> Map<String, Value> {
        json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}}).as_object().unwrap().clone()
    }

    #[test]
    fn a_sealed_state_opens_for_its_owner_and_request_with_its_answers() {
        let digest = request_digest("tools/call", &json!({"name": "t", "arguments": {"a": 1, "b": 2}}));
        let now = SystemTime::now();
        let state = seal(&secret(), "alice", &digest, answers(), now);
        assert_eq!(open(&secret(), &state, "alice", &digest, now + Duration::from_secs(60)), Ok(answers()));
        // The same request with its arguments in another order is the same request.
        assert_eq!(digest, request_digest("tools/call", &json!({"arguments": {"b": 2, "a": 1}, "name": "t"})));
    }

    #[test]
    fn any_change_to_the_state_or_another_secret_is_tampering() {
        let digest = request_digest("tools/call", &json!({"name": "t"}));
        let now = SystemTime::now();
        let state = seal(&secret(), "alice", &digest, answers(), now);
        assert_eq!(open(&secret(), &format!("{state}-TAMPERED"), "alice", &digest, now), Err(StateError::Tampered));
        // Answers swapped in the payload, the MAC kept.
        let (_, tag) = state.split_once('.').unwrap();
        let forged = serde_json::to_vec(
            &json!({"owner":"alice","request":digest,"expires":u64::MAX,"answers":{"user_name":{"action":"accept","content":{"name":"Eve"}}}}),
        )
        .unwrap();
        assert_eq!(open(&secret(), &format!("{}.{tag}", B64.encode(forged)), "alice", &digest, now), Err(StateError::Tampered));
        let other = StateSecret::from_hex(&"cd".repeat(32)).unwrap();
        assert_eq!(open(&other, &state, "alice", &digest, now), Err(StateError::Tampered));
        for junk in ["", ".", "abc", "!!.!!"] {
            assert_eq!(open(&secret(), junk, "alice", &digest, now), Err(StateError::Tampered), "{junk:?}");
        }
    }

    #[test]
    fn an_expired_state_is_refused() {
        let digest = request_digest("tools/call", &json!({"name": "t"}));
        let then = SystemTime::now() - STATE_TTL - Duration::from_secs(1);
        let state = seal(&secret(), "alice", &digest, answers(), then);
        assert_eq!(open(&secret(), &state, "alice", &digest, SystemTime::now()), Err(StateError::Expired));
    }

    #[test]
    fn a_state_is_refused_to_another_principal_and_for_another_request() {
        let digest = request_digest("tools/call", &json!({"name": "t", "arguments": {"n": 1}}));
        let now = SystemTime::now();
        let state = seal(&secret(), "alice", &digest, answers(), now);
        assert_eq!(open(&secret(), &state, "bob", &digest, now), Err(StateError::OtherOwner));
        let other_args = request_digest("tools/call", &json!({"name": "t", "arguments": {"n": 2}}));
        assert_eq!(open(&secret(), &state, "alice", &other_args, now), Err(StateError::OtherRequest));
        let other_method = request_digest("prompts/get", &json!({"name": "t", "arguments": {"n": 1}}));
        assert_eq!(open(&secret(), &state, "alice", &other_method, now), Err(StateError::OtherRequest));
    }

    #[test]
    fn secrets_are_long_enough_hex() {
        assert!(StateSecret::from_hex(&format!("  {}\n", "0f".repeat(32))).is_ok());
        assert_eq!(StateSecret::from_hex("abcd").unwrap_err(), "the state secret must be at least 32 bytes (64 hex digits); it has 4");
        assert_eq!(StateSecret::from_hex(&"a".repeat(65)).unwrap_err(), "the state secret has an odd number of hex digits");
        assert!(StateSecret::from_hex(&"zz".repeat(32)).unwrap_err().starts_with("the state secret must be hexadecimal"));
    }
}
