//! A listener's static bearer tokens (`--auth-tokens-file`, `--admin-tokens-file`,
//! `--metrics-tokens-file`), replaceable while the host runs: the file's watcher swaps in what
//! it reads, so a token is added or revoked without a restart, which would end every session
//! and sign-in and restart running tasks.
//!
//! Whether a listener takes static tokens at all is decided at start: a reload may change the
//! tokens but never empty them, or authentication would silently turn off.

use std::sync::{Arc, RwLock};

use subtle::ConstantTimeEq;

/// One token: its holder's name, and the token's bytes.
type Token = (String, Vec<u8>);

/// The tokens in force.
#[derive(Debug, Default)]
pub struct Tokens(RwLock<Arc<Vec<Token>>>);

impl Tokens {
    /// `pairs` as `(name, token)`.
    pub fn new(pairs: Vec<(String, String)>) -> Tokens {
        Tokens(RwLock::new(Arc::new(bytes(pairs))))
    }

    /// Whether there is none (static tokens are off).
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.current().len()
    }

    /// Replaces the tokens with `pairs`, which must hold at least one.
    pub fn replace(&self, pairs: Vec<(String, String)>) -> Result<(), &'static str> {
        if pairs.is_empty() {
            return Err("it holds no token (the tokens in force are kept: an empty file would turn authentication off)");
        }
        *self.0.write().unwrap() = Arc::new(bytes(pairs));
        Ok(())
    }

    /// The name of the token `presented` is, compared against every token in constant time, so
    /// timing reveals neither which token nor how much of one matched.
    pub fn holder(&self, presented: &str) -> Option<String> {
        let mut found = None;
        for (who, token) in self.current().iter() {
            if bool::from(token.as_slice().ct_eq(presented.as_bytes())) {
                found = Some(who.clone());
            }
        }
        found
    }

    /// Whether `who` still holds a token (a console sign-in made with a revoked one ends).
    pub fn names(&self, who: &str) -> bool {
        self.current().iter().any(|(name, _)| name == who)
    }

    /// Whether any token is one of `other`'s (a token must not open two listeners).
    pub fn shares_with(&self, other: &[(String, String)]) -> bool {
        self.current().iter().any(|(_, token)| other.iter().any(|(_, t)| t.as_bytes() == token.as_slice()))
    }

    fn current(&self) -> Arc<Vec<Token>> {
        self.0.read().unwrap().clone()
    }
}

fn bytes(pairs: Vec<(String, String)>) -> Vec<Token> {
    pairs.into_iter().map(|(who, token)| (who, token.into_bytes())).collect()
}

#[cfg(test)]
mod tests {
    use super::Tokens;

    #[test]
    fn replaced_tokens_take_effect_and_an_empty_file_is_refused() {
        let tokens = Tokens::new(vec![("alice".into(), "a-token".into())]);
        assert_eq!(tokens.holder("a-token").as_deref(), Some("alice"));
        tokens.replace(vec![("bob".into(), "b-token".into())]).unwrap();
        assert_eq!(tokens.holder("a-token"), None, "revoked");
        assert_eq!(tokens.holder("b-token").as_deref(), Some("bob"), "added");
        assert!(tokens.names("bob") && !tokens.names("alice"));
        assert!(tokens.replace(Vec::new()).is_err());
        assert_eq!(tokens.holder("b-token").as_deref(), Some("bob"), "kept after a refused reload");
    }
}
