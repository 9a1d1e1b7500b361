//! cosign's key-based signatures, without the cosign tool: ECDSA P-256 over SHA-256, the
//! simple-signing payload, and keys as `cosign generate-key-pair` writes them.
//!
//! A signature is stored as cosign stores it (`specs/SIGNATURE_SPEC.md` in sigstore/cosign): a
//! manifest tagged `sha256-<hex>.sig` in the artifact's repository, whose layers are
//! simple-signing payloads (`application/vnd.dev.cosign.simplesigning.v1+json`), each with its
//! base64 DER signature in the `dev.cosignproject.cosign/signature` annotation. The payload
//! names the signed manifest's digest, which binds the signature to exactly those bytes.

use base64::Engine as _;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use serde::Deserialize;

/// The media type of a simple-signing payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation that carries a payload's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The environment variable cosign reads an encrypted private key's password from.
pub const PASSWORD_VAR: &str = "COSIGN_PASSWORD";

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Why a key file was refused. A key's bytes and a password never appear in one.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Not a public key corral verifies with.
    #[error("{origin}: not a PEM ECDSA P-256 public key (`-----BEGIN PUBLIC KEY-----`, as cosign generate-key-pair writes): {why}")]
    NotAPublicKey {
        /// The key file.
        origin: String,
        /// The parser's complaint.
        why: String,
    },
    /// An encrypted key and no password.
    #[error("{origin} is encrypted: set {var} to its password", var = PASSWORD_VAR)]
    NeedsPassword {
        /// The key file.
        origin: String,
    },
    /// The password does not open the key.
    #[error("{origin}: wrong password in {var}, or the key is corrupt", var = PASSWORD_VAR)]
    WrongPassword {
        /// The key file.
        origin: String,
    },
    /// A PEM label corral does not read.
    #[error("{origin}: unsupported key type `{label}` (expected a cosign key or a PEM ECDSA P-256 private key)")]
    Unsupported {
        /// The key file.
        origin: String,
        /// The `-----BEGIN …-----` label.
        label: String,
    },
    /// A key of a supported kind that does not decode.
    #[error("{origin}: {why}")]
    Malformed {
        /// The key file.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
}

/// Why a signed payload is not a cosign container image signature corral can use.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// Not JSON.
    #[error("the signed payload is not JSON: {0}")]
    NotJson(String),
    /// JSON of another kind.
    #[error("the signed payload is not a cosign container image signature")]
    NotASignature,
    /// No manifest digest.
    #[error("the signed payload names no docker-manifest-digest")]
    NoDigest,
    /// No repository.
    #[error("the signed payload names no docker-reference")]
    NoIdentity,
}

/// The tag cosign stores the signatures of manifest `digest` under.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// A public key that signatures are verified with.
pub struct PublicKey {
    key: VerifyingKey,
    /// `sha256:` of the DER `SubjectPublicKeyInfo`: what the lock records.
    pub fingerprint: String,
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` (ECDSA P-256), as in `cosign.pub`.
    pub fn from_pem(pem: &str, origin: &str) -> Result<PublicKey, KeyError> {
        let key = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|e| KeyError::NotAPublicKey { origin: origin.to_owned(), why: e.to_string() })?;
        Ok(PublicKey { fingerprint: fingerprint(&key), key })
    }

    /// Whether `signature` (base64 DER, or base64 of the raw 64 bytes) signs `payload`.
    pub fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(raw) = B64.decode(signature.trim()) else { return false };
        let Ok(sig) = Signature::from_der(&raw).or_else(|_| Signature::from_slice(&raw)) else { return false };
        self.key.verify(payload, &sig).is_ok()
    }
}

fn fingerprint(key: &VerifyingKey) -> String {
    let der = key.to_public_key_der().expect("a P-256 key always encodes");
    super::digest::sha256_digest(der.as_bytes())
}

/// A private key that publishes signatures.
pub struct PrivateKey {
    key: SigningKey,
}

impl PrivateKey {
    /// Reads a private key: cosign's `ENCRYPTED SIGSTORE PRIVATE KEY` (scrypt + NaCl secretbox,
    /// the password in `password`), or an unencrypted PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`.
    pub fn from_pem(pem: &str, password: Option<&str>, origin: &str) -> Result<PrivateKey, KeyError> {
        let pem = pem.trim();
        let label = pem.lines().next().unwrap_or("").trim_start_matches("-----BEGIN ").trim_end_matches("-----").to_owned();
        let malformed = |why: String| KeyError::Malformed { origin: origin.to_owned(), why };
        let key = match label.as_str() {
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let password = password.ok_or_else(|| KeyError::NeedsPassword { origin: origin.to_owned() })?;
                let der = decrypt_cosign_key(pem, password, origin)?;
                SigningKey::from_pkcs8_der(&der).map_err(|e| malformed(format!("the decrypted key is not ECDSA P-256: {e}")))?
            }
            "PRIVATE KEY" => SigningKey::from_pkcs8_pem(pem).map_err(|e| malformed(format!("not an ECDSA P-256 PKCS#8 key: {e}")))?,
            "EC PRIVATE KEY" => {
                use p256::elliptic_curve::SecretKey;
                let secret: SecretKey<p256::NistP256> = SecretKey::from_sec1_pem(pem).map_err(|e| malformed(format!("not a P-256 EC private key: {e}")))?;
                SigningKey::from(secret)
            }
            other => return Err(KeyError::Unsupported { origin: origin.to_owned(), label: other.to_owned() }),
        };
        Ok(PrivateKey { key })
    }

    /// Wraps a key made elsewhere (tests, benchmarks).
    pub fn from_signing_key(key: SigningKey) -> PrivateKey {
        PrivateKey { key }
    }

    /// The base64 DER signature of `payload`, as cosign writes it.
    pub fn sign(&self, payload: &[u8]) -> String {
        let sig: Signature = self.key.sign(payload);
        B64.encode(sig.to_der().as_bytes())
    }

    /// The matching public key's fingerprint.
    pub fn fingerprint(&self) -> String {
        fingerprint(self.key.verifying_key())
    }
}

#[derive(Deserialize)]
struct EncryptedKey {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: ScryptParams,
    salt: String,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct ScryptParams {
    N: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// cosign's encrypted key: a PEM whose body is JSON (sigstore/sigstore `pkg/cryptoutils`).
fn decrypt_cosign_key(pem: &str, password: &str, origin: &str) -> Result<Vec<u8>, KeyError> {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let malformed = |why: String| KeyError::Malformed { origin: origin.to_owned(), why };
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let json = B64.decode(body.trim()).map_err(|e| malformed(format!("the key's PEM body is not base64: {e}")))?;
    let enc: EncryptedKey = serde_json::from_slice(&json).map_err(|e| malformed(format!("not a cosign encrypted key: {e}")))?;
    if enc.kdf.name != "scrypt" || enc.cipher.name != "nacl/secretbox" {
        return Err(malformed(format!("unsupported key encryption {} + {} (cosign uses scrypt + nacl/secretbox)", enc.kdf.name, enc.cipher.name)));
    }
    let n = enc.kdf.params.N;
    if !n.is_power_of_two() || n < 2 {
        return Err(malformed(format!("scrypt N = {n} is not a power of two")));
    }
    let params =
        scrypt::Params::new(n.trailing_zeros() as u8, enc.kdf.params.r, enc.kdf.params.p, 32).map_err(|e| malformed(format!("bad scrypt parameters: {e}")))?;
    let salt = B64.decode(&enc.kdf.salt).map_err(|e| malformed(format!("salt is not base64: {e}")))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| malformed(format!("scrypt: {e}")))?;
    let nonce = B64.decode(&enc.cipher.nonce).map_err(|e| malformed(format!("nonce is not base64: {e}")))?;
    if nonce.len() != 24 {
        return Err(malformed("the nonce is not 24 bytes".into()));
    }
    let ciphertext = B64.decode(&enc.ciphertext).map_err(|e| malformed(format!("ciphertext is not base64: {e}")))?;
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    cipher.decrypt(crypto_secretbox::Nonce::from_slice(&nonce), ciphertext.as_slice()).map_err(|_| KeyError::WrongPassword { origin: origin.to_owned() })
}

/// The simple-signing payload for manifest `digest` of repository `docker_reference`.
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    let value = serde_json::json!({
        "critical": {
            "identity": { "docker-reference": docker_reference },
            "image": { "docker-manifest-digest": digest },
            "type": "cosign container image signature",
        },
        "optional": null,
    });
    serde_json::to_vec(&value).expect("JSON always serializes")
}

/// What a cosign container image signature's payload says it signs.
#[derive(Debug, PartialEq)]
pub struct Signed {
    /// `critical.image.docker-manifest-digest`: the manifest.
    pub digest: String,
    /// `critical.identity.docker-reference`: the repository it was signed for, `HOST[:PORT]/REPO`
    /// (a tag or digest some signers append is dropped).
    pub identity: String,
}

/// Reads a simple-signing payload.
pub fn read_payload(payload: &[u8]) -> Result<Signed, PayloadError> {
    let value: serde_json::Value = serde_json::from_slice(payload).map_err(|e| PayloadError::NotJson(e.to_string()))?;
    let critical = &value["critical"];
    if critical["type"] != "cosign container image signature" {
        return Err(PayloadError::NotASignature);
    }
    let digest = critical["image"]["docker-manifest-digest"].as_str().ok_or(PayloadError::NoDigest)?.to_owned();
    let identity = critical["identity"]["docker-reference"].as_str().ok_or(PayloadError::NoIdentity)?;
    Ok(Signed { digest, identity: repository_of(identity).to_owned() })
}

/// `HOST[:PORT]/REPO` of a docker reference that may end in `:TAG` or `@DIGEST`.
fn repository_of(reference: &str) -> &str {
    let reference = reference.split('@').next().unwrap_or(reference);
    match reference.rsplit_once(':') {
        // A colon after the last slash is a tag; one before it is the registry's port.
        Some((repo, tag)) if !tag.contains('/') && repo.contains('/') => repo,
        _ => reference,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};

    pub(crate) fn test_key(seed: u8) -> SigningKey {
        SigningKey::from_slice(&[seed; 32]).unwrap()
    }

    #[test]
    fn signs_and_verifies_and_binds_the_digest() {
        let private = PrivateKey::from_pem(&test_key(7).to_pkcs8_pem(LineEnding::LF).unwrap(), None, "k").unwrap();
        let pem = test_key(7).verifying_key().to_public_key_pem(LineEnding::LF).unwrap();
        let public = PublicKey::from_pem(&pem, "cosign.pub").unwrap();
        assert_eq!(public.fingerprint, private.fingerprint());
        let p = payload("127.0.0.1:5000/corral/echo", "sha256:ab");
        let sig = private.sign(&p);
        assert!(public.verifies(&p, &sig));
        assert!(!public.verifies(b"other", &sig));
        let other = PublicKey::from_pem(&test_key(8).verifying_key().to_public_key_pem(LineEnding::LF).unwrap(), "o").unwrap();
        assert!(!other.verifies(&p, &sig));
        assert_eq!(read_payload(&p).unwrap(), Signed { digest: "sha256:ab".into(), identity: "127.0.0.1:5000/corral/echo".into() });
        assert_eq!(signature_tag("sha256:ab"), "sha256-ab.sig");
    }

    #[test]
    fn the_signed_repository_drops_a_tag_or_digest_but_keeps_a_port() {
        for (given, repo) in [
            ("127.0.0.1:5000/corral/echo", "127.0.0.1:5000/corral/echo"),
            ("127.0.0.1:5000/corral/echo:1.0", "127.0.0.1:5000/corral/echo"),
            ("ghcr.io/acme/x@sha256:ab", "ghcr.io/acme/x"),
            ("ghcr.io/acme/x:1@sha256:ab", "ghcr.io/acme/x"),
        ] {
            assert_eq!(repository_of(given), repo, "{given}");
        }
        let unsigned = serde_json::json!({"critical": {"type": "cosign container image signature", "image": {"docker-manifest-digest": "sha256:ab"}}});
        assert!(matches!(read_payload(unsigned.to_string().as_bytes()), Err(PayloadError::NoIdentity)));
    }

    #[test]
    fn bad_keys_say_what_was_expected() {
        let e = PublicKey::from_pem("hello", "cosign.pub").err().unwrap().to_string();
        assert!(e.contains("cosign.pub") && e.contains("PUBLIC KEY"), "{e}");
        let e = PrivateKey::from_pem("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nxx\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----", None, "cosign.key")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("COSIGN_PASSWORD"), "{e}");
    }

    /// A key encrypted the way cosign does it decrypts with the right password only.
    #[test]
    fn cosign_encrypted_keys_decrypt() {
        use crypto_secretbox::aead::{Aead, KeyInit};
        let der = test_key(9).to_pkcs8_der().unwrap();
        let (salt, nonce) = ([3u8; 32], [4u8; 24]);
        let params = scrypt::Params::new(10, 8, 1, 32).unwrap();
        let mut key = [0u8; 32];
        scrypt::scrypt(b"secret", &salt, &params, &mut key).unwrap();
        let ciphertext = crypto_secretbox::XSalsa20Poly1305::new(&key.into()).encrypt(crypto_secretbox::Nonce::from_slice(&nonce), der.as_bytes()).unwrap();
        let json = serde_json::json!({
            "kdf": { "name": "scrypt", "params": { "N": 1024, "r": 8, "p": 1 }, "salt": B64.encode(salt) },
            "cipher": { "name": "nacl/secretbox", "nonce": B64.encode(nonce) },
            "ciphertext": B64.encode(ciphertext),
        });
        let pem = format!("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n", B64.encode(json.to_string()));
        let k = PrivateKey::from_pem(&pem, Some("secret"), "cosign.key").unwrap();
        assert_eq!(k.fingerprint(), PrivateKey::from_signing_key(test_key(9)).fingerprint());
        let e = PrivateKey::from_pem(&pem, Some("wrong"), "cosign.key").err().unwrap().to_string();
        assert!(e.contains("wrong password"), "{e}");
    }
}
