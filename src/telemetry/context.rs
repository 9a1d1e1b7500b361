//! The W3C trace context as it travels: in a request's `params._meta` (what the SDKs send, in
//! both eras and over stdio) or its HTTP headers, and with a task in its store. One that is
//! malformed, too long or repeated is ignored: the request starts a trace of its own, never an
//! error. Parsing and writing are the SDK's propagator's.

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

/// The longest `traceparent` taken (a version-00 one is 55 characters; later versions may add
/// fields, so some room is left).
const MAX_TRACEPARENT: usize = 256;

/// The longest `tracestate` taken (the W3C recommendation for what to propagate).
const MAX_TRACESTATE: usize = 512;

/// A W3C trace context as it travels: a valid `traceparent` and its `tracestate`. What a task
/// keeps in the store to continue its creator's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carrier {
    traceparent: String,
    tracestate: Option<String>,
}

impl Carrier {
    /// The context in a request's `params._meta` (`traceparent`, `tracestate`), when it holds a
    /// valid one.
    pub fn from_meta(params: &Map<String, Value>) -> Option<Carrier> {
        let meta = params.get("_meta")?.as_object()?;
        let traceparent = meta.get("traceparent")?.as_str()?;
        let tracestate = meta.get("tracestate").and_then(Value::as_str);
        Carrier::checked(traceparent, tracestate)
    }

    /// The context in HTTP headers: exactly one `traceparent` (two are ignored: which one
    /// would be the caller's?), and `tracestate`, whose repeated headers join with commas.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Carrier> {
        let mut parents = headers.get_all("traceparent").iter();
        let (Some(traceparent), None) = (parents.next(), parents.next()) else { return None };
        let states: Vec<&str> = headers.get_all("tracestate").iter().filter_map(|v| v.to_str().ok()).collect();
        let tracestate = (!states.is_empty()).then(|| states.join(","));
        Carrier::checked(traceparent.to_str().ok()?, tracestate.as_deref())
    }

    /// A stored context, as [`Carrier::to_stored`] wrote it; `None` when it is not one.
    pub fn from_stored(text: &str) -> Option<Carrier> {
        let (traceparent, tracestate) = match text.split_once('\n') {
            Some((parent, state)) => (parent, Some(state)),
            None => (text, None),
        };
        Carrier::checked(traceparent, tracestate)
    }

    /// The form the task stores keep: `traceparent`, then `tracestate` on a line of its own.
    pub fn to_stored(&self) -> String {
        match &self.tracestate {
            Some(state) => format!("{}\n{state}", self.traceparent),
            None => self.traceparent.clone(),
        }
    }

    /// The context of a span of this process, as it travels.
    pub fn of(context: &SpanContext) -> Carrier {
        let mut fields = Fields::default();
        TraceContextPropagator::new().inject_context(&opentelemetry::Context::new().with_remote_span_context(context.clone()), &mut fields);
        let traceparent = fields.0.remove("traceparent").unwrap_or_default();
        Carrier { traceparent, tracestate: fields.0.remove("tracestate").filter(|s| !s.is_empty()) }
    }

    /// The caller's span this carries, as a remote parent.
    pub fn span_context(&self) -> SpanContext {
        self.context().span().span_context().clone()
    }

    /// The id of the trace (32 hex digits).
    pub fn trace_id(&self) -> &str {
        self.traceparent.split('-').nth(1).unwrap_or_default()
    }

    /// `traceparent` and `tracestate` if the propagator takes them as a valid remote context.
    fn checked(traceparent: &str, tracestate: Option<&str>) -> Option<Carrier> {
        if traceparent.len() > MAX_TRACEPARENT || tracestate.is_some_and(|s| s.len() > MAX_TRACESTATE) {
            return None;
        }
        let carrier = Carrier { traceparent: traceparent.to_owned(), tracestate: tracestate.map(str::to_owned) };
        carrier.context().span().span_context().is_valid().then_some(carrier)
    }

    /// The remote context this carries.
    fn context(&self) -> opentelemetry::Context {
        TraceContextPropagator::new().extract(self)
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.traceparent),
            "tracestate" => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_carried_and_stored_whole() {
        let mut params = Map::new();
        params.insert("_meta".into(), serde_json::json!({ "traceparent": VALID, "tracestate": "congo=t61rcWkgMzE" }));
        let carrier = Carrier::from_meta(&params).expect("valid");
        assert_eq!(carrier.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(Carrier::from_stored(&carrier.to_stored()), Some(carrier));
    }

    #[test]
    fn malformed_too_long_or_repeated_contexts_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert_eq!(Carrier::from_stored(bad), None, "{bad:?}");
        }
        let long = format!("{VALID}-{}", "a".repeat(MAX_TRACEPARENT));
        assert_eq!(Carrier::from_stored(&long), None);
        let mut params = Map::new();
        params.insert("_meta".into(), serde_json::json!({ "traceparent": 5 }));
        assert_eq!(Carrier::from_meta(&params), None);

        let mut headers = http::HeaderMap::new();
        headers.append("traceparent", VALID.parse().unwrap());
        assert!(Carrier::from_headers(&headers).is_some());
        headers.append("traceparent", VALID.parse().unwrap());
        assert_eq!(Carrier::from_headers(&headers), None, "two traceparent headers");
    }
}
