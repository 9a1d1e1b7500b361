//! One bounded exchange with an authorization server (a GET of a JSON document, or a form POST
//! answered with one): a timeout on the whole exchange and a cap on its size, so a slow or
//! hostile server costs a known amount.

use std::time::Duration;

use serde_json::Value;

/// The largest metadata or key set accepted.
const MAX_DOCUMENT: usize = 512 * 1024;

/// An HTTP client for one host's issuers.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
}

impl Fetcher {
    /// A client whose every request gives up after `timeout`.
    pub fn new(timeout: Duration) -> Result<Fetcher, String> {
        // reqwest is built without a default TLS provider; ring is the one already in the graph.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // An issuer's documents are where its metadata says; a redirect elsewhere is refused.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Fetcher { client })
    }

    /// The JSON object at `url`; an error says why in words fit for a log.
    pub async fn json(&self, url: &str) -> Result<Value, String> {
        read_json(self.client.get(url).header("accept", "application/json")).await
    }

    /// The JSON object `url` answers to a POST of `form` (already `x-www-form-urlencoded`), sent
    /// with the `authorization` header. The error says why in words fit for a log: never the
    /// form or the header, which hold secrets.
    pub async fn post_form(&self, url: &str, authorization: &str, form: String) -> Result<Value, String> {
        let request = self
            .client
            .post(url)
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("authorization", authorization)
            .body(form);
        read_json(request).await
    }
}

/// Sends `request` and reads its answer: a JSON object of at most [`MAX_DOCUMENT`] bytes.
async fn read_json(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let mut response = request.send().await.map_err(|e| describe(&e))?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    if response.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
        return Err(format!("the document is over {MAX_DOCUMENT} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("the document is over {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    let value: Value = serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(value)
}

/// reqwest's error with its causes (the outer one alone says little: "error sending request").
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
