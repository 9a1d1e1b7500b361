//! Secrets a plugin declares (`[secrets.NAME]`), resolved per call and seen by that call only.
//!
//! A caller secret belongs to one principal (a [`Holder`]) and one plugin. It is stored sealed
//! ([`SecretsKey`]: XChaCha20-Poly1305 under the operator's key, the row's holder, plugin, name
//! and key id bound in as associated data, so a row copied to another holder or name does not
//! open) in whichever task store the host runs on, through the [`SecretRows`] trait each store
//! implements; [`Vault`] is what the rest of the host uses. A host secret is a file of
//! `--secrets-dir` ([`HostSecrets`]), read when a call needs it, so a Kubernetes Secret that is
//! updated in place is seen at the next call.
//!
//! A value lives in a [`Secret`]: it prints as `[redacted]`, is wiped when dropped, and is
//! handed out only as the `&str` a call's environment needs.

mod holder;
mod host_dir;
mod key;
mod links;
mod resolve;
mod rows;
#[cfg(test)]
pub(crate) mod suite;
mod value;
mod vault;

pub use holder::Holder;
pub use host_dir::{HostSecretError, HostSecrets};
pub use key::{KeyError, SecretsKey};
pub use links::{ConnectLinks, Link, LinkRefused, LinkTarget, LINK_TTL};
pub use resolve::{ConnectUrl, Resolver, SecretEnv, Unresolved};
pub use rows::{RowsError, RowsFuture, SealedSecret, SecretListing, SecretRows};
pub use value::{Secret, ValueError, MAX_VALUE};
pub use vault::{Rotated, Vault, VaultError};
