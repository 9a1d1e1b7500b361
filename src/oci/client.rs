//! One registry connection: transport policy, credentials, and blob and manifest transfer with
//! every digest checked here as well as by `oci-client` (the errors then say which one lied).

use std::path::PathBuf;

use base64::Engine as _;
use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, RegistryOperation};

use super::artifact::{Descriptor, OCI_MANIFEST};
use super::{sha256_digest, OciRef};

/// How to reach registries: which may use plain HTTP, and the credentials.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// `HOST:PORT`s reached over plain HTTP besides loopback ones (`--insecure-registry`).
    pub insecure: Vec<String>,
    /// A bearer token for the registry (`--registry-token`); else the docker config is read.
    pub token: Option<String>,
    /// The docker config file; `None` means `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`.
    pub docker_config: Option<PathBuf>,
}

/// A client bound to one registry and repository, authenticated for one operation.
pub struct Connection {
    client: Client,
    auth: RegistryAuth,
    reference: OciRef,
}

impl Connection {
    /// Connects to the registry of `reference` (HTTPS unless it is loopback or named insecure).
    pub async fn open(reference: &OciRef, access: &Access, push: bool) -> Result<Connection, String> {
        // reqwest is built without a default TLS provider; ring is the one already in the graph.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut plain: Vec<String> = access.insecure.clone();
        if reference.is_loopback() {
            plain.push(reference.registry.clone());
        }
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain),
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        };
        let client = Client::new(config);
        let auth = credentials(&reference.registry, access)?;
        let operation = if push { RegistryOperation::Push } else { RegistryOperation::Pull };
        client
            .auth(&reference.client_reference(), &auth, operation)
            .await
            .map_err(|e| format!("cannot reach registry {} for {reference}: {}", reference.registry, describe(&e)))?;
        Ok(Connection { client, auth, reference: reference.clone() })
    }

    /// The manifest `at` names, with its digest (checked against the bytes, the registry's
    /// `Docker-Content-Digest` and a digest in `at`), or `None` when the registry has none.
    pub async fn manifest(&self, at: &OciRef) -> Result<Option<(Vec<u8>, String)>, String> {
        let accepted = [OCI_MANIFEST, "application/vnd.docker.distribution.manifest.v2+json"];
        let (bytes, header) = match self.client.pull_manifest_raw(&at.client_reference(), &self.auth, &accepted).await {
            Ok(v) => v,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(OciDistributionError::DigestError(e)) => return Err(format!("{at}: the manifest does not match its digest: {e}")),
            Err(e) => return Err(format!("{at}: cannot fetch the manifest: {}", describe(&e))),
        };
        let actual = sha256_digest(&bytes);
        if let Some(pinned) = &at.digest {
            if &actual != pinned {
                return Err(format!("{at}: the manifest does not match its digest: the registry sent {actual}"));
            }
        }
        if header != actual {
            return Err(format!("{at}: the registry says the manifest is {header} but its bytes are {actual}"));
        }
        Ok(Some((bytes.to_vec(), actual)))
    }

    /// The blob `d` describes, refused past `max` bytes (before downloading when the descriptor
    /// says so) and when its bytes do not hash to its digest.
    pub async fn blob(&self, d: &Descriptor, what: &str, max: u64) -> Result<Vec<u8>, String> {
        let r = &self.reference;
        super::reference::check_digest(&d.digest).map_err(|e| format!("{r}: {what}: {e}"))?;
        if d.size > max {
            return Err(format!("{r}: {what} is {} bytes, over the limit of {max} (--max-plugin-size)", d.size));
        }
        let descriptor = OciDescriptor { media_type: d.media_type.clone(), digest: d.digest.clone(), size: d.size as i64, ..OciDescriptor::default() };
        let mut stream = match self.client.pull_blob_stream(&r.client_reference(), &descriptor).await {
            Ok(s) => s,
            Err(e) => return Err(format!("{r}: cannot fetch {what} {}: {}", d.digest, describe(&e))),
        };
        let mut bytes = Vec::with_capacity(d.size.min(max) as usize);
        while let Some(chunk) = stream.stream.next().await {
            let chunk = chunk.map_err(|e| {
                // oci-client checks the digest as the stream ends; say so in corral's words.
                if e.to_string().contains("digest") {
                    format!("{r}: {what} does not match its digest {}: {e}", d.digest)
                } else {
                    format!("{r}: fetching {what} {}: {e}", d.digest)
                }
            })?;
            if bytes.len() as u64 + chunk.len() as u64 > max.min(d.size) {
                return Err(format!("{r}: {what} {} is longer than the {} bytes its descriptor declares (limit {max})", d.digest, d.size));
            }
            bytes.extend_from_slice(&chunk);
        }
        let actual = sha256_digest(&bytes);
        if actual != d.digest || bytes.len() as u64 != d.size {
            return Err(format!("{r}: {what} does not match its digest: expected {} ({} bytes), got {actual} ({} bytes)", d.digest, d.size, bytes.len()));
        }
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob (nothing is sent when the registry has it already).
    pub async fn push_blob(&self, d: &Descriptor, bytes: Vec<u8>) -> Result<(), String> {
        let r = self.reference.client_reference();
        if matches!(self.client.blob_exists(&r, &d.digest).await, Ok(true)) {
            return Ok(());
        }
        self.client
            .push_blob(&r, bytes, &d.digest)
            .await
            .map(|_| ())
            .map_err(|e| format!("{}: cannot upload blob {}: {}", self.reference, d.digest, describe(&e)))
    }

    /// Uploads a manifest under `at` (a tag); returns its digest.
    pub async fn push_manifest(&self, at: &OciRef, body: Vec<u8>) -> Result<String, String> {
        let digest = sha256_digest(&body);
        let content_type = http::HeaderValue::from_static(OCI_MANIFEST);
        self.client
            .push_manifest_raw(&at.client_reference(), body, content_type)
            .await
            .map_err(|e| format!("{at}: cannot upload the manifest: {}", describe(&e)))?;
        Ok(digest)
    }
}

/// `--registry-token`, else the docker config's entry for `registry`, else anonymous.
fn credentials(registry: &str, access: &Access) -> Result<RegistryAuth, String> {
    if let Some(token) = &access.token {
        return Ok(RegistryAuth::Bearer(token.clone()));
    }
    let path = match &access.docker_config {
        Some(p) => p.clone(),
        None => match std::env::var_os("DOCKER_CONFIG") {
            Some(dir) => PathBuf::from(dir).join("config.json"),
            None => match dirs::home_dir() {
                Some(home) => home.join(".docker/config.json"),
                None => return Ok(RegistryAuth::Anonymous),
            },
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    from_docker_config(&text, registry).map_err(|e| format!("{}: {e}", path.display()))
}

/// The credentials a docker `config.json` holds for `registry` (its `auths` entry, keyed by
/// `HOST[:PORT]` with or without a scheme). Credential helpers are not run.
fn from_docker_config(text: &str, registry: &str) -> Result<RegistryAuth, String> {
    let config: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let auths = config.get("auths").and_then(|a| a.as_object());
    let entry = auths
        .and_then(|a| a.iter().find(|(k, _)| k.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/') == registry).map(|(_, v)| v));
    let Some(entry) = entry else { return Ok(RegistryAuth::Anonymous) };
    if let Some(token) = entry.get("registrytoken").and_then(|t| t.as_str()) {
        return Ok(RegistryAuth::Bearer(token.to_owned()));
    }
    if let (Some(u), Some(p)) = (entry.get("username").and_then(|v| v.as_str()), entry.get("password").and_then(|v| v.as_str())) {
        return Ok(RegistryAuth::Basic(u.to_owned(), p.to_owned()));
    }
    if let Some(auth) = entry.get("auth").and_then(|a| a.as_str()) {
        // The value is a secret: errors never quote it.
        let decoded = base64::engine::general_purpose::STANDARD.decode(auth).map_err(|_| format!("auths.{registry}.auth is not base64"))?;
        let decoded = String::from_utf8(decoded).map_err(|_| format!("auths.{registry}.auth is not text"))?;
        let (u, p) = decoded.split_once(':').ok_or_else(|| format!("auths.{registry}.auth is not USER:PASSWORD"))?;
        return Ok(RegistryAuth::Basic(u.to_owned(), p.to_owned()));
    }
    Ok(RegistryAuth::Anonymous)
}

fn is_not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().any(|e| matches!(e.code, OciErrorCode::ManifestUnknown | OciErrorCode::NotFound | OciErrorCode::NameUnknown))
        }
        _ => false,
    }
}

/// An error with its causes, one line.
fn describe(e: &OciDistributionError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_entries() {
        let b64 = base64::engine::general_purpose::STANDARD.encode("me:pw");
        let text = format!(r#"{{"auths": {{"https://reg.example:5000/": {{"auth": "{b64}"}}, "other": {{"registrytoken": "t"}}}}}}"#);
        assert!(matches!(from_docker_config(&text, "reg.example:5000").unwrap(), RegistryAuth::Basic(u, p) if u == "me" && p == "pw"));
        assert!(matches!(from_docker_config(&text, "other").unwrap(), RegistryAuth::Bearer(t) if t == "t"));
        assert!(matches!(from_docker_config(&text, "nowhere").unwrap(), RegistryAuth::Anonymous));
        let e = from_docker_config(r#"{"auths": {"h": {"auth": "!!secret!!"}}}"#, "h").err().unwrap();
        assert!(!e.contains("secret"), "{e}");
    }
}
