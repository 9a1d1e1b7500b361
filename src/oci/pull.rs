//! Fetching a plugin: resolve the reference, check the artifact's layout and signature, then
//! download and check its blobs. Nothing touches the disk here, and every download is bounded:
//! a registry decides what it sends, so a pull must not take whatever it sends.

use super::artifact::{self, LayoutError, Manifest};
use super::client::{Bound, RegistryError};
use super::cosign::{self, PublicKey};
use super::{Connection, OciRef};

/// The most a plugin manifest layer (`NAME.toml`) or a signature payload may weigh.
const SMALL_BLOB: Bound = Bound { bytes: 1 << 20, flag: "fixed: a plugin manifest layer or signature payload is text" };

/// What a pull requires.
pub struct FetchOptions<'a> {
    /// Verify the signature with this key; an unsigned artifact is then refused.
    pub key: Option<&'a PublicKey>,
    /// The repository the signature must have been made for (`HOST[:PORT]/REPO`); `None` means
    /// the one pulled from. A mirror names its source here (`--signed-identity`).
    pub identity: Option<&'a str>,
    /// The largest component accepted (`--max-plugin-size`).
    pub max_size: Bound,
    /// The largest manifest accepted, the artifact's and its signature's (`--max-manifest-size`).
    pub max_manifest: Bound,
}

/// A verified plugin, in memory.
pub struct Fetched {
    /// The manifest digest the reference resolved to.
    pub digest: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// Its digest (the `application/wasm` layer's).
    pub wasm_digest: String,
    /// The plugin manifest layer, if the artifact has one.
    pub manifest: Option<String>,
    /// The fingerprint of the key the signature was verified with.
    pub key: Option<String>,
}

/// Why a pull was refused.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// Talking to the registry failed, or what it sent failed a check.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The registry has nothing under the reference.
    #[error("{0}: not found in the registry")]
    NotFound(String),
    /// The manifest is not JSON of an OCI image manifest.
    #[error("{at}: {what} is not an OCI image manifest: {why}")]
    NotAManifest {
        /// The manifest's reference.
        at: String,
        /// `the manifest` or `signature manifest `TAG``.
        what: String,
        /// The parser's complaint.
        why: String,
    },
    /// The artifact is not one corral serves.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The component layer holds something else.
    #[error("{at}: the `{media_type}` layer is not a component: {why}")]
    NotAComponent {
        /// The artifact.
        at: String,
        /// The layer's media type.
        media_type: String,
        /// What it is instead.
        why: &'static str,
    },
    /// The plugin manifest layer is not text.
    #[error("{0}: the plugin manifest layer is not UTF-8 text")]
    ManifestNotText(String),
    /// A key was given and the registry has no signature at all.
    #[error("{at} is not signed: the registry has no cosign signature for {digest} (tag `{tag}`)")]
    NotSigned {
        /// The artifact.
        at: String,
        /// Its manifest digest.
        digest: String,
        /// Where cosign would keep the signature.
        tag: String,
    },
    /// A valid signature of this manifest by this key, made for another repository: the
    /// artifact and its signature were copied.
    #[error(
        "{at}: the signature by key {key} of {digest} was made for {signed}, not for {expected}: a signed artifact copied to another repository is refused; if {expected} mirrors {signed}, pass --signed-identity {signed}"
    )]
    SignedForAnother {
        /// The artifact.
        at: String,
        /// The key's fingerprint.
        key: String,
        /// Its manifest digest.
        digest: String,
        /// The repository the payload names.
        signed: String,
        /// The repository the signature had to name.
        expected: String,
    },
    /// Signatures are there, none valid.
    #[error("{at}: no valid signature by key {key} for manifest {digest}: tag `{tag}` holds {found}")]
    NoValidSignature {
        /// The artifact.
        at: String,
        /// The key's fingerprint.
        key: String,
        /// Its manifest digest.
        digest: String,
        /// The signature tag.
        tag: String,
        /// What the tag holds instead, comma-separated.
        found: String,
    },
}

/// The manifest digest `at` resolves to now, or `None` if the registry does not have it.
pub async fn resolve(conn: &Connection, at: &OciRef, max_manifest: Bound) -> Result<Option<String>, PullError> {
    Ok(conn.manifest(at, max_manifest).await?.map(|(_, digest)| digest))
}

/// Fetches and checks the plugin at `at`.
pub async fn fetch(conn: &Connection, at: &OciRef, options: &FetchOptions<'_>) -> Result<Fetched, PullError> {
    let (bytes, digest) = conn.manifest(at, options.max_manifest).await?.ok_or_else(|| PullError::NotFound(at.to_string()))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| PullError::NotAManifest { at: at.to_string(), what: "the manifest".into(), why: e.to_string() })?;
    let layout = artifact::layout(&manifest, &at.to_string())?;
    // The signature is checked before any content is downloaded: it covers the manifest, and
    // the manifest's digests cover the blobs.
    let key = match options.key {
        Some(key) => {
            let expected = options.identity.map_or_else(|| at.repository_path(), str::to_owned);
            verify_signature(conn, at, &digest, key, &expected, options.max_manifest).await?;
            Some(key.fingerprint.clone())
        }
        None => None,
    };
    let wasm = conn.blob(layout.wasm, "the component layer", options.max_size).await?;
    if let Some(why) = artifact::not_a_component(&wasm) {
        return Err(PullError::NotAComponent { at: at.to_string(), media_type: layout.wasm.media_type.clone(), why });
    }
    let plugin_manifest = match layout.manifest {
        Some(d) => {
            let toml = conn.blob(d, "the plugin manifest layer", SMALL_BLOB).await?;
            Some(String::from_utf8(toml).map_err(|_| PullError::ManifestNotText(at.to_string()))?)
        }
        None => None,
    };
    Ok(Fetched { digest, wasm_digest: layout.wasm.digest.clone(), wasm, manifest: plugin_manifest, key })
}

/// Finds a cosign signature of manifest `digest` made with `key` for repository `expected`
/// (the `sha256-<hex>.sig` tag scheme); the error says what was there instead.
pub async fn verify_signature(conn: &Connection, at: &OciRef, digest: &str, key: &PublicKey, expected: &str, max_manifest: Bound) -> Result<(), PullError> {
    let tag = cosign::signature_tag(digest);
    let Some((bytes, _)) = conn.manifest(&at.at_tag(&tag), max_manifest).await? else {
        return Err(PullError::NotSigned { at: at.to_string(), digest: digest.to_owned(), tag });
    };
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| PullError::NotAManifest {
        at: at.to_string(),
        what: format!("signature manifest `{tag}`"),
        why: e.to_string(),
    })?;
    let mut found = Vec::new();
    let mut elsewhere = None;
    for layer in manifest.layers.iter().filter(|l| l.media_type == cosign::PAYLOAD_MEDIA_TYPE) {
        let Some(signature) = layer.annotations.get(cosign::SIGNATURE_ANNOTATION) else {
            found.push("a payload without a signature".to_owned());
            continue;
        };
        let payload = conn.blob(layer, "a signature payload", SMALL_BLOB).await?;
        if !key.verifies(&payload, signature) {
            found.push("a signature by another key".to_owned());
            continue;
        }
        match cosign::read_payload(&payload) {
            Ok(signed) if signed.digest == digest && signed.identity == expected => return Ok(()),
            Ok(signed) if signed.digest == digest => {
                found.push(format!("a signature by this key for repository {}", signed.identity));
                elsewhere.get_or_insert(signed.identity);
            }
            Ok(signed) => found.push(format!("a signature by this key of another manifest ({})", signed.digest)),
            Err(e) => found.push(e.to_string()),
        }
    }
    let (at, key, digest) = (at.to_string(), key.fingerprint.clone(), digest.to_owned());
    if let Some(signed) = elsewhere {
        return Err(PullError::SignedForAnother { at, key, digest, signed, expected: expected.to_owned() });
    }
    if found.is_empty() {
        found.push("no simple-signing payload".to_owned());
    }
    Err(PullError::NoValidSignature { at, key, digest, tag, found: found.join(", ") })
}
