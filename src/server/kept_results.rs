//! Kept results in the store: a plain call's large result kept under a fresh id for its owner,
//! and `resources/read` of `corral://results/{id}/{n}` one page at a time (how a result is cut
//! into parts is [`super::result_links`]'s, which needs no host and so serves the task runner too).

use serde_json::{json, Map, Value};

use super::paging;
use super::result_links::{by_reference, not_kept, payload_size, RESULTS_SCHEME};
use super::Host;
use crate::mcp::jsonrpc::INVALID_PARAMS;
use crate::mcp::types::CallToolResult;
use crate::mcp::{Params, RpcError};
use crate::principal::Owner;
use crate::tasks::PartKind;

/// The page a `resources/read` of a kept result asks for.
const CURSOR: &str = "corral/cursor";
/// The page to ask for next, in the answer; absent after the last page.
const NEXT_CURSOR: &str = "corral/nextCursor";

/// A plain call's result, with its large pieces kept for `--task-ttl` under a fresh id for
/// `owner` when it is over `limit`. A result that cannot be kept is an error result saying so,
/// never a huge answer.
pub async fn keep_plain(host: &Host, owner: &Owner, tool: &str, limit: u64, result: CallToolResult) -> CallToolResult {
    // Most results fit: they need no id (a `getrandom` call) and no store.
    if payload_size(&result) <= limit {
        return result;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let Some((inline, parts)) = by_reference(&result, &id, limit) else { return result };
    // Boxed: the store's future is large, and every plain call's future would carry its room.
    match Box::pin(host.engine.keep_result(owner.key(), &id, Some(host.engine.default_expiry()), parts)).await {
        Ok(()) => inline,
        Err(e) => not_kept(tool, payload_size(&result), limit, &e.to_string()),
    }
}

/// The error for a kept result that does not exist, has expired or belongs to someone else:
/// all read the same, so nobody learns of another's results.
pub fn not_found(uri: &str) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
}

/// `{id}` and `{n}` of `corral://results/{id}/{n}`, `{n}` as corral writes it (so each part has
/// one URI: `00` and `+0` are no names of part 0).
fn parse(uri: &str) -> Option<(&str, u32)> {
    let (id, n) = uri.strip_prefix(RESULTS_SCHEME)?.split_once('/')?;
    let n = paging::canonical(n).filter(|_| !id.is_empty())?;
    Some((id, n))
}

/// The page `_meta["corral/cursor"]` names (the first without one): a number as
/// `corral/nextCursor` writes it, else -32602.
fn page_of(cursor: Option<&str>, uri: &str) -> Result<u32, RpcError> {
    let Some(cursor) = cursor else { return Ok(0) };
    paging::canonical(cursor)
        .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor {cursor:?} for {uri}: pass the `corral/nextCursor` of the previous page")))
}

/// `resources/read` of a kept result for `owner`: one page, the one `_meta["corral/cursor"]`
/// names (the first without it).
pub async fn read(host: &Host, owner: &Owner, params: Params<'_>) -> Result<Value, RpcError> {
    let uri = super::resources::uri_param(params)?;
    let Some((id, part)) = parse(uri) else { return Err(not_found(uri)) };
    let page = page_of(params.meta_str(CURSOR)?, uri)?;
    let store = |e: crate::tasks::EngineError| RpcError::internal(e.to_string());
    let Some(found) = host.engine.result_page(owner.key(), id, part, page).await.map_err(store)? else {
        if page > 0 && host.engine.result_page(owner.key(), id, part, 0).await.map_err(store)?.is_some() {
            return Err(RpcError::invalid_params(format!("cursor {page} is past the last page of {uri}")).with_data(json!({ "uri": uri })));
        }
        return Err(not_found(uri));
    };
    let mut contents = Map::new();
    contents.insert("uri".into(), json!(uri));
    if let Some(mime) = &found.mime_type {
        contents.insert("mimeType".into(), json!(mime));
    }
    match found.kind {
        PartKind::Text => contents.insert("text".into(), json!(found.data)),
        PartKind::Blob => contents.insert("blob".into(), json!(found.data)),
    };
    let mut meta = Map::new();
    meta.insert("corral/page".into(), json!(found.page));
    meta.insert("corral/pages".into(), json!(found.pages));
    meta.insert("corral/size".into(), json!(found.size));
    if found.page + 1 < found.pages {
        meta.insert(NEXT_CURSOR.into(), json!((found.page + 1).to_string()));
    }
    Ok(json!({ "contents": [Value::Object(contents)], "_meta": meta }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cursors_as_corral_writes_them_name_a_page() {
        let uri = "corral://results/abc/0";
        assert_eq!(page_of(None, uri).unwrap(), 0);
        assert_eq!(page_of(Some("0"), uri).unwrap(), 0);
        assert_eq!(page_of(Some("12"), uri).unwrap(), 12);
        for bad in ["+1", "01", "00", "-1", "1.0", ""] {
            let e = page_of(Some(bad), uri).unwrap_err();
            assert_eq!(e.code, INVALID_PARAMS, "{bad:?}");
            assert_eq!(e.message, format!("invalid cursor {bad:?} for {uri}: pass the `corral/nextCursor` of the previous page"));
        }
    }

    #[test]
    fn only_well_formed_result_uris_parse() {
        assert_eq!(parse("corral://results/abc/3"), Some(("abc", 3)));
        assert_eq!(parse("corral://results/abc/0"), Some(("abc", 0)));
        for bad in [
            "corral://results/abc",
            "corral://results//3",
            "corral://results/abc/x",
            "corral://results/abc/+3",
            "corral://results/abc/00",
            "corral://results/abc/03",
            "file:///x",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
