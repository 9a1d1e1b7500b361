//! The operator's key (`--secrets-key-file`) and the sealing of one value under it.
//!
//! XChaCha20-Poly1305: its 24-byte nonces are drawn at random for every write, which is safe at
//! any number of writes (unlike a 12-byte nonce), so replicas need no shared counter. The
//! associated data binds the row's key id, holder, plugin and name: a sealed value copied to
//! another row does not open. The key id is a hash of the key, stored with every row, so a
//! host given another key says so at start instead of failing call by call, and a rotation
//! knows which rows it has done.

use std::fmt;
use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::holder::Holder;
use super::value::Secret;

/// Bytes of a nonce.
pub const NONCE_LEN: usize = 24;
/// What the associated data starts with: the format of a sealed row.
const AAD_VERSION: &[u8] = b"corral-secret/v1";

/// The key that seals caller secrets. `Debug` shows its id only.
pub struct SecretsKey {
    cipher: XChaCha20Poly1305,
    id: String,
}

/// Why a key file was refused (never with the file's content).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file cannot be read.
    #[error("secrets key file {path}: cannot read: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file does not hold a key.
    #[error("secrets key file {path}: {problem}; it must hold 32 random bytes as 64 hex digits, as `openssl rand -hex 32` writes")]
    Format {
        /// The file.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl SecretsKey {
    /// Reads a key file: 64 hex digits, surrounding whitespace (a trailing newline) ignored.
    pub fn from_file(path: &Path) -> Result<SecretsKey, KeyError> {
        let shown = path.display().to_string();
        let text = Zeroizing::new(std::fs::read(path).map_err(|source| KeyError::Read { path: shown.clone(), source })?);
        SecretsKey::from_hex(&text).map_err(|problem| KeyError::Format { path: shown, problem })
    }

    /// A key from its hex form.
    pub fn from_hex(text: &[u8]) -> Result<SecretsKey, String> {
        let trimmed = text.trim_ascii();
        if trimmed.len() != 64 {
            return Err(format!("it holds {} characters besides surrounding whitespace, not 64", trimmed.len()));
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(trimmed, &mut bytes[..]).map_err(|_| "it holds characters that are not hex digits".to_owned())?;
        if bytes.iter().all(|&b| b == bytes[0]) {
            return Err("it holds one byte repeated, which is no random key".to_owned());
        }
        Ok(SecretsKey::from_bytes(&bytes))
    }

    pub(super) fn from_bytes(bytes: &[u8; 32]) -> SecretsKey {
        let digest = Sha256::new().chain_update(b"corral secrets key id\0").chain_update(bytes).finalize();
        let id = hex::encode(&digest[..8]);
        let cipher = XChaCha20Poly1305::new_from_slice(bytes).expect("a 32-byte key");
        SecretsKey { cipher, id }
    }

    /// Its id: 16 hex digits of a hash of the key, stored with every row it sealed.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `value` sealed for `holder`'s `plugin`/`name`: the nonce and the ciphertext (tag included).
    pub fn seal(&self, holder: &Holder, plugin: &str, name: &str, value: &Secret) -> ([u8; NONCE_LEN], Vec<u8>) {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the system's random source works");
        let aad = associated_data(&self.id, holder.as_str(), plugin, name);
        let sealed =
            self.cipher.encrypt(&XNonce::from(nonce), Payload { msg: value.expose().as_bytes(), aad: &aad }).expect("encrypting into a Vec cannot fail");
        (nonce, sealed)
    }

    /// The value a row sealed under this key, `None` when it does not open: another key, or a
    /// row altered or moved to another holder, plugin or name.
    pub fn open(&self, holder: &str, plugin: &str, name: &str, nonce: &[u8], sealed: &[u8]) -> Option<Secret> {
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        let aad = associated_data(&self.id, holder, plugin, name);
        let plain = Zeroizing::new(self.cipher.decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad: &aad }).ok()?);
        Secret::new(&plain).ok()
    }
}

impl fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretsKey({})", self.id)
    }
}

/// Each part length-prefixed, so no two rows' parts run together into the same bytes.
fn associated_data(key_id: &str, holder: &str, plugin: &str, name: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_VERSION.len() + 16 + key_id.len() + holder.len() + plugin.len() + name.len());
    aad.extend_from_slice(AAD_VERSION);
    for part in [key_id, holder, plugin, name] {
        aad.extend_from_slice(&(part.len() as u32).to_be_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::suite::key;

    #[test]
    fn a_sealed_value_opens_only_in_its_own_row_under_its_own_key() {
        let (k, other) = (key(1), key(2));
        let ada: Holder = "token:ada".parse().unwrap();
        let value = Secret::new(b"ghp_abc").unwrap();
        let (nonce, sealed) = k.seal(&ada, "tracker", "TOKEN", &value);
        assert!(!sealed.windows(7).any(|w| w == b"ghp_abc"), "the value is not in the clear");
        assert_eq!(k.open("token:ada", "tracker", "TOKEN", &nonce, &sealed), Some(value.clone()));
        assert_eq!(k.open("token:bob", "tracker", "TOKEN", &nonce, &sealed), None, "moved to another holder");
        assert_eq!(k.open("token:ada", "other", "TOKEN", &nonce, &sealed), None, "moved to another plugin");
        assert_eq!(k.open("token:ada", "tracker", "OTHER", &nonce, &sealed), None, "moved to another name");
        assert_eq!(other.open("token:ada", "tracker", "TOKEN", &nonce, &sealed), None, "another key");
        let mut altered = sealed.clone();
        altered[0] ^= 1;
        assert_eq!(k.open("token:ada", "tracker", "TOKEN", &nonce, &altered), None);
        assert_eq!(k.open("token:ada", "tracker", "TOKEN", &nonce[..12], &sealed), None);
        let (again, _) = k.seal(&ada, "tracker", "TOKEN", &value);
        assert_ne!(nonce, again, "a fresh nonce per write");
    }

    #[test]
    fn key_files_are_read_and_refused_with_reasons_that_show_no_content() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        let hex = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0";
        std::fs::write(&file, format!("{hex}\n")).unwrap();
        let k = SecretsKey::from_file(&file).unwrap();
        assert_eq!(k.id().len(), 16);
        assert_eq!(format!("{k:?}"), format!("SecretsKey({})", k.id()));
        assert_eq!(SecretsKey::from_hex(hex.to_uppercase().as_bytes()).unwrap().id(), k.id());
        assert_ne!(key(1).id(), key(2).id());

        let refused = |text: &str| {
            std::fs::write(&file, text).unwrap();
            SecretsKey::from_file(&file).unwrap_err().to_string()
        };
        let e = refused("abc");
        assert!(e.contains("holds 3 characters") && e.contains("openssl rand -hex 32"), "{e}");
        let e = refused(&"zz".repeat(32));
        assert!(e.contains("not hex digits") && !e.contains("zz"), "{e}");
        assert!(refused(&"00".repeat(32)).contains("repeated"));
        let e = SecretsKey::from_file(&dir.path().join("absent")).unwrap_err().to_string();
        assert!(e.contains("absent: cannot read"), "{e}");
    }
}
