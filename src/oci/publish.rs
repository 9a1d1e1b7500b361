//! Publishing a plugin (the author's side of `corral pull`): the CNCF Wasm layout, and a cosign
//! signature when a key is given.
//!
//! What is published is a function of the files and the time the publisher states
//! (`SOURCE_DATE_EPOCH`), never of the clock: publishing the same component twice gives the same
//! digest, so a signature of one publish covers the other, and a rebuild can be checked against
//! what a registry holds.

use std::collections::BTreeMap;

use super::artifact::{self, Descriptor, Manifest};
use super::client::RegistryError;
use super::cosign::{self, PrivateKey};
use super::{Connection, OciRef};

/// The manifest annotation that carries [`Artifact::created`] when there is one.
const CREATED: &str = "org.opencontainers.image.created";

/// What to publish.
pub struct Artifact {
    /// The file name recorded in the layer's title annotation, e.g. `echo.wasm`.
    pub file_name: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// The plugin manifest (`NAME.toml`), if any.
    pub manifest: Option<Vec<u8>>,
    /// When it was made (RFC 3339), as the publisher states it (`SOURCE_DATE_EPOCH`). `None`
    /// writes [`artifact::NO_DATE`] in the config and no `created` annotation.
    pub created: Option<String>,
}

/// The manifest and the blobs `artifact` is published as: (manifest bytes, blobs with their
/// descriptors). Pure, so that the digest depends on nothing else.
pub fn layout(artifact: Artifact) -> (Vec<u8>, Vec<(Descriptor, Vec<u8>)>) {
    let mut wasm = Descriptor::of(artifact::WASM_LAYER, &artifact.wasm);
    wasm.annotations.insert(artifact::TITLE.into(), artifact.file_name.clone());
    let config_bytes = artifact::config_blob(&wasm, artifact.created.as_deref().unwrap_or(artifact::NO_DATE));
    let config = Descriptor::of(artifact::WASM_CONFIG, &config_bytes);
    let mut blobs = vec![(config.clone(), config_bytes), (wasm.clone(), artifact.wasm)];
    let mut layers = vec![wasm];
    if let Some(toml) = artifact.manifest {
        let mut d = Descriptor::of(artifact::CORRAL_MANIFEST_LAYER, &toml);
        d.annotations.insert(artifact::TITLE.into(), artifact.file_name.replace(".wasm", ".toml"));
        blobs.push((d.clone(), toml));
        layers.push(d);
    }
    let annotations = artifact.created.map(|c| BTreeMap::from([(CREATED.to_owned(), c)])).unwrap_or_default();
    let manifest = Manifest { schema_version: 2, media_type: Some(artifact::OCI_MANIFEST.into()), config, layers, annotations };
    (serde_json::to_vec(&manifest).expect("JSON always serializes"), blobs)
}

/// Pushes `artifact` to `at` (a tag) without checking it is a component (`corral publish`
/// checks first; tests use this to publish what `corral pull` must refuse). Returns the
/// manifest digest.
pub async fn push_artifact(conn: &Connection, at: &OciRef, artifact: Artifact) -> Result<String, RegistryError> {
    let (manifest, blobs) = layout(artifact);
    for (d, bytes) in blobs {
        conn.push_blob(&d, bytes).await?;
    }
    conn.push_manifest(at, manifest).await
}

/// Signs manifest `digest` of `at`'s repository as cosign does: a simple-signing payload under
/// the `sha256-<hex>.sig` tag (replacing earlier signatures there).
pub async fn push_signature(conn: &Connection, at: &OciRef, digest: &str, key: &PrivateKey) -> Result<(), RegistryError> {
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

/// The RFC 3339 time `SOURCE_DATE_EPOCH` (seconds since the Unix epoch, as
/// reproducible-builds.org defines it) names; `None` when it is unset or empty.
pub fn source_date(value: Option<&str>) -> Result<Option<String>, SourceDateError> {
    let Some(text) = value.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    let seconds: u64 = text.parse().map_err(|_| SourceDateError(text.to_owned()))?;
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
    Ok(Some(humantime::format_rfc3339_seconds(time).to_string()))
}

/// `SOURCE_DATE_EPOCH` is not a count of seconds.
#[derive(Debug, thiserror::Error)]
#[error("SOURCE_DATE_EPOCH must be a whole number of seconds since 1970-01-01 UTC, e.g. `git log -1 --format=%ct`; it is `{0}`")]
pub struct SourceDateError(String);

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(created: Option<&str>) -> Artifact {
        Artifact {
            file_name: "echo.wasm".into(),
            wasm: b"\0asm\x0d\0\x01\0".to_vec(),
            manifest: Some(b"[limits]\n".to_vec()),
            created: created.map(Into::into),
        }
    }

    #[test]
    fn the_same_files_publish_as_the_same_digest() {
        let (a, _) = layout(artifact(None));
        let (b, _) = layout(artifact(None));
        assert_eq!(a, b);
        assert!(!String::from_utf8(a.clone()).unwrap().contains("org.opencontainers.image.created"));
        let (dated, blobs) = layout(artifact(Some("2026-01-02T03:04:05Z")));
        assert_ne!(a, dated, "a stated time is part of the artifact");
        assert!(String::from_utf8_lossy(&blobs[0].1).contains("2026-01-02T03:04:05Z"));
        assert!(String::from_utf8_lossy(&layout(artifact(None)).1[0].1).contains(artifact::NO_DATE));
    }

    #[test]
    fn source_date_epoch_is_seconds() {
        assert_eq!(source_date(None).unwrap(), None);
        assert_eq!(source_date(Some("")).unwrap(), None);
        assert_eq!(source_date(Some("1700000000")).unwrap().as_deref(), Some("2023-11-14T22:13:20Z"));
        let e = source_date(Some("yesterday")).unwrap_err().to_string();
        assert!(e.contains("SOURCE_DATE_EPOCH") && e.contains("yesterday"), "{e}");
    }
}
