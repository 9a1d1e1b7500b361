//! OAuth 2.1 access tokens, as a resource server checks them: who the token's bearer is, as a
//! [`crate::principal::User`], or why the token is refused.
//!
//! MCP clients sign their users in at the organisation's authorization server and present an
//! access token bound to this host (RFC 8707 audience). Checking one must never wait on the
//! network: each trusted issuer's signing keys are found once through its metadata (RFC 8414 /
//! OpenID discovery, [`discovery`]), kept in memory and refreshed in the background ([`keys`]);
//! a token is then checked with local arithmetic only ([`verify`]). Only a key id the cache has
//! not seen (the issuer rotated its keys) fetches the set again, at most once per cool-down, with
//! a short timeout, so an unreachable issuer costs a bounded wait and leaves the cached keys
//! working.
//!
//! An access token that is not a JWT (an opaque handle) can be checked only by asking its
//! issuer (RFC 7662 introspection, [`introspection`]), when the operator configured a client to
//! ask as. That does touch the network, so each answer is kept ([`answers`]) for the token's
//! remaining life, at most `--oauth-introspection-max-age`: a client sending the same token again
//! is checked from memory.
//!
//! The cryptography and JOSE parsing are `jsonwebtoken`'s; this room decides which tokens to
//! trust (issuer, audience, type, algorithm, times) and keeps the keys.

mod answers;
mod claims;
pub mod discovery;
mod fetch;
pub mod introspection;
pub mod issuer;
pub mod keys;
mod metrics;
mod rejection;
pub mod verify;

pub use self::introspection::{ClientSecret, IntrospectionSettings};
pub use self::issuer::IssuerUrl;
pub use self::rejection::{Reason, Rejection};
pub use self::verify::Verifier;

use std::time::Duration;

/// How a host checks OAuth access tokens: the flags, as `cli::host` decided them.
#[derive(Clone, Debug)]
pub struct OAuthSettings {
    /// The canonical URI of the MCP endpoint (`--public-url` + `/mcp`): the protected resource
    /// metadata's `resource`, and what clients send as RFC 8707 `resource`.
    pub resource: String,
    /// The audience every token must name (`--oauth-audience`, by default `resource`).
    pub audience: String,
    /// The trusted authorization servers, each with its own relaxations.
    pub issuers: Vec<IssuerSettings>,
    /// Scopes every MCP request needs (`--oauth-scope`); advertised as `scopes_supported`.
    pub required_scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long fetching an issuer's metadata or keys may take.
    pub fetch_timeout: Duration,
    /// The least time between two key fetches an unknown key id triggers.
    pub refetch_cooldown: Duration,
    /// How opaque (non-JWT) tokens are checked, when they are (`--oauth-introspection-client`).
    pub introspection: Option<IntrospectionSettings>,
}

/// One trusted authorization server.
#[derive(Clone, Debug)]
pub struct IssuerSettings {
    /// Its issuer identifier, compared exactly with a token's `iss`.
    pub issuer: IssuerUrl,
    /// Audiences accepted from this issuer besides [`OAuthSettings::audience`]
    /// (`--oauth-extra-audience ISSUER=AUDIENCE`): for servers that cannot put the resource in
    /// `aud` (Keycloak without resource indicators, Authentik, Entra ID's `api://` names).
    pub extra_audiences: Vec<String>,
    /// Accept `typ: JWT` (or none) besides RFC 9068's `at+jwt` (`--oauth-relax-typ ISSUER`):
    /// Entra ID and Keycloak issue access tokens typed as plain JWTs.
    pub relax_typ: bool,
}

/// Defaults, each written once.
pub mod defaults {
    /// Clock skew allowed on `exp` and `nbf`.
    pub const LEEWAY: &str = "30s";
    /// How long an issuer's metadata or key fetch may take.
    pub const FETCH_TIMEOUT: &str = "5s";
    /// The least time between two key fetches triggered by unknown key ids.
    pub const REFETCH_COOLDOWN: &str = "30s";
    /// How long an introspection answer is kept at most (less when the token expires sooner).
    pub const INTROSPECTION_MAX_AGE: &str = "5m";
    /// Introspection answers kept at once.
    pub const INTROSPECTION_CACHE: usize = 10_000;
}
