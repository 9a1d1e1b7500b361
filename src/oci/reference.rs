//! `oci://HOST[:PORT]/REPO(:TAG|@sha256:…)`: the references `corral pull` and `publish` take.

use std::fmt;

use oci_client::Reference;

/// Why a reference, repository or digest was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// Not `oci://HOST[:PORT]/REPO(:TAG|@sha256:…)`.
    #[error("`{text}` is not an OCI reference: {why} (expected oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:DIGEST)")]
    Malformed {
        /// What was given.
        text: String,
        /// Which part is wrong.
        why: String,
    },
    /// Not `HOST[:PORT]/REPO`.
    #[error("`{text}` is not a repository: {why} (expected HOST[:PORT]/REPO, e.g. ghcr.io/acme/search)")]
    Repository {
        /// What was given.
        text: String,
        /// Which part is wrong.
        why: String,
    },
    /// Not `sha256:` and 64 lowercase hex digits.
    #[error("digest `{0}` is not sha256: and 64 lowercase hex digits")]
    Digest(String),
}

/// A parsed `oci://` reference; it always names a registry host explicitly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciRef {
    /// `HOST[:PORT]`.
    pub registry: String,
    /// The repository path, e.g. `acme/search`.
    pub repository: String,
    /// A tag, when the reference names one.
    pub tag: Option<String>,
    /// A manifest digest (`sha256:…`), when the reference pins one.
    pub digest: Option<String>,
}

impl OciRef {
    /// Parses `oci://HOST[:PORT]/REPO:TAG` or `oci://HOST[:PORT]/REPO@sha256:HEX`.
    pub fn parse(text: &str) -> Result<OciRef, ReferenceError> {
        let bad = |why: &str| ReferenceError::Malformed { text: text.to_owned(), why: why.to_owned() };
        let rest = text.strip_prefix("oci://").ok_or_else(|| bad("it does not start with oci://"))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| bad("it names no repository"))?;
        if !registry_ok(registry) {
            return Err(bad("the registry host is empty or malformed"));
        }
        let (path, digest) = match path.split_once('@') {
            Some((p, d)) => {
                check_digest(d).map_err(|e| bad(&e.to_string()))?;
                (p, Some(d.to_owned()))
            }
            None => (path, None),
        };
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t.to_owned())),
            _ => (path, None),
        };
        if tag.is_none() && digest.is_none() {
            return Err(bad("it names neither a tag nor a digest"));
        }
        if !repository_ok(repository) {
            return Err(bad(REPOSITORY_RULE));
        }
        if let Some(t) = &tag {
            let tag_ok = (1..=128).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !tag_ok {
                return Err(bad("the tag must be 1-128 characters of A-Z, a-z, 0-9, `.`, `_` and `-`"));
            }
        }
        Ok(OciRef { registry: registry.to_owned(), repository: repository.to_owned(), tag, digest })
    }

    /// The repository's last path segment: the default plugin name.
    pub fn default_name(&self) -> &str {
        self.repository.rsplit('/').next().unwrap_or(&self.repository)
    }

    /// The same reference pinned to `digest` (a tag is kept for messages; the digest decides).
    pub fn at_digest(&self, digest: &str) -> OciRef {
        OciRef { digest: Some(digest.to_owned()), ..self.clone() }
    }

    /// The same repository at `tag`.
    pub fn at_tag(&self, tag: &str) -> OciRef {
        OciRef { tag: Some(tag.to_owned()), digest: None, ..self.clone() }
    }

    /// `HOST[:PORT]/REPO`: what a cosign payload names as `docker-reference`.
    pub fn repository_path(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The reference as the OCI client wants it (a digest wins over a tag).
    pub fn client_reference(&self) -> Reference {
        match (&self.digest, &self.tag) {
            (Some(d), _) => Reference::with_digest(self.registry.clone(), self.repository.clone(), d.clone()),
            (None, Some(t)) => Reference::with_tag(self.registry.clone(), self.repository.clone(), t.clone()),
            (None, None) => unreachable!("parse requires a tag or a digest"),
        }
    }

    /// Whether the registry is on this machine, where plain HTTP is allowed.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.registry.split(':').next().unwrap_or(""),
        };
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

const REPOSITORY_RULE: &str = "the repository must be lowercase path segments of a-z, 0-9, `.`, `_` and `-`";

fn registry_ok(registry: &str) -> bool {
    !registry.is_empty() && !registry.contains(['@', ' ', '/'])
}

fn repository_ok(repository: &str) -> bool {
    !repository.is_empty()
        && repository.split('/').all(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)))
}

/// Parses `HOST[:PORT]/REPO` (an `oci://` prefix is allowed): a repository as a cosign payload
/// names it in `docker-reference`, and as `--signed-identity` takes it.
pub fn parse_repository(text: &str) -> Result<String, ReferenceError> {
    let bad = |why: &str| ReferenceError::Repository { text: text.to_owned(), why: why.to_owned() };
    let rest = text.strip_prefix("oci://").unwrap_or(text);
    let (registry, repository) = rest.split_once('/').ok_or_else(|| bad("it names no repository"))?;
    if !registry_ok(registry) {
        return Err(bad("the registry host is empty or malformed"));
    }
    if repository.contains([':', '@']) {
        return Err(bad("it names a tag or a digest; a signature names the repository only"));
    }
    if !repository_ok(repository) {
        return Err(bad(REPOSITORY_RULE));
    }
    Ok(rest.to_owned())
}

/// A digest corral can check: `sha256:` and 64 lowercase hex digits.
pub fn check_digest(d: &str) -> Result<(), ReferenceError> {
    match d.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => Ok(()),
        _ => Err(ReferenceError::Digest(d.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parses_tags_digests_and_ports() {
        let r = OciRef::parse("oci://127.0.0.1:5000/corral/echo:0.1.0").unwrap();
        assert_eq!((r.registry.as_str(), r.repository.as_str(), r.tag.as_deref(), r.digest.as_deref()), ("127.0.0.1:5000", "corral/echo", Some("0.1.0"), None));
        assert_eq!(r.default_name(), "echo");
        assert!(r.is_loopback());
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/corral/echo:0.1.0");
        let r = OciRef::parse(&format!("oci://ghcr.io/acme/search@{D}")).unwrap();
        assert_eq!((r.tag.as_deref(), r.digest.as_deref()), (None, Some(D)));
        assert!(!r.is_loopback());
        assert!(OciRef::parse("oci://[::1]:5000/x:1").unwrap().is_loopback());
        assert!(OciRef::parse("oci://localhost/x:1").unwrap().is_loopback());
    }

    #[test]
    fn refuses_what_it_cannot_pin() {
        for bad in ["ghcr.io/a:1", "oci://ghcr.io/a", "oci://ghcr.io/A:1", "oci://ghcr.io/a@sha256:12", "oci:///a:1", "oci://h/a:b c"] {
            let e = OciRef::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("expected oci://"), "{e}");
        }
    }

    #[test]
    fn repositories_name_no_tag() {
        assert_eq!(parse_repository("ghcr.io/acme/search").unwrap(), "ghcr.io/acme/search");
        assert_eq!(parse_repository("oci://127.0.0.1:5000/corral/echo").unwrap(), "127.0.0.1:5000/corral/echo");
        for bad in ["ghcr.io", "ghcr.io/acme/search:1", "ghcr.io/Acme/x", "/x", "h/a@sha256:00"] {
            let e = parse_repository(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("expected HOST[:PORT]/REPO"), "{e}");
        }
    }
}
