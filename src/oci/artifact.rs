//! The CNCF Wasm OCI artifact layout (`tag-based` layout of the CNCF TAG Runtime's "Wasm OCI
//! Artifact" spec) as corral writes and accepts it: a Wasm config, one `application/wasm`
//! layer holding the component, and optionally a layer holding the plugin's `NAME.toml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The OCI image manifest media type.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The Wasm config media type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub const WASM_LAYER: &str = "application/wasm";
/// Other names registries and tools have used for a component layer; accepted when pulling.
const OTHER_WASM_LAYERS: [&str; 3] =
    ["application/vnd.wasm.content.layer.v1+wasm", "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm", "application/vnd.wasm.component.v1"];
/// The layer that carries the plugin's manifest (`NAME.toml`).
pub const CORRAL_MANIFEST_LAYER: &str = "application/vnd.corral.plugin.manifest.v1+toml";
/// The OCI annotation naming a layer's file.
pub const TITLE: &str = "org.opencontainers.image.title";

/// An OCI image manifest, as much of it as corral reads and writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`OCI_MANIFEST`] when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The content blobs.
    pub layers: Vec<Descriptor>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A reference to a blob: its media type, digest and size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the blob holds.
    pub media_type: String,
    /// `sha256:…` of the blob.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Free-form metadata (cosign keeps its signatures here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// The descriptor of `bytes` as a blob of `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor { media_type: media_type.to_owned(), digest: super::digest::sha256_digest(bytes), size: bytes.len() as u64, annotations: BTreeMap::new() }
    }
}

/// Where a plugin's blobs are in a manifest that passed [`layout`].
pub struct Layout<'a> {
    /// The component.
    pub wasm: &'a Descriptor,
    /// The manifest layer, if there is one.
    pub manifest: Option<&'a Descriptor>,
}

/// Why a manifest is not a Wasm artifact corral serves.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// `schemaVersion` is not 2.
    #[error("{reference}: manifest schema version {version} is not 2")]
    SchemaVersion {
        /// The artifact.
        reference: String,
        /// The version it claims.
        version: u32,
    },
    /// The config is not the Wasm config: a container image, or another kind of artifact.
    #[error("{reference} is not a Wasm artifact: its config is `{config}`, not `{wanted}` (is it a container image?)", wanted = WASM_CONFIG)]
    NotWasm {
        /// The artifact.
        reference: String,
        /// Its config's media type.
        config: String,
    },
    /// No component layer.
    #[error("{reference} has no `{layer}` layer", layer = WASM_LAYER)]
    NoComponent {
        /// The artifact.
        reference: String,
    },
    /// More than one component layer.
    #[error("{reference} has {count} Wasm layers; corral serves one component per artifact")]
    ManyComponents {
        /// The artifact.
        reference: String,
        /// How many.
        count: usize,
    },
    /// More than one plugin manifest layer.
    #[error("{reference} has {count} `{layer}` layers; at most one is allowed", layer = CORRAL_MANIFEST_LAYER)]
    ManyManifests {
        /// The artifact.
        reference: String,
        /// How many.
        count: usize,
    },
}

/// Checks that `manifest` is a Wasm artifact corral can serve and finds its layers.
pub fn layout<'a>(manifest: &'a Manifest, reference: &str) -> Result<Layout<'a>, LayoutError> {
    let reference = reference.to_owned();
    if manifest.schema_version != 2 {
        return Err(LayoutError::SchemaVersion { reference, version: manifest.schema_version });
    }
    if manifest.config.media_type != WASM_CONFIG {
        return Err(LayoutError::NotWasm { reference, config: manifest.config.media_type.clone() });
    }
    let is_wasm = |d: &&Descriptor| d.media_type == WASM_LAYER || OTHER_WASM_LAYERS.contains(&d.media_type.as_str());
    let wasm: Vec<&Descriptor> = manifest.layers.iter().filter(is_wasm).collect();
    let wasm = match wasm.as_slice() {
        [one] => *one,
        [] => return Err(LayoutError::NoComponent { reference }),
        _ => return Err(LayoutError::ManyComponents { reference, count: wasm.len() }),
    };
    let tomls: Vec<&Descriptor> = manifest.layers.iter().filter(|d| d.media_type == CORRAL_MANIFEST_LAYER).collect();
    if tomls.len() > 1 {
        return Err(LayoutError::ManyManifests { reference, count: tomls.len() });
    }
    Ok(Layout { wasm, manifest: tomls.first().copied() })
}

/// Why `bytes` is not a WebAssembly component, if it is not one (checks the preamble only:
/// compiling is `corral serve`'s job).
pub fn not_a_component(bytes: &[u8]) -> Option<&'static str> {
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 0x0d, 0x00, 0x01, 0x00]) => None,
        Some([0, b'a', b's', b'm', 0x01, 0x00, 0x00, 0x00]) => {
            Some("it is a core WebAssembly module, not a component (build for wasm32-wasip2, or wrap it with `wasm-tools component new`)")
        }
        _ => Some("it is not WebAssembly (no `\\0asm` preamble)"),
    }
}

/// What `created` says when the publisher gives no time (`SOURCE_DATE_EPOCH` unset): the Unix
/// epoch, as reproducible image builders (ko, apko) write. The field stays because readers of the
/// layout (oci-wasm's `WasmConfig`) require it; a fixed value keeps the digest a function of the
/// component alone.
pub const NO_DATE: &str = "1970-01-01T00:00:00Z";

/// The Wasm config blob for a component layer; `created` is RFC 3339.
pub fn config_blob(wasm: &Descriptor, created: &str) -> Vec<u8> {
    let config = serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [wasm.digest],
    });
    serde_json::to_vec(&config).expect("JSON always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(config: &str, layers: &[&str]) -> Manifest {
        Manifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST.into()),
            config: Descriptor::of(config, b"{}"),
            layers: layers.iter().map(|t| Descriptor::of(t, t.as_bytes())).collect(),
            annotations: BTreeMap::new(),
        }
    }

    #[test]
    fn finds_the_component_and_the_manifest_layer() {
        let m = manifest(WASM_CONFIG, &[WASM_LAYER, CORRAL_MANIFEST_LAYER]);
        let l = layout(&m, "r").unwrap();
        assert_eq!(l.wasm.media_type, WASM_LAYER);
        assert!(l.manifest.is_some());
        assert!(layout(&manifest(WASM_CONFIG, &["application/vnd.wasm.content.layer.v1+wasm"]), "r").unwrap().manifest.is_none());
    }

    #[test]
    fn refuses_other_artifacts_by_name() {
        let e = layout(&manifest("application/vnd.oci.image.config.v1+json", &[WASM_LAYER]), "oci://h/r:1").err().unwrap().to_string();
        assert!(e.contains("oci://h/r:1 is not a Wasm artifact"), "{e}");
        assert!(layout(&manifest(WASM_CONFIG, &[]), "r").err().unwrap().to_string().contains("no `application/wasm` layer"));
        assert!(layout(&manifest(WASM_CONFIG, &[WASM_LAYER, WASM_LAYER]), "r").err().unwrap().to_string().contains("2 Wasm layers"));
    }

    #[test]
    fn tells_components_from_modules() {
        assert_eq!(not_a_component(b"\0asm\x0d\0\x01\0rest"), None);
        assert!(not_a_component(b"\0asm\x01\0\0\0").unwrap().contains("core WebAssembly module"));
        assert!(not_a_component(b"#!/bin/sh").unwrap().contains("not WebAssembly"));
    }
}
