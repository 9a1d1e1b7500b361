//! Why a token was refused: the reason, for logs and metrics, and what the transport answers.

/// Why a token was refused: for the log line and the metric, never for the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Longer than [`super::verify::MAX_TOKEN`].
    TooLong,
    /// Not a JWS in compact form, or a header or claims that do not parse.
    Malformed,
    /// An algorithm not accepted (`none`, HMAC), or one the key does not fit.
    Algorithm,
    /// A `typ` other than RFC 9068's (and the issuer is not relaxed).
    Type,
    /// An `iss` no `--oauth-issuer` names.
    Issuer,
    /// A key id the issuer's set does not hold, even fetched again.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `exp` passed (beyond the leeway).
    Expired,
    /// `nbf` not reached (beyond the leeway).
    NotYetValid,
    /// `aud` does not name this host.
    Audience,
    /// A required claim (`exp`, `iss`, `aud`, `sub`) missing or of the wrong shape.
    Claims,
    /// An opaque token its issuer says is not active (revoked, expired, unknown).
    Inactive,
}

impl Reason {
    /// Every reason, in metric order.
    pub const ALL: [Reason; 12] = [
        Reason::TooLong,
        Reason::Malformed,
        Reason::Algorithm,
        Reason::Type,
        Reason::Issuer,
        Reason::UnknownKey,
        Reason::Signature,
        Reason::Expired,
        Reason::NotYetValid,
        Reason::Audience,
        Reason::Claims,
        Reason::Inactive,
    ];

    /// The metric label and log word.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::TooLong => "too-long",
            Reason::Malformed => "malformed",
            Reason::Algorithm => "algorithm",
            Reason::Type => "type",
            Reason::Issuer => "issuer",
            Reason::UnknownKey => "unknown-key",
            Reason::Signature => "signature",
            Reason::Expired => "expired",
            Reason::NotYetValid => "not-yet-valid",
            Reason::Audience => "audience",
            Reason::Claims => "claims",
            Reason::Inactive => "inactive",
        }
    }
}

/// A refused token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Not a valid token for this host (401 `invalid_token`).
    Invalid(Reason),
    /// It names a trusted issuer whose keys could never be fetched, or it is opaque and the
    /// introspection endpoint did not answer (503: the client's token may be fine, and asking
    /// it to sign in again would not help).
    Unavailable,
    /// An opaque token that would need an introspection this client address may not cause
    /// now (429, with the seconds until it may).
    Throttled {
        /// Seconds until the address may cause another introspection.
        retry_after_secs: u64,
    },
}
