//! How the operator's console shows a live session and a principal: never a whole session id.

use serde::Serialize;

use crate::principal::{Owner, Principal, Wire};

/// One live MCP session (2025-11-25; 2026-07-28 requests have none).
#[derive(Clone, Debug, Serialize)]
pub struct SessionView {
    /// Who it acts for: `token:NAME`, `user:ISSUER SUBJECT`, `local`, or `session:` and the
    /// first characters of its id.
    pub principal: String,
    /// `sessions` (2025-11-25) or `stateless` (2026-07-28).
    pub wire: &'static str,
    /// `clientInfo.name`, once initialized.
    pub client: Option<String>,
    /// The protocol version agreed, once initialized.
    pub protocol_version: Option<String>,
    /// When it was opened, in milliseconds since the Unix epoch.
    pub opened_at: i64,
    /// Requests in flight now.
    pub in_flight: usize,
}

impl SessionView {
    pub(crate) fn new(owner: &Owner, client: Option<(String, String)>, opened_at: i64, in_flight: usize) -> SessionView {
        let (client, protocol_version) = client.map_or((None, None), |(c, v)| (Some(c), Some(v)));
        let wire = match owner.wire() {
            Wire::Sessions => "sessions",
            Wire::Stateless => "stateless",
        };
        SessionView { principal: principal_label(owner.principal()), wire, client, protocol_version, opened_at, in_flight }
    }
}

/// Characters of an HTTP session id shown: enough to tell sessions apart, too few to use one.
const SESSION_ID_SHOWN: usize = 8;

/// How a principal is shown to the operator (never a whole session id).
pub fn principal_label(principal: &Principal) -> String {
    match principal {
        Principal::Session(id) => format!("session:{}…", id.chars().take(SESSION_ID_SHOWN).collect::<String>()),
        other => Owner::new(other.clone(), Wire::Sessions).key().to_owned(),
    }
}
