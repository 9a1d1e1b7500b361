//! The admin API's refusals: an HTTP status and a sentence that names what was wrong, as
//! `{"error": {"status": N, "message": "…"}}`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// A refused request.
#[derive(Debug)]
pub struct ApiRefusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// What was wrong, in a sentence.
    pub message: String,
    /// The `WWW-Authenticate` value, when it must say more than the default of a 401 (an OAuth
    /// token without the console's scope: `error="insufficient_scope"`).
    pub challenge: Option<String>,
}

impl ApiRefusal {
    /// A refusal with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiRefusal {
        ApiRefusal { status, message: message.into(), challenge: None }
    }

    /// The refusal with `challenge` as its `WWW-Authenticate`.
    pub fn with_challenge(mut self, challenge: String) -> ApiRefusal {
        self.challenge = Some(challenge);
        self
    }

    /// 400 with `message`.
    pub fn bad_request(message: impl Into<String>) -> ApiRefusal {
        ApiRefusal::new(StatusCode::BAD_REQUEST, message)
    }
}

impl IntoResponse for ApiRefusal {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": { "status": self.status.as_u16(), "message": self.message } }))).into_response();
        match self.challenge.as_deref().and_then(|c| HeaderValue::from_str(c).ok()) {
            Some(challenge) => {
                response.headers_mut().insert("www-authenticate", challenge);
            }
            None if self.status == StatusCode::UNAUTHORIZED => {
                response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer realm=\"corral-admin\""));
            }
            None => {}
        }
        response
    }
}
