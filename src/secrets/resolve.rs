//! What one call's environment gets: each secret its plugin declares, resolved for the caller.
//!
//! A plugin that declares nothing costs a call nothing here (no lookup, no allocation). One that
//! declares secrets gets all of them or none: a call never runs with half its credentials.

use std::sync::Arc;

use zeroize::Zeroizing;

use super::holder::Holder;
use super::host_dir::{HostSecretError, HostSecrets};
use super::key::SecretsKey;
use super::links::{ConnectLinks, LinkTarget};
use super::vault::{Vault, VaultError};
use crate::config::{SecretDecl, SecretScope};
use crate::principal::Owner;

/// Where a host's secrets come from: the vault of caller secrets (with `--secrets-key-file`)
/// and the directory of host secrets (`--secrets-dir`); either may be off.
#[derive(Clone, Default)]
pub struct Resolver {
    key: Option<Arc<SecretsKey>>,
    vault: Option<Vault>,
    host: Option<HostSecrets>,
    /// Where a caller is sent to give a secret not set yet, with `--public-url`.
    connect: Option<Connect>,
}

/// The page a link opens (`{--public-url}/secrets/connect/{id}`) and the links minted for it.
#[derive(Clone)]
struct Connect {
    base: String,
    links: Arc<ConnectLinks>,
}

/// The link a caller gets to give a secret they have not set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectUrl {
    /// `{--public-url}/secrets/connect/{id}`.
    pub url: String,
    /// The link's id: the elicitation's id, which the page's completion names.
    pub id: String,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let connect = self.connect.as_ref().map(|c| &c.base);
        f.debug_struct("Resolver")
            .field("key", &self.key)
            .field("caller_secrets", &self.vault.is_some())
            .field("host", &self.host)
            .field("connect", &connect)
            .finish()
    }
}

/// Variables for one call: `(NAME, value)`, the values wiped when the call's context is dropped.
pub type SecretEnv = Vec<(String, Zeroizing<String>)>;

/// Why a call's secrets could not all be resolved: names, never values.
#[derive(Debug, thiserror::Error)]
pub enum Unresolved {
    /// The caller has not set a caller secret: they can, through the page or an operator.
    #[error("secret {} of plugin {plugin} is not set for {holder}{}", .decl.name, .link.as_ref().map(|l| format!(": give it at {}", l.url)).unwrap_or_default())]
    NotSet {
        /// The plugin.
        plugin: String,
        /// The secret, as declared (description and help URL for whoever asks the caller).
        decl: SecretDecl,
        /// Whose it would be.
        holder: Holder,
        /// Where the caller gives it (with `--public-url`): a link for this holder, plugin and
        /// name only, good once and briefly.
        link: Option<ConnectUrl>,
    },
    /// The caller is nobody in particular (an HTTP session without auth, an anonymous client).
    #[error("plugin {plugin} needs the caller's own secret {name}, and this caller is anonymous: sign in (a token or OAuth) to use it")]
    Anonymous {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
    /// The host keeps no caller secrets.
    #[error("plugin {plugin} needs the caller's own secret {name}, and caller secrets are off on this host (it was started without --secrets-key-file)")]
    CallerSecretsOff {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
    /// The host has no secrets directory.
    #[error("plugin {plugin} needs the host's secret {name}, and host secrets are off (it was started without --secrets-dir)")]
    HostSecretsOff {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
    /// A host secret is missing or unreadable.
    #[error("{0}")]
    Host(#[from] HostSecretError),
    /// The vault failed.
    #[error("{0}")]
    Vault(#[from] VaultError),
}

impl Unresolved {
    /// The name of the secret that could not be resolved, for the audit trail; `None` when the
    /// store failed as a whole (no one secret was the matter).
    pub fn secret(&self) -> Option<&str> {
        match self {
            Unresolved::NotSet { decl, .. } => Some(&decl.name),
            Unresolved::Anonymous { name, .. } | Unresolved::CallerSecretsOff { name, .. } | Unresolved::HostSecretsOff { name, .. } => Some(name),
            Unresolved::Host(HostSecretError::Missing { name, .. } | HostSecretError::Unreadable { name, .. } | HostSecretError::Invalid { name, .. }) => {
                Some(name)
            }
            Unresolved::Vault(VaultError::OtherKey { name, .. } | VaultError::Unopenable { name, .. }) => Some(name),
            Unresolved::Vault(VaultError::WrongKey { .. } | VaultError::Store(_)) => None,
        }
    }

    /// Whether the caller was given a link to set the secret.
    pub fn asked(&self) -> bool {
        matches!(self, Unresolved::NotSet { link: Some(_), .. })
    }
}

impl Resolver {
    /// Caller secrets sealed with `key` (opened over the store by [`Resolver::over`]), host
    /// secrets from `host`.
    pub fn new(key: Option<Arc<SecretsKey>>, host: Option<HostSecrets>) -> Resolver {
        Resolver { key, vault: None, host, connect: None }
    }

    /// The same, sending a caller who has not set a secret to `{public_url}/secrets/connect/ID`
    /// (`public_url` without a trailing `/`), each link good for `links`' time.
    pub fn connecting(self, public_url: &str, links: Arc<ConnectLinks>) -> Resolver {
        let base = format!("{}/secrets/connect/", public_url.trim_end_matches('/'));
        Resolver { connect: Some(Connect { base, links }), ..self }
    }

    /// The links minted for callers, for the page that takes them back.
    pub fn links(&self) -> Option<&Arc<ConnectLinks>> {
        self.connect.as_ref().map(|c| &c.links)
    }

    /// The same, with its caller secrets in `rows` (the host's task store): refused when the
    /// store holds secrets another key sealed.
    pub async fn over(self, rows: Option<Arc<dyn super::rows::SecretRows>>) -> Result<Resolver, VaultError> {
        let vault = match (&self.key, rows) {
            (Some(key), Some(rows)) => Some(Vault::open(key.clone(), rows).await?),
            _ => None,
        };
        Ok(Resolver { vault, ..self })
    }

    /// Whether caller secrets can be resolved.
    pub fn keeps_caller_secrets(&self) -> bool {
        self.vault.is_some()
    }

    /// The vault, for the page that stores a caller's secret.
    pub fn vault(&self) -> Option<&Vault> {
        self.vault.as_ref()
    }

    /// The variables a call of `plugin` (which declares `declared`) made for `owner` gets.
    pub async fn resolve(&self, owner: &str, plugin: &str, declared: &[SecretDecl]) -> Result<SecretEnv, Unresolved> {
        if declared.is_empty() {
            return Ok(Vec::new());
        }
        let holder = Owner::parse(owner).and_then(|o| Holder::of(&o));
        let mut env = Vec::with_capacity(declared.len());
        for decl in declared {
            let value = match decl.scope {
                SecretScope::Host => {
                    let host = self.host.as_ref().ok_or_else(|| Unresolved::HostSecretsOff { plugin: plugin.to_owned(), name: decl.name.clone() })?;
                    host.get(plugin, &decl.name)?
                }
                SecretScope::Caller => {
                    let vault = self.vault.as_ref().ok_or_else(|| Unresolved::CallerSecretsOff { plugin: plugin.to_owned(), name: decl.name.clone() })?;
                    let holder = holder.as_ref().ok_or_else(|| Unresolved::Anonymous { plugin: plugin.to_owned(), name: decl.name.clone() })?;
                    match vault.get(holder, plugin, &decl.name).await? {
                        Some(value) => value,
                        None => {
                            let link = self.connect.as_ref().map(|c| {
                                let link = c.links.mint(LinkTarget { holder: holder.clone(), plugin: plugin.to_owned(), name: decl.name.clone() });
                                ConnectUrl { url: format!("{}{}", c.base, link.id), id: link.id }
                            });
                            return Err(Unresolved::NotSet { plugin: plugin.to_owned(), decl: decl.clone(), holder: holder.clone(), link });
                        }
                    }
                }
            };
            env.push((decl.name.clone(), Zeroizing::new(value.expose().to_owned())));
        }
        Ok(env)
    }
}
