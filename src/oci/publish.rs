//! Publishing a plugin (the author's side of `corral pull`): the CNCF Wasm layout, and a cosign
//! signature when a key is given.

use std::collections::BTreeMap;

use super::artifact::{self, Descriptor, Manifest};
use super::cosign::{self, PrivateKey};
use super::{Connection, OciRef};

/// What to publish.
pub struct Artifact {
    /// The file name recorded in the layer's title annotation, e.g. `echo.wasm`.
    pub file_name: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// The plugin manifest (`NAME.toml`), if any.
    pub manifest: Option<Vec<u8>>,
    /// When it was made (RFC 3339), for the Wasm config.
    pub created: String,
}

/// Pushes `artifact` to `at` (a tag) without checking it is a component (`corral publish`
/// checks first; tests use this to publish what `corral pull` must refuse). Returns the
/// manifest digest.
pub async fn push_artifact(conn: &Connection, at: &OciRef, artifact: Artifact) -> Result<String, String> {
    let mut wasm = Descriptor::of(artifact::WASM_LAYER, &artifact.wasm);
    wasm.annotations.insert(artifact::TITLE.into(), artifact.file_name.clone());
    let config_bytes = artifact::config_blob(&wasm, &artifact.created);
    let config = Descriptor::of(artifact::WASM_CONFIG, &config_bytes);
    conn.push_blob(&config, config_bytes).await?;
    conn.push_blob(&wasm, artifact.wasm).await?;
    let mut layers = vec![wasm];
    if let Some(toml) = artifact.manifest {
        let mut d = Descriptor::of(artifact::CORRAL_MANIFEST_LAYER, &toml);
        d.annotations.insert(artifact::TITLE.into(), artifact.file_name.replace(".wasm", ".toml"));
        conn.push_blob(&d, toml).await?;
        layers.push(d);
    }
    let annotations = BTreeMap::from([("org.opencontainers.image.created".to_owned(), artifact.created)]);
    let manifest = Manifest { schema_version: 2, media_type: Some(artifact::OCI_MANIFEST.into()), config, layers, annotations };
    conn.push_manifest(at, serde_json::to_vec(&manifest).expect("JSON always serializes")).await
}

/// Signs manifest `digest` of `at`'s repository as cosign does: a simple-signing payload under
/// the `sha256-<hex>.sig` tag (replacing earlier signatures there).
pub async fn push_signature(conn: &Connection, at: &OciRef, digest: &str, key: &PrivateKey) -> Result<(), String> {
    let payload = cosign::payload(&at.repository_path(), digest);
    let mut layer = Descriptor::of(cosign::PAYLOAD_MEDIA_TYPE, &payload);
    layer.annotations.insert(cosign::SIGNATURE_ANNOTATION.into(), key.sign(&payload));
    conn.push_blob(&layer, payload).await?;
    let config_bytes = b"{}".to_vec();
    let config = Descriptor::of("application/vnd.oci.image.config.v1+json", &config_bytes);
    conn.push_blob(&config, config_bytes).await?;
    let manifest = Manifest { schema_version: 2, media_type: Some(artifact::OCI_MANIFEST.into()), config, layers: vec![layer], annotations: BTreeMap::new() };
    conn.push_manifest(&at.at_tag(&cosign::signature_tag(digest)), serde_json::to_vec(&manifest).expect("JSON always serializes")).await?;
    Ok(())
}
