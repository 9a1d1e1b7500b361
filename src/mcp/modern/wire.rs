//! What every 2026-07-28 result carries besides its payload: `resultType`, the server's
//! identity in `_meta`, and for cacheable results how long and for whom they may be cached.

use serde_json::{json, Map, Value};

use super::names::SERVER_INFO_KEY;

/// `resultType` of a finished request.
pub const COMPLETE: &str = "complete";

/// Who may reuse a cached result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client: the answer is the same for everyone.
    Public,
    /// Only the client that asked.
    Private,
}

impl CacheScope {
    fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// How a result may be cached (`ttlMs`, `cacheScope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caching {
    /// How long the result stays good, in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

/// The server's identity, as result `_meta` carries it.
pub fn server_info() -> Value {
    json!({ "name": "corral", "version": env!("CARGO_PKG_VERSION") })
}

/// `result` as a modern result of type `result_type`: with `resultType`, the server's identity
/// in `_meta` (beside what `_meta` already holds), and `caching` when given.
pub fn result(mut result: Value, result_type: &str, caching: Option<Caching>) -> Value {
    if !result.is_object() {
        result = json!({});
    }
    let object = result.as_object_mut().expect("made an object above");
    object.insert("resultType".into(), json!(result_type));
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_INFO_KEY.into(), server_info());
    }
    if let Some(Caching { ttl_ms, scope }) = caching {
        object.insert("ttlMs".into(), json!(ttl_ms));
        object.insert("cacheScope".into(), json!(scope.as_str()));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_their_meta_and_gain_type_identity_and_caching() {
        let r = result(json!({"tools": [], "_meta": {"corral/x": 1}}), COMPLETE, Some(Caching { ttl_ms: 0, scope: CacheScope::Public }));
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"]["corral/x"], 1);
        assert_eq!(r["_meta"][SERVER_INFO_KEY]["name"], "corral");
        assert_eq!((r["ttlMs"].as_u64(), r["cacheScope"].as_str()), (Some(0), Some("public")));
        assert!(result(json!({}), COMPLETE, None).get("ttlMs").is_none());
    }
}
