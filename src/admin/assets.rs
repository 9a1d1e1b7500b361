//! The console's files, embedded in the binary: it works offline and loads nothing from
//! anywhere else (no CDN, no fonts). Each response forbids other origins' scripts and framing
//! (`Content-Security-Policy`), so an injected value could not run or be clickjacked.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The API's OpenAPI 3.1 document, written by hand beside the handlers.
pub const OPENAPI: &str = include_str!("assets/openapi.json");
const HTML: &str = include_str!("assets/console.html");
const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// Only this origin's files; no inline script or style; no framing.
const CSP: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

fn file(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

pub fn html() -> Response {
    file("text/html; charset=utf-8", HTML)
}

pub fn css() -> Response {
    file("text/css; charset=utf-8", CSS)
}

pub fn js() -> Response {
    file("text/javascript; charset=utf-8", JS)
}
