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
    pub fn from_pem(pem: &str, origin: &str) -> Result<PublicKey, String> {
        let key = VerifyingKey::from_public_key_pem(pem.trim())
            .map_err(|e| format!("{origin}: not a PEM ECDSA P-256 public key (`-----BEGIN PUBLIC KEY-----`, as cosign generate-key-pair writes): {e}"))?;
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
    super::sha256_digest(der.as_bytes())
}

/// A private key that publishes signatures.
pub struct PrivateKey {
    key: SigningKey,
}

impl PrivateKey {
    /// Reads a private key: cosign's `ENCRYPTED SIGSTORE PRIVATE KEY` (scrypt + NaCl secretbox,
    /// the password in `password`), or an unencrypted PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`.
    pub fn from_pem(pem: &str, password: Option<&str>, origin: &str) -> Result<PrivateKey, String> {
        let pem = pem.trim();
        let label = pem.lines().next().unwrap_or("").trim_start_matches("-----BEGIN ").trim_end_matches("-----").to_owned();
        let key = match label.as_str() {
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let password = password.ok_or_else(|| format!("{origin} is encrypted: set {PASSWORD_VAR} to its password"))?;
                let der = decrypt_cosign_key(pem, password).map_err(|e| format!("{origin}: {e}"))?;
                SigningKey::from_pkcs8_der(&der).map_err(|e| format!("{origin}: the decrypted key is not ECDSA P-256: {e}"))?
            }
            "PRIVATE KEY" => SigningKey::from_pkcs8_pem(pem).map_err(|e| format!("{origin}: not an ECDSA P-256 PKCS#8 key: {e}"))?,
            "EC PRIVATE KEY" => {
                use p256::elliptic_curve::SecretKey;
                let secret: SecretKey<p256::NistP256> = SecretKey::from_sec1_pem(pem).map_err(|e| format!("{origin}: not a P-256 EC private key: {e}"))?;
                SigningKey::from(secret)
            }
            other => return Err(format!("{origin}: unsupported key type `{other}` (expected a cosign key or a PEM ECDSA P-256 private key)")),
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
fn decrypt_cosign_key(pem: &str, password: &str) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let json = B64.decode(body.trim()).map_err(|e| format!("the key's PEM body is not base64: {e}"))?;
    let enc: EncryptedKey = serde_json::from_slice(&json).map_err(|e| format!("not a cosign encrypted key: {e}"))?;
    if enc.kdf.name != "scrypt" || enc.cipher.name != "nacl/secretbox" {
        return Err(format!("unsupported key encryption {} + {} (cosign uses scrypt + nacl/secretbox)", enc.kdf.name, enc.cipher.name));
    }
    let n = enc.kdf.params.N;
    if !n.is_power_of_two() || n < 2 {
        return Err(format!("scrypt N = {n} is not a power of two"));
    }
    let params = scrypt::Params::new(n.trailing_zeros() as u8, enc.kdf.params.r, enc.kdf.params.p, 32).map_err(|e| format!("bad scrypt parameters: {e}"))?;
    let salt = B64.decode(&enc.kdf.salt).map_err(|e| format!("salt is not base64: {e}"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| format!("scrypt: {e}"))?;
    let nonce = B64.decode(&enc.cipher.nonce).map_err(|e| format!("nonce is not base64: {e}"))?;
    if nonce.len() != 24 {
        return Err("the nonce is not 24 bytes".into());
    }
    let ciphertext = B64.decode(&enc.ciphertext).map_err(|e| format!("ciphertext is not base64: {e}"))?;
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    cipher
        .decrypt(crypto_secretbox::Nonce::from_slice(&nonce), ciphertext.as_slice())
        .map_err(|_| format!("wrong password in {PASSWORD_VAR}, or the key is corrupt"))
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

/// The manifest digest a payload signs, if it is a cosign container image signature.
pub fn signed_digest(payload: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(payload).map_err(|e| format!("the signed payload is not JSON: {e}"))?;
    let critical = &value["critical"];
    if critical["type"] != "cosign container image signature" {
        return Err("the signed payload is not a cosign container image signature".into());
    }
    critical["image"]["docker-manifest-digest"].as_str().map(str::to_owned).ok_or_else(|| "the signed payload names no docker-manifest-digest".into())
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
        assert_eq!(signed_digest(&p).unwrap(), "sha256:ab");
        assert_eq!(signature_tag("sha256:ab"), "sha256-ab.sig");
    }

    #[test]
    fn bad_keys_say_what_was_expected() {
        let e = PublicKey::from_pem("hello", "cosign.pub").err().unwrap();
        assert!(e.contains("cosign.pub") && e.contains("PUBLIC KEY"), "{e}");
        let e = PrivateKey::from_pem("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nxx\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----", None, "cosign.key")
            .err()
            .unwrap();
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
        let e = PrivateKey::from_pem(&pem, Some("wrong"), "cosign.key").err().unwrap();
        assert!(e.contains("wrong password"), "{e}");
    }
}
