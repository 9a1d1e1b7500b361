//! Fetching a plugin: resolve the reference, check the artifact's layout and signature, then
//! download and check its blobs. Nothing touches the disk here.

use super::artifact::{self, Manifest};
use super::cosign::{self, PublicKey};
use super::{Connection, OciRef};

/// The most a plugin manifest layer (`NAME.toml`) or a signature payload may weigh.
const SMALL_BLOB: u64 = 1 << 20;

/// What a pull requires.
pub struct FetchOptions<'a> {
    /// Verify the signature with this key; an unsigned artifact is then refused.
    pub key: Option<&'a PublicKey>,
    /// The largest component accepted (`--max-plugin-size`).
    pub max_size: u64,
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

/// The manifest digest `at` resolves to now, or `None` if the registry does not have it.
pub async fn resolve(conn: &Connection, at: &OciRef) -> Result<Option<String>, String> {
    Ok(conn.manifest(at).await?.map(|(_, digest)| digest))
}

/// Fetches and checks the plugin at `at`.
pub async fn fetch(conn: &Connection, at: &OciRef, options: &FetchOptions<'_>) -> Result<Fetched, String> {
    let (bytes, digest) = conn.manifest(at).await?.ok_or_else(|| format!("{at}: not found in the registry"))?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| format!("{at}: the manifest is not an OCI image manifest: {e}"))?;
    let layout = artifact::layout(&manifest, &at.to_string())?;
    // The signature is checked before any content is downloaded: it covers the manifest, and
    // the manifest's digests cover the blobs.
    let key = match options.key {
        Some(key) => {
            verify_signature(conn, at, &digest, key).await?;
            Some(key.fingerprint.clone())
        }
        None => None,
    };
    let wasm = conn.blob(layout.wasm, "the component layer", options.max_size).await?;
    if let Some(why) = artifact::not_a_component(&wasm) {
        return Err(format!("{at}: the `{}` layer is not a component: {why}", layout.wasm.media_type));
    }
    let plugin_manifest = match layout.manifest {
        Some(d) => {
            let toml = conn.blob(d, "the plugin manifest layer", SMALL_BLOB).await?;
            Some(String::from_utf8(toml).map_err(|_| format!("{at}: the plugin manifest layer is not UTF-8 text"))?)
        }
        None => None,
    };
    Ok(Fetched { digest, wasm_digest: layout.wasm.digest.clone(), wasm, manifest: plugin_manifest, key })
}

/// Finds a cosign signature of manifest `digest` made with `key` (the `sha256-<hex>.sig` tag
/// scheme); the error says what was there instead.
pub async fn verify_signature(conn: &Connection, at: &OciRef, digest: &str, key: &PublicKey) -> Result<(), String> {
    let tag = cosign::signature_tag(digest);
    let Some((bytes, _)) = conn.manifest(&at.at_tag(&tag)).await? else {
        return Err(format!("{at} is not signed: the registry has no cosign signature for {digest} (tag `{tag}`)"));
    };
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| format!("{at}: signature manifest `{tag}` is not an OCI manifest: {e}"))?;
    let mut found = Vec::new();
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
        match cosign::signed_digest(&payload) {
            Ok(signed) if signed == digest => return Ok(()),
            Ok(signed) => found.push(format!("a signature by this key of another manifest ({signed})")),
            Err(e) => found.push(e),
        }
    }
    if found.is_empty() {
        found.push("no simple-signing payload".to_owned());
    }
    Err(format!("{at}: no valid signature by key {} for manifest {digest}: tag `{tag}` holds {}", key.fingerprint, found.join(", ")))
}
