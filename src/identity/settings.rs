//! How a host checks OAuth access tokens: the settings `cli::host` makes of the flags, which the
//! verifier and the introspector are built from.

use std::time::Duration;

use super::introspection::IntrospectionSettings;
use super::issuer::IssuerUrl;

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
