//! A read-only cursor over a request's `params`, in the style of mini-redis's `Parse`.
//!
//! Every handler reads its params through [`Params`], so a field of the wrong type gets the
//! same words everywhere ("`cursor` must be a string"). Where a method has always said
//! something more precise, the caller passes that text: the messages are part of the product
//! and clients and tests read them.
//!
//! The rules, the same for every field:
//! - a *required* field that is absent is "missing `key`" plus the caller's hint; one of the
//!   wrong type (including `null`) is "`key` must be a string";
//! - an *optional* field that is absent or `null` is `None`.

use serde_json::{Map, Value};

use super::RpcError;

/// The `_meta` key a client puts its progress token under.
const PROGRESS_TOKEN: &str = "progressToken";

/// A request's params (or an object inside them), read field by field.
#[derive(Clone, Copy, Debug)]
pub struct Params<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Params<'a> {
    /// A cursor over `map`.
    pub fn new(map: &'a Map<String, Value>) -> Params<'a> {
        Params { map }
    }

    /// The object underneath, for code that still takes a map.
    pub fn map(self) -> &'a Map<String, Value> {
        self.map
    }

    /// The raw value at `key`, if any (`null` included).
    pub fn get(self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// Whether `key` holds something other than `null`.
    pub fn has(self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    /// A string field the method cannot do without. Absent: "missing `key`" then `: hint` when
    /// a hint is given; any other type: "`key` must be a string".
    pub fn required_str(self, key: &str, hint: &str) -> Result<&'a str, RpcError> {
        match self.map.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(must_be(key, "a string")),
            None if hint.is_empty() => Err(RpcError::invalid_params(format!("missing `{key}`"))),
            None => Err(RpcError::invalid_params(format!("missing `{key}`: {hint}"))),
        }
    }

    /// A string field, or `None` when absent or `null`; any other type: "`key` must be a string".
    pub fn optional_str(self, key: &str) -> Result<Option<&'a str>, RpcError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(must_be(key, "a string")),
        }
    }

    /// The string at `key`, or `None` whatever else is there.
    pub fn get_str(self, key: &str) -> Option<&'a str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// The string at `key`, or `error` (one message for absent and for the wrong type).
    pub fn str_or(self, key: &str, error: &str) -> Result<&'a str, RpcError> {
        self.get_str(key).ok_or_else(|| RpcError::invalid_params(error))
    }

    /// An object field, or `None` when absent or `null`; any other type: "`key` must be an object".
    pub fn optional_object(self, key: &str) -> Result<Option<Params<'a>>, RpcError> {
        self.optional_object_or(key, &format!("`{key}` must be an object"))
    }

    /// Like [`Params::optional_object`], with the caller's message for the wrong type.
    pub fn optional_object_or(self, key: &str, error: &str) -> Result<Option<Params<'a>>, RpcError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Params::new(map))),
            Some(_) => Err(RpcError::invalid_params(error)),
        }
    }

    /// The object at `key`, or `error` (one message for absent and for the wrong type).
    pub fn object_or(self, key: &str, error: &str) -> Result<Params<'a>, RpcError> {
        match self.map.get(key) {
            Some(Value::Object(map)) => Ok(Params::new(map)),
            _ => Err(RpcError::invalid_params(error)),
        }
    }

    /// A non-negative integer field, or `None` when absent or `null`; anything else is `error`.
    pub fn optional_non_negative(self, key: &str, error: &str) -> Result<Option<i64>, RpcError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_i64().filter(|n| *n >= 0).map(Some).ok_or_else(|| RpcError::invalid_params(error)),
        }
    }

    /// The paging `cursor` of a list method, if the client sent one.
    pub fn cursor(self) -> Result<Option<&'a str>, RpcError> {
        self.optional_str("cursor")
    }

    /// `_meta`, when it is an object (anything else there is ignored, as MCP reserves it).
    pub fn meta(self) -> Option<Params<'a>> {
        match self.map.get("_meta") {
            Some(Value::Object(map)) => Some(Params::new(map)),
            _ => None,
        }
    }

    /// A string in `_meta`, or `None` when absent or `null`; any other type:
    /// "`_meta["key"]` must be a string".
    pub fn meta_str(self, key: &str) -> Result<Option<&'a str>, RpcError> {
        match self.meta().and_then(|m| m.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(RpcError::invalid_params(format!("`_meta[\"{key}\"]` must be a string"))),
        }
    }

    /// `_meta.progressToken` when it is a usable token (a string or an integer); anything else
    /// means the client gets no progress, not an error.
    pub fn progress_token(self) -> Option<Value> {
        self.meta().and_then(|m| m.get(PROGRESS_TOKEN)).filter(|t| t.is_string() || t.is_i64()).cloned()
    }

    /// `_meta.progressToken` for a method that checks its `_meta` (`tools/call`): a `_meta` that
    /// is not an object, or a token that is neither a string nor an integer, is refused.
    pub fn checked_progress_token(self) -> Result<Option<Value>, RpcError> {
        let Some(meta) = self.optional_object("_meta")? else { return Ok(None) };
        match meta.get(PROGRESS_TOKEN) {
            None | Some(Value::Null) => Ok(None),
            Some(token) if token.is_string() || token.is_i64() => Ok(Some(token.clone())),
            Some(_) => Err(RpcError::invalid_params("`_meta.progressToken` must be a string or an integer")),
        }
    }
}

fn must_be(key: &str, what: &str) -> RpcError {
    RpcError::invalid_params(format!("`{key}` must be {what}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn required_strings_name_the_field_and_the_fix() {
        let m = map(json!({"name": "echo", "bad": 3, "nil": null}));
        let p = Params::new(&m);
        assert_eq!(p.required_str("name", "").unwrap(), "echo");
        assert_eq!(p.required_str("uri", "the URI of a resource").unwrap_err().message, "missing `uri`: the URI of a resource");
        assert_eq!(p.required_str("taskId", "").unwrap_err().message, "missing `taskId`");
        assert_eq!(p.required_str("bad", "x").unwrap_err().message, "`bad` must be a string");
        assert_eq!(p.required_str("nil", "x").unwrap_err().message, "`nil` must be a string");
        assert_eq!(p.required_str("bad", "x").unwrap_err().code, super::super::jsonrpc::INVALID_PARAMS);
    }

    #[test]
    fn optional_fields_treat_null_as_absent() {
        let m = map(json!({"cursor": null, "arguments": [], "task": {"ttl": -1}, "_meta": {"progressToken": 7, "k": 1}}));
        let p = Params::new(&m);
        assert_eq!(p.cursor().unwrap(), None);
        assert_eq!(p.optional_object("arguments").unwrap_err().message, "`arguments` must be an object");
        let task = p.optional_object("task").unwrap().unwrap();
        assert_eq!(task.optional_non_negative("ttl", "no").unwrap_err().message, "no");
        assert_eq!(p.progress_token(), Some(json!(7)));
        assert_eq!(p.meta_str("k").unwrap_err().message, "`_meta[\"k\"]` must be a string");
        assert_eq!(p.meta_str("absent").unwrap(), None);
    }

    #[test]
    fn progress_tokens_are_strings_or_integers() {
        let m = map(json!({"_meta": {"progressToken": 1.5}}));
        assert_eq!(Params::new(&m).progress_token(), None);
        let m = map(json!({"_meta": {"progressToken": "t"}}));
        assert_eq!(Params::new(&m).progress_token(), Some(json!("t")));
    }
}
