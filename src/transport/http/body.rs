//! A request's body read whole, bounded in size and in time, for the MCP and admin listeners.
//!
//! Both read a body before they act on it, and both must tell a body that is too large from
//! one that is too slow or broken: each answers in its own shape (a JSON-RPC error, the
//! console's JSON error), so this module says which, and they word it.

use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody as _};
use axum::http::HeaderValue;
use axum::response::Response;

/// Why a body was not read.
#[derive(Debug)]
pub enum BodyError {
    /// Over the limit: `announced` is its `Content-Length` when that already said so (nothing
    /// was read), `None` when a body without one ran past the limit.
    TooLarge {
        /// The length the request announced.
        announced: Option<u64>,
    },
    /// It did not arrive within the timeout (it trickled, or stopped short).
    TooSlow,
    /// The connection failed while it was read.
    Unreadable(axum::Error),
}

/// The whole of `body`, at most `limit` bytes, within `timeout`.
pub async fn read_whole(body: Body, limit: usize, timeout: Duration) -> Result<Bytes, BodyError> {
    // hyper's size hint is exact when the request has a `Content-Length`: refused unread.
    let announced = body.size_hint().lower();
    if announced > limit as u64 {
        return Err(BodyError::TooLarge { announced: Some(announced) });
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => Err(BodyError::TooLarge { announced: None }),
        Ok(Err(e)) => Err(BodyError::Unreadable(e)),
        Err(_) => Err(BodyError::TooSlow),
    }
}

/// `response`, saying the connection ends after it. For answers that leave the request's body
/// unread: the connection cannot carry another request, and a client told so opens a new one
/// instead of sending down one the server is about to close.
pub fn closing(mut response: Response) -> Response {
    response.headers_mut().insert("connection", HeaderValue::from_static("close"));
    response
}
