//! Input from the client under keys the plugin chooses (contract 0.3.0 `input`), in the host's
//! own types: what `ask` asks and what comes back, whichever contract version asked.
//!
//! A 0.3.0 plugin names each request; a 0.2.0 plugin's `elicit` and `sample` are single
//! requests the server names itself. The runtime checks the keys and carries the requests to
//! the call's [`super::CallObserver`], which decides how they are answered: by the client of a
//! 2025-11-25 session, or from the answers a 2026-07-28 request carries.

use super::bindings::{ElicitResponse, RequestError, SamplingRequest, SamplingResponse};

pub use super::bindings::Root;

/// One request for input.
#[derive(Clone, Debug, PartialEq)]
pub enum InputRequest {
    /// A form: the message and a JSON Schema (JSON text) for the answer.
    Elicit {
        /// What the user is asked.
        message: String,
        /// The JSON Schema of the answer, as JSON text.
        requested_schema: String,
    },
    /// A message from the client's model.
    Sample(SamplingRequest),
    /// The client's roots (`roots/list`).
    ListRoots,
}

/// The answer to one [`InputRequest`], of the same kind.
#[derive(Clone, Debug, PartialEq)]
pub enum InputResponse {
    /// The user's form answer.
    Elicit(ElicitResponse),
    /// The model's message.
    Sample(SamplingResponse),
    /// The client's roots.
    Roots(Vec<Root>),
}

impl InputRequest {
    /// The client capability the request needs: `elicitation`, `sampling` or `roots`.
    pub fn capability(&self) -> &'static str {
        match self {
            InputRequest::Elicit { .. } => "elicitation",
            InputRequest::Sample(_) => "sampling",
            InputRequest::ListRoots => "roots",
        }
    }
}

/// Requests under their keys, in the order asked.
pub type Keyed<T> = Vec<(String, T)>;

/// The longest key a plugin may choose.
pub const MAX_KEY_LEN: usize = 64;

/// Refuses keys that are empty, longer than [`MAX_KEY_LEN`], outside `[A-Za-z0-9_.-]` or used
/// twice, and an empty list, before anything is asked.
pub fn check_keys(requests: &Keyed<InputRequest>) -> Result<(), RequestError> {
    if requests.is_empty() {
        return Err(RequestError::Invalid("`ask` needs at least one request".into()));
    }
    for (i, (key, _)) in requests.iter().enumerate() {
        let valid = !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !valid {
            return Err(RequestError::Invalid(format!("input key {key:?} must be 1 to {MAX_KEY_LEN} characters of [A-Za-z0-9_.-]")));
        }
        if requests[..i].iter().any(|(k, _)| k == key) {
            return Err(RequestError::Invalid(format!("input key {key:?} is used twice in one `ask`")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(keys: &[&str]) -> Keyed<InputRequest> {
        keys.iter().map(|k| (k.to_string(), InputRequest::ListRoots)).collect()
    }

    #[test]
    fn keys_are_short_plain_and_unique() {
        assert!(check_keys(&keyed(&["user_name", "a.b-c", &"k".repeat(64)])).is_ok());
        for bad in [vec![], vec![""], vec!["has space"], vec!["ü"], vec![&*"k".repeat(65)], vec!["a", "a"]] {
            assert!(matches!(check_keys(&keyed(&bad)), Err(RequestError::Invalid(_))), "{bad:?}");
        }
        let Err(RequestError::Invalid(why)) = check_keys(&keyed(&["a", "a"])) else { panic!() };
        assert_eq!(why, "input key \"a\" is used twice in one `ask`");
    }
}
