//! One outgoing `wasi:http` GET, the way componentize-js and other HTTP-first guests reach out.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme};

/// GETs `http://AUTHORITY/` and returns `status N`, or why it failed.
pub fn get(authority: &str) -> Result<String, String> {
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&Scheme::Http)).map_err(|()| "bad scheme")?;
    request.set_authority(Some(authority)).map_err(|()| format!("bad authority {authority}"))?;
    request.set_path_with_query(Some("/")).map_err(|()| "bad path")?;
    let response = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    response.subscribe().block();
    match response.get() {
        Some(Ok(Ok(response))) => Ok(format!("status {}", response.status())),
        Some(Ok(Err(e))) => Err(format!("{e:?}")),
        Some(Err(())) => Err("response taken twice".into()),
        None => Err("no response".into()),
    }
}
