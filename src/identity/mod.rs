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
//! is checked from memory. A refusal is remembered briefly too ([`refusals`]), and the calls one
//! client address may cause are bounded (`--oauth-introspection-rate`, [`throttle`]), so garbage
//! tokens cannot turn corral into a flood against the authorization server.
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
mod refusals;
mod rejection;
mod settings;
mod throttle;
pub mod verify;

pub use self::introspection::{ClientSecret, IntrospectionSettings};
pub use self::issuer::IssuerUrl;
pub use self::rejection::{Reason, Rejection};
pub use self::settings::{IssuerSettings, OAuthSettings};
pub use self::throttle::IntrospectionRate;
pub use self::verify::Verifier;

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
    /// Introspection answers kept at once (and refusals remembered at once).
    pub const INTROSPECTION_CACHE: usize = 10_000;
    /// Introspections one client address may cause: that many at once, then that rate.
    pub const INTROSPECTION_RATE: &str = "20/s";
}
