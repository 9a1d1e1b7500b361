//! One registry connection: transport policy, credentials, and blob and manifest transfer with
//! every digest checked here as well as by `oci-client` (the errors then say which one lied).

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, RegistryOperation};

use super::artifact::{Descriptor, OCI_MANIFEST};
use super::digest::sha256_digest;
use super::reference::OciRef;
use super::reference::ReferenceError;

/// The media types a manifest is asked for in. The two index types are there for `corral verify`
/// of a multi-platform image; a plugin pulled as an index is refused by its layout check.
const ACCEPTED_MANIFESTS: [&str; 4] = [
    OCI_MANIFEST,
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
/// How much of an error response's body is quoted.
const ERROR_BODY: usize = 512;

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

/// The most bytes a download may hold, and the flag that raises it (named in the refusal).
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    /// The limit.
    pub bytes: u64,
    /// What raises it, e.g. `--max-plugin-size`.
    pub flag: &'static str,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.bytes, self.flag)
    }
}

/// What went wrong talking to a registry. Credentials never appear in one.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The docker config could not be read or understood.
    #[error("{path}: {why}")]
    Credentials {
        /// The config file.
        path: String,
        /// What is wrong (never the secret itself).
        why: String,
    },
    /// The registry did not answer, or refused the credentials.
    #[error("cannot reach registry {registry} for {reference}: {why}")]
    Unreachable {
        /// `HOST[:PORT]`.
        registry: String,
        /// The reference being pulled or published.
        reference: String,
        /// The client's error, with its causes.
        why: String,
    },
    /// The manifest request failed.
    #[error("{at}: cannot fetch the manifest: {why}")]
    ManifestFetch {
        /// The manifest's reference.
        at: String,
        /// What failed.
        why: String,
    },
    /// The manifest is over `--max-manifest-size`.
    #[error("{at}: the manifest is {size} bytes, over the limit of {bound}")]
    ManifestTooLarge {
        /// The manifest's reference.
        at: String,
        /// Its size as declared, or as much as had arrived when the limit was passed.
        size: String,
        /// The limit.
        bound: Bound,
    },
    /// The manifest does not hash to the digest the reference pins.
    #[error("{at}: the manifest does not match its digest: the registry sent {actual}")]
    ManifestDigest {
        /// The pinned reference.
        at: String,
        /// What the bytes hash to.
        actual: String,
    },
    /// The registry's `Docker-Content-Digest` is not the digest of what it sent.
    #[error("{at}: the registry says the manifest is {header} but its bytes are {actual}")]
    ManifestHeader {
        /// The manifest's reference.
        at: String,
        /// The header's value.
        header: String,
        /// What the bytes hash to.
        actual: String,
    },
    /// A descriptor names a digest corral cannot check.
    #[error("{at}: {what}: {source}")]
    BlobDigestForm {
        /// The artifact.
        at: String,
        /// Which blob.
        what: String,
        /// Why the digest is refused.
        source: ReferenceError,
    },
    /// A blob's descriptor declares more than its bound.
    #[error("{at}: {what} is {size} bytes, over the limit of {bound}")]
    BlobTooLarge {
        /// The artifact.
        at: String,
        /// Which blob.
        what: String,
        /// Its declared size.
        size: u64,
        /// The limit.
        bound: Bound,
    },
    /// A blob sent more bytes than its descriptor declares.
    #[error("{at}: {what} {digest} is longer than the {size} bytes its descriptor declares (limit {bound})")]
    BlobLonger {
        /// The artifact.
        at: String,
        /// Which blob.
        what: String,
        /// Its digest.
        digest: String,
        /// Its declared size.
        size: u64,
        /// The limit.
        bound: Bound,
    },
    /// A blob request failed.
    #[error("{at}: cannot fetch {what} {digest}: {why}")]
    BlobFetch {
        /// The artifact.
        at: String,
        /// Which blob.
        what: String,
        /// Its digest.
        digest: String,
        /// What failed.
        why: String,
    },
    /// A blob does not hash to its digest.
    #[error("{at}: {what} does not match its digest: {why}")]
    BlobDigest {
        /// The artifact.
        at: String,
        /// Which blob.
        what: String,
        /// Both digests (and sizes), or the client's report.
        why: String,
    },
    /// An upload failed.
    #[error("{at}: cannot upload {what}: {why}")]
    Upload {
        /// Where to.
        at: String,
        /// `blob sha256:…` or `the manifest`.
        what: String,
        /// What failed.
        why: String,
    },
}

/// A client bound to one registry and repository, authenticated for one operation.
pub struct Connection {
    client: Client,
    /// Manifests are read with a client of corral's own, so that their size is bounded as they
    /// arrive (`oci-client` reads a manifest whole).
    http: reqwest::Client,
    /// `http` or `https` for this registry.
    scheme: &'static str,
    auth: RegistryAuth,
    /// The bearer token `oci-client` obtained for this repository, if the registry wants one.
    token: Option<String>,
    reference: OciRef,
}

impl Connection {
    /// Connects to the registry of `reference` (HTTPS unless it is loopback or named insecure).
    pub async fn open(reference: &OciRef, access: &Access, push: bool) -> Result<Connection, RegistryError> {
        // reqwest is built without a default TLS provider; ring is the one already in the graph.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut plain: Vec<String> = access.insecure.clone();
        if reference.is_loopback() {
            plain.push(reference.registry.clone());
        }
        let scheme = if plain.contains(&reference.registry) { "http" } else { "https" };
        let (connect_timeout, read_timeout) = (Duration::from_secs(10), Duration::from_secs(60));
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain),
            connect_timeout: Some(connect_timeout),
            read_timeout: Some(read_timeout),
            ..ClientConfig::default()
        };
        let client = Client::new(config);
        let unreachable = |why: String| RegistryError::Unreachable { registry: reference.registry.clone(), reference: reference.to_string(), why };
        let http = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .read_timeout(read_timeout)
            .build()
            .map_err(|e| unreachable(format!("cannot make an HTTP client: {e}")))?;
        let auth = credentials(&reference.registry, access)?;
        let operation = if push { RegistryOperation::Push } else { RegistryOperation::Pull };
        let token = client.auth(&reference.client_reference(), &auth, operation).await.map_err(|e| unreachable(describe(&e)))?;
        Ok(Connection { client, http, scheme, auth, token, reference: reference.clone() })
    }

    /// The manifest `at` names, with its digest (checked against the bytes, the registry's
    /// `Docker-Content-Digest` and a digest in `at`), or `None` when the registry has none.
    /// Refused as soon as more than `bound` bytes are announced or have arrived.
    pub async fn manifest(&self, at: &OciRef, bound: Bound) -> Result<Option<(Vec<u8>, String)>, RegistryError> {
        let fetch = |why: String| RegistryError::ManifestFetch { at: at.to_string(), why };
        let name = at.digest.as_deref().or(at.tag.as_deref()).expect("a reference names a tag or a digest");
        let url = format!("{}://{}/v2/{}/manifests/{name}", self.scheme, at.client_reference().resolve_registry(), at.repository);
        let mut request = self.http.get(&url).header(http::header::ACCEPT, ACCEPTED_MANIFESTS.join(", "));
        request = match (&self.token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            _ => request,
        };
        let mut response = request.send().await.map_err(|e| fetch(describe(&e)))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let too_large = |size: String| RegistryError::ManifestTooLarge { at: at.to_string(), size, bound };
        if let Some(length) = response.content_length().filter(|&n| n > bound.bytes) {
            return Err(too_large(length.to_string()));
        }
        let mut bytes = Vec::new();
        let limit = if status.is_success() { bound.bytes } else { ERROR_BODY as u64 };
        while let Some(chunk) = response.chunk().await.map_err(|e| fetch(describe(&e)))? {
            if bytes.len() as u64 + chunk.len() as u64 > limit {
                if !status.is_success() {
                    bytes.extend_from_slice(&chunk[..chunk.len().min(ERROR_BODY.saturating_sub(bytes.len()))]);
                    break;
                }
                return Err(too_large(format!("more than {}", bound.bytes)));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let body = String::from_utf8_lossy(&bytes);
            return Err(fetch(format!("{url} answered {status}: {}", body.trim())));
        }
        let actual = sha256_digest(&bytes);
        if let Some(pinned) = &at.digest {
            if &actual != pinned {
                return Err(RegistryError::ManifestDigest { at: at.to_string(), actual });
            }
        }
        let header = response.headers().get("docker-content-digest").and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
        if let Some(header) = header {
            if header != actual {
                return Err(RegistryError::ManifestHeader { at: at.to_string(), header: header.to_owned(), actual });
            }
        }
        Ok(Some((bytes, actual)))
    }

    /// The blob `d` describes, refused past `bound` (before downloading when the descriptor
    /// says so) and when its bytes do not hash to its digest.
    pub async fn blob(&self, d: &Descriptor, what: &str, bound: Bound) -> Result<Vec<u8>, RegistryError> {
        let r = &self.reference;
        let at = || r.to_string();
        super::reference::check_digest(&d.digest).map_err(|source| RegistryError::BlobDigestForm { at: at(), what: what.to_owned(), source })?;
        let max = bound.bytes;
        if d.size > max {
            return Err(RegistryError::BlobTooLarge { at: at(), what: what.to_owned(), size: d.size, bound });
        }
        let descriptor = OciDescriptor { media_type: d.media_type.clone(), digest: d.digest.clone(), size: d.size as i64, ..OciDescriptor::default() };
        let fetch = |why: String| RegistryError::BlobFetch { at: at(), what: what.to_owned(), digest: d.digest.clone(), why };
        let mut stream = self.client.pull_blob_stream(&r.client_reference(), &descriptor).await.map_err(|e| fetch(describe(&e)))?;
        let mut bytes = Vec::with_capacity(d.size.min(max) as usize);
        while let Some(chunk) = stream.stream.next().await {
            let chunk = chunk.map_err(|e| {
                // oci-client checks the digest as the stream ends; say so in corral's words.
                if e.to_string().contains("digest") {
                    RegistryError::BlobDigest { at: at(), what: what.to_owned(), why: format!("expected {}: {e}", d.digest) }
                } else {
                    fetch(e.to_string())
                }
            })?;
            if bytes.len() as u64 + chunk.len() as u64 > max.min(d.size) {
                return Err(RegistryError::BlobLonger { at: at(), what: what.to_owned(), digest: d.digest.clone(), size: d.size, bound });
            }
            bytes.extend_from_slice(&chunk);
        }
        let actual = sha256_digest(&bytes);
        if actual != d.digest || bytes.len() as u64 != d.size {
            let why = format!("expected {} ({} bytes), got {actual} ({} bytes)", d.digest, d.size, bytes.len());
            return Err(RegistryError::BlobDigest { at: at(), what: what.to_owned(), why });
        }
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob (nothing is sent when the registry has it already).
    pub async fn push_blob(&self, d: &Descriptor, bytes: Vec<u8>) -> Result<(), RegistryError> {
        let r = self.reference.client_reference();
        if matches!(self.client.blob_exists(&r, &d.digest).await, Ok(true)) {
            return Ok(());
        }
        self.client.push_blob(&r, bytes, &d.digest).await.map(|_| ()).map_err(|e| RegistryError::Upload {
            at: self.reference.to_string(),
            what: format!("blob {}", d.digest),
            why: describe(&e),
        })
    }

    /// Uploads a manifest under `at` (a tag); returns its digest.
    pub async fn push_manifest(&self, at: &OciRef, body: Vec<u8>) -> Result<String, RegistryError> {
        let digest = sha256_digest(&body);
        let content_type = http::HeaderValue::from_static(OCI_MANIFEST);
        self.client.push_manifest_raw(&at.client_reference(), body, content_type).await.map_err(|e| RegistryError::Upload {
            at: at.to_string(),
            what: "the manifest".into(),
            why: describe(&e),
        })?;
        Ok(digest)
    }
}

/// `--registry-token`, else the docker config's entry for `registry`, else anonymous.
fn credentials(registry: &str, access: &Access) -> Result<RegistryAuth, RegistryError> {
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
        Err(e) => return Err(RegistryError::Credentials { path: path.display().to_string(), why: format!("cannot read: {e}") }),
    };
    from_docker_config(&text, registry).map_err(|why| RegistryError::Credentials { path: path.display().to_string(), why })
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

/// An error with its causes, one line.
fn describe(e: &dyn std::error::Error) -> String {
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
