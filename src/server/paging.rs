//! Paged lists (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`,
//! `tasks/list`) and the one cursor codec they share.
//!
//! A cursor is opaque to clients: base64 of `KIND:POSITION`, the position to resume *after*.
//! Catalog lists resume after a name (`after:NAME`), so a cursor stays valid while the catalog
//! changes under a hot reload; `tasks/list` resumes after a sequence number (`seq:N`).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as CURSOR;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::mcp::{Params, RpcError};

const AFTER_KEY: &str = "after";
const AFTER_SEQ: &str = "seq";

/// One page of the entries of `map` (ordered by key) that `keep` keeps, after the params'
/// `cursor`, as `field` plus `nextCursor` when more follow. `method` names the list in the
/// invalid-cursor error.
pub fn page<E>(
    map: &BTreeMap<String, Arc<E>>,
    params: Params<'_>,
    page_size: usize,
    (method, field): (&str, &str),
    keep: impl Fn(&E) -> bool,
    show: impl Fn(&E) -> Value,
) -> Result<Value, RpcError> {
    let after = resume(params, method, decode_key)?;
    let range = match &after {
        Some(key) => map.range::<String, _>((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded)),
        None => map.range::<String, _>(..),
    };
    let entries: Vec<(&String, &Arc<E>)> = range.filter(|(_, e)| keep(e)).take(page_size + 1).collect();
    let more = entries.len() > page_size;
    let shown = &entries[..entries.len().min(page_size)];
    let mut result = Map::new();
    result.insert(field.into(), shown.iter().map(|(_, e)| show(e)).collect());
    if let (true, Some((last, _))) = (more, shown.last()) {
        result.insert("nextCursor".into(), json!(key_cursor(last)));
    }
    Ok(Value::Object(result))
}

/// Where a list resumes: the params' `cursor` read with `decode`, or `None` for the first page.
/// A cursor that does not decode is refused with the fix ("pass back a `nextCursor`...").
pub fn resume<T>(params: Params<'_>, method: &str, decode: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, RpcError> {
    match params.cursor()? {
        None => Ok(None),
        Some(c) => {
            decode(c).map(Some).ok_or_else(|| RpcError::invalid_params(format!("invalid cursor {c:?}: pass back a `nextCursor` from an earlier {method}")))
        }
    }
}

/// The cursor of a page that ends at `key`.
pub fn key_cursor(key: &str) -> String {
    encode(AFTER_KEY, key)
}

/// The key a [`key_cursor`] resumes after.
pub fn decode_key(cursor: &str) -> Option<String> {
    decode(AFTER_KEY, cursor)
}

/// The cursor of a page that ends at sequence number `seq` (`tasks/list`).
pub fn seq_cursor(seq: i64) -> String {
    encode(AFTER_SEQ, &seq.to_string())
}

/// The sequence number a [`seq_cursor`] resumes after.
pub fn decode_seq(cursor: &str) -> Option<i64> {
    canonical(&decode(AFTER_SEQ, cursor)?)
}

/// A number written the one way corral writes it: decimal digits, no sign, no leading zero
/// (`0` itself aside). Rust's `parse` also takes `+1` and `007`; accepting those would give one
/// page or part several names, so a client could never tell a cursor it made up from one it
/// was given, and caches keyed by the text would split.
pub fn canonical<N: std::str::FromStr>(text: &str) -> Option<N> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let padded = text.len() > 1 && text.starts_with('0');
    (digits && !padded).then(|| text.parse().ok()).flatten()
}

fn encode(kind: &str, position: &str) -> String {
    CURSOR.encode(format!("{kind}:{position}"))
}

fn decode(kind: &str, cursor: &str) -> Option<String> {
    let text = String::from_utf8(CURSOR.decode(cursor).ok()?).ok()?;
    text.strip_prefix(kind)?.strip_prefix(':').map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_resume_after_the_cursor() {
        let map: BTreeMap<String, Arc<u8>> = (0..5u8).map(|i| (format!("k{i}"), Arc::new(i))).collect();
        let first = page(&map, Params::new(&Map::new()), 2, ("x/list", "items"), |_| true, |i| json!(i)).unwrap();
        assert_eq!(first["items"], json!([0, 1]));
        let mut params = Map::new();
        params.insert("cursor".into(), first["nextCursor"].clone());
        let second = page(&map, Params::new(&params), 2, ("x/list", "items"), |_| true, |i| json!(i)).unwrap();
        assert_eq!(second["items"], json!([2, 3]));
        params.insert("cursor".into(), json!("nonsense"));
        let refused = page(&map, Params::new(&params), 2, ("x/list", "items"), |_| true, |i| json!(i)).unwrap_err();
        assert_eq!((refused.code, refused.message.as_str()), (-32602, "invalid cursor \"nonsense\": pass back a `nextCursor` from an earlier x/list"));
        params.insert("cursor".into(), json!(3));
        assert_eq!(page(&map, Params::new(&params), 2, ("x/list", "items"), |_| true, |i| json!(i)).unwrap_err().message, "`cursor` must be a string");
    }

    #[test]
    fn numbers_are_read_only_as_corral_writes_them() {
        assert_eq!(canonical::<u32>("0"), Some(0));
        assert_eq!(canonical::<u32>("10"), Some(10));
        for bad in ["+1", "-1", "00", "01", "", " 1", "1 ", "1e3", "0x1", "4294967296"] {
            assert_eq!(canonical::<u32>(bad), None, "{bad:?}");
        }
        assert_eq!(decode_seq(&encode(AFTER_SEQ, "+42")), None);
        assert_eq!(decode_seq(&encode(AFTER_SEQ, "042")), None);
    }

    #[test]
    fn cursors_of_one_kind_do_not_decode_as_another() {
        assert_eq!(decode_key(&key_cursor("a:b")), Some("a:b".to_owned()));
        assert_eq!(decode_seq(&seq_cursor(42)), Some(42));
        assert_eq!(decode_seq(&key_cursor("42")), None);
        assert_eq!(decode_key(&seq_cursor(42)), None);
    }
}
