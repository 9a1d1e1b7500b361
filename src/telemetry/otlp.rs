//! Spans in OTLP's protobuf form: one span encoded where it ends, and a batch of encoded spans
//! framed as one `ExportTraceServiceRequest`.
//!
//! A span is encoded on the thread that ends it, into one buffer, and only that buffer crosses
//! to the exporter's thread. Handing over the span's parts instead (its attribute strings, its
//! events) made every one of them an allocation freed on another thread, which defeats the
//! allocator's per-thread caches: measured, the SDK's `SpanData` path cost a traced call 45 %.
//! The span is written straight from its record with prost's field encoders, in the layout of
//! `opentelemetry-proto`'s `Span` (the official definitions, which the tests decode it with):
//! building that message first cost two allocations an attribute (its key and its value, owned)
//! and as many frees, more than the rest of the encoding. A batch is framed from the spans' bytes
//! the same way, since a repeated field's encoding is the concatenation of its items.

use opentelemetry::trace::SpanContext;
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message as _;

/// An attribute's value, as a span records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Str(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Value<'_> {
    /// The length of this value as an `AnyValue` message: one field of its oneof (`string_value`
    /// 1, `bool_value` 2, `int_value` 3, `double_value` 4), written even when zero.
    fn encoded_len(&self) -> usize {
        match self {
            Value::Str(s) => framed_len(1, s.len()),
            Value::Bool(_) => key_len(2) + 1,
            Value::Int(i) => key_len(3) + encoded_len_varint(*i as u64),
            Value::Float(_) => key_len(4) + 8,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Str(s) => text(1, s, out),
            Value::Bool(b) => {
                encode_key(2, WireType::Varint, out);
                encode_varint(u64::from(*b), out);
            }
            Value::Int(i) => {
                encode_key(3, WireType::Varint, out);
                encode_varint(*i as u64, out);
            }
            Value::Float(f) => {
                encode_key(4, WireType::SixtyFourBit, out);
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
    }
}

/// OTLP's span kinds, as `otel.kind` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Server,
    Client,
    Producer,
    Consumer,
}

impl Kind {
    /// The kind `otel.kind` names (case-insensitive); `None` for anything else.
    pub fn named(name: &str) -> Option<Kind> {
        [("internal", Kind::Internal), ("server", Kind::Server), ("client", Kind::Client), ("producer", Kind::Producer), ("consumer", Kind::Consumer)]
            .into_iter()
            .find_map(|(known, kind)| name.eq_ignore_ascii_case(known).then_some(kind))
    }

    fn proto(self) -> span::SpanKind {
        match self {
            Kind::Internal => span::SpanKind::Internal,
            Kind::Server => span::SpanKind::Server,
            Kind::Client => span::SpanKind::Client,
            Kind::Producer => span::SpanKind::Producer,
            Kind::Consumer => span::SpanKind::Consumer,
        }
    }
}

/// `Span`'s fields (opentelemetry/proto/trace/v1/trace.proto).
mod field {
    pub const TRACE_ID: u32 = 1;
    pub const SPAN_ID: u32 = 2;
    pub const TRACE_STATE: u32 = 3;
    pub const PARENT_SPAN_ID: u32 = 4;
    pub const NAME: u32 = 5;
    pub const KIND: u32 = 6;
    pub const START: u32 = 7;
    pub const END: u32 = 8;
    pub const ATTRIBUTES: u32 = 9;
    pub const EVENTS: u32 = 11;
    pub const DROPPED_EVENTS: u32 = 12;
    pub const STATUS: u32 = 15;
    pub const FLAGS: u32 = 16;
}

/// `flags`' bits saying that the span's parent's remoteness is known, and that it is remote.
const CONTEXT_HAS_IS_REMOTE: u32 = 0x100;
const CONTEXT_IS_REMOTE: u32 = 0x200;

/// A sampled span while it is open. Its attributes and events are encoded as they are
/// recorded, each a whole `attributes` / `events` field of the `Span` message, so the span is
/// written at its end by putting its ids, name and times in front of them.
#[derive(Debug)]
pub struct Record {
    /// The parent's span id, and whether the parent is another process's.
    pub parent: Option<(opentelemetry::trace::SpanId, bool)>,
    /// `otel.name`; the span's own name without one.
    pub name: Option<String>,
    pub kind: Kind,
    pub start_unix_nano: u64,
    /// Whether the span failed, and what it said of it (`otel.status_description`).
    pub failed: bool,
    pub description: Option<String>,
    attributes: Vec<u8>,
    /// Each attribute's key, and where its field starts in `attributes` and how long it is:
    /// an attribute recorded again replaces the first.
    keys: Vec<(&'static str, usize, usize)>,
    events: Vec<u8>,
    /// Events kept, and events past [`MAX_EVENTS`] left out (OTLP's `dropped_events_count`).
    event_count: u32,
    dropped_events: u32,
}

/// Events a span keeps at most (the OpenTelemetry SDKs' default limit): a task's guest that
/// asks or checkpoints without end keeps a bounded span, and says how many it left out.
pub const MAX_EVENTS: u32 = 128;

impl Record {
    pub fn new(start_unix_nano: u64, attributes: usize) -> Record {
        Record {
            parent: None,
            name: None,
            kind: Kind::Internal,
            start_unix_nano,
            failed: false,
            description: None,
            attributes: Vec::with_capacity(attributes * 32),
            keys: Vec::with_capacity(attributes),
            events: Vec::new(),
            event_count: 0,
            dropped_events: 0,
        }
    }

    /// Sets attribute `key` (replacing an earlier value).
    pub fn attribute(&mut self, key: &'static str, value: Value<'_>) {
        if let Some(at) = self.keys.iter().position(|(known, ..)| *known == key) {
            let (_, start, len) = self.keys.remove(at);
            self.attributes.drain(start..start + len);
            for (_, later, _) in &mut self.keys[at..] {
                *later -= len;
            }
        }
        let start = self.attributes.len();
        key_value(field::ATTRIBUTES, key, value, &mut self.attributes);
        self.keys.push((key, start, self.attributes.len() - start));
    }

    /// Adds an event: `attributes` are encoded `KeyValue`s of the event (see [`event_attribute`]).
    pub fn event(&mut self, time_unix_nano: u64, name: &str, attributes: &[u8]) {
        if self.event_count >= MAX_EVENTS {
            self.dropped_events += 1;
            return;
        }
        self.event_count += 1;
        // `Span.Event`: time (1, fixed64), name (2), attributes (3).
        frame(field::EVENTS, key_len(1) + 8 + framed_len(2, name.len()) + attributes.len(), &mut self.events);
        fixed64(1, time_unix_nano, &mut self.events);
        text(2, name, &mut self.events);
        self.events.extend_from_slice(attributes);
    }

    /// The span, ended at `end_unix_nano`, as one encoded `Span` message.
    pub fn encode(&self, context: &SpanContext, span_name: &str, end_unix_nano: u64) -> Vec<u8> {
        let name = self.name.as_deref().unwrap_or(span_name);
        let remote = self.parent.is_some_and(|(_, remote)| remote);
        let state = context.trace_state().header();
        let message = self.description.as_deref().unwrap_or_default();
        let status = self.failed.then(|| status_len(message));
        let len = framed_len(field::TRACE_ID, 16)
            + framed_len(field::SPAN_ID, 8)
            + if state.is_empty() { 0 } else { framed_len(field::TRACE_STATE, state.len()) }
            + if self.parent.is_some() { framed_len(field::PARENT_SPAN_ID, 8) } else { 0 }
            + framed_len(field::NAME, name.len())
            + key_len(field::KIND)
            + 1
            + 2 * (key_len(field::START) + 8)
            + self.attributes.len()
            + self.events.len()
            + if self.dropped_events > 0 { key_len(field::DROPPED_EVENTS) + encoded_len_varint(u64::from(self.dropped_events)) } else { 0 }
            + status.map_or(0, |len| framed_len(field::STATUS, len))
            + key_len(field::FLAGS)
            + 4;
        let mut out = Vec::with_capacity(len);
        bytes(field::TRACE_ID, &context.trace_id().to_bytes(), &mut out);
        bytes(field::SPAN_ID, &context.span_id().to_bytes(), &mut out);
        if !state.is_empty() {
            text(field::TRACE_STATE, &state, &mut out);
        }
        if let Some((parent, _)) = self.parent {
            bytes(field::PARENT_SPAN_ID, &parent.to_bytes(), &mut out);
        }
        text(field::NAME, name, &mut out);
        encode_key(field::KIND, WireType::Varint, &mut out);
        encode_varint(self.kind.proto() as u64, &mut out);
        fixed64(field::START, self.start_unix_nano, &mut out);
        fixed64(field::END, end_unix_nano, &mut out);
        out.extend_from_slice(&self.attributes);
        out.extend_from_slice(&self.events);
        if self.dropped_events > 0 {
            encode_key(field::DROPPED_EVENTS, WireType::Varint, &mut out);
            encode_varint(u64::from(self.dropped_events), &mut out);
        }
        if let Some(len) = status {
            frame(field::STATUS, len, &mut out);
            // `Status`: message (2), code (3).
            if !message.is_empty() {
                text(2, message, &mut out);
            }
            encode_key(3, WireType::Varint, &mut out);
            encode_varint(status::StatusCode::Error as u64, &mut out);
        }
        let flags = u32::from(context.trace_flags().to_u8()) | CONTEXT_HAS_IS_REMOTE | if remote { CONTEXT_IS_REMOTE } else { 0 };
        encode_key(field::FLAGS, WireType::ThirtyTwoBit, &mut out);
        out.extend_from_slice(&flags.to_le_bytes());
        debug_assert_eq!(out.len(), len);
        out
    }
}

/// Appends one attribute of an event (`Span.Event.attributes`, field 3) to `out`.
pub fn event_attribute(key: &str, value: Value<'_>, out: &mut Vec<u8>) {
    key_value(3, key, value, out);
}

/// `Status` of a failed span: its message (2) when there is one, and the code (3) `ERROR`.
fn status_len(message: &str) -> usize {
    (if message.is_empty() { 0 } else { framed_len(2, message.len()) }) + key_len(3) + encoded_len_varint(status::StatusCode::Error as u64)
}

/// A `KeyValue` (key 1, value 2 an `AnyValue`) as field `tag` of its message.
fn key_value(tag: u32, key: &str, value: Value<'_>, out: &mut Vec<u8>) {
    let value_len = value.encoded_len();
    frame(tag, framed_len(1, key.len()) + framed_len(2, value_len), out);
    text(1, key, out);
    frame(2, value_len, out);
    value.encode(out);
}

fn text(tag: u32, text: &str, out: &mut Vec<u8>) {
    bytes(tag, text.as_bytes(), out);
}

fn bytes(tag: u32, bytes: &[u8], out: &mut Vec<u8>) {
    frame(tag, bytes.len(), out);
    out.extend_from_slice(bytes);
}

fn fixed64(tag: u32, value: u64, out: &mut Vec<u8>) {
    encode_key(tag, WireType::SixtyFourBit, out);
    out.extend_from_slice(&value.to_le_bytes());
}

/// What every batch from this process starts with: its resource and the scope of its spans,
/// encoded once.
#[derive(Clone, Debug)]
pub struct Envelope {
    resource: Vec<u8>,
    scope: Vec<u8>,
}

impl Envelope {
    /// The envelope of spans from `resource`, under the instrumentation scope `scope` at `version`.
    pub fn new(resource: &opentelemetry_sdk::Resource, scope: &str, version: &str) -> Envelope {
        let attributes =
            resource.iter().map(|(key, value)| KeyValue { key: key.as_str().to_owned(), value: Some(value.clone().into()), key_strindex: 0 }).collect();
        let resource = Resource { attributes, ..Resource::default() };
        let scope = InstrumentationScope { name: scope.to_owned(), version: version.to_owned(), ..InstrumentationScope::default() };
        Envelope { resource: resource.encode_to_vec(), scope: scope.encode_to_vec() }
    }

    /// `spans` (each an encoded `Span`) as one encoded `ExportTraceServiceRequest`: one
    /// `ResourceSpans` (field 1) holding the resource (1) and one `ScopeSpans` (2), which holds
    /// the scope (1) and the spans (2).
    pub fn request(&self, spans: &[Vec<u8>]) -> Vec<u8> {
        let scope_spans = framed_len(1, self.scope.len()) + spans.iter().map(|span| framed_len(2, span.len())).sum::<usize>();
        let resource_spans = framed_len(1, self.resource.len()) + framed_len(2, scope_spans);
        let mut out = Vec::with_capacity(framed_len(1, resource_spans));
        frame(1, resource_spans, &mut out);
        frame(1, self.resource.len(), &mut out);
        out.extend_from_slice(&self.resource);
        frame(2, scope_spans, &mut out);
        frame(1, self.scope.len(), &mut out);
        out.extend_from_slice(&self.scope);
        for span in spans {
            frame(2, span.len(), &mut out);
            out.extend_from_slice(span);
        }
        out
    }
}

/// The bytes of a length-delimited field `tag` whose content is `len` bytes long.
fn framed_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// A length-delimited field's key and length; its content follows.
fn frame(tag: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};

    fn context(state: TraceState) -> SpanContext {
        SpanContext::new(TraceId::from(7u128), SpanId::from(9u64), TraceFlags::SAMPLED, false, state)
    }

    fn record(attributes: &[(&'static str, Value<'_>)]) -> Record {
        let mut record = Record::new(10, attributes.len());
        record.parent = Some((SpanId::from(3u64), true));
        record.kind = Kind::Server;
        for (key, value) in attributes {
            record.attribute(key, *value);
        }
        let mut asked = Vec::new();
        event_attribute("corral.host_call", Value::Str("ask"), &mut asked);
        record.event(15, "asked", &asked);
        (record.failed, record.description) = (true, Some("broke".into()));
        record
    }

    #[test]
    fn a_framed_batch_decodes_as_the_official_request() {
        let resource = opentelemetry_sdk::Resource::builder_empty().with_service_name("corral-test").build();
        let envelope = Envelope::new(&resource, "corral", "1.2.3");
        let long = "x".repeat(300);
        let mut call = record(&[
            ("gen_ai.tool.name", Value::Str("echo")),
            ("corral.fuel_consumed", Value::Int(41)),
            ("negative", Value::Int(-3)),
            ("ratio", Value::Float(0.5)),
            ("flag", Value::Bool(false)),
            ("long", Value::Str(&long)),
        ]);
        // Recorded again: the value is replaced, in the place of the first.
        call.attribute("corral.fuel_consumed", Value::Int(42));
        call.name = Some("tools/call echo".into());
        let spans = [call.encode(&context(TraceState::default()), "request", 20), record(&[]).encode(&context(TraceState::default()), "other", 20)];
        let request = ExportTraceServiceRequest::decode(envelope.request(&spans).as_slice()).expect("a valid request");

        let [resource_spans] = request.resource_spans.as_slice() else { panic!("one resource: {request:?}") };
        let service = &resource_spans.resource.as_ref().unwrap().attributes;
        let named = Some(AnyValue { value: Some(any_value::Value::StringValue("corral-test".into())) });
        assert!(service.iter().any(|kv| kv.key == "service.name" && kv.value == named), "{service:?}");
        let [scope_spans] = resource_spans.scope_spans.as_slice() else { panic!("one scope") };
        assert_eq!(scope_spans.scope.as_ref().map(|s| (s.name.as_str(), s.version.as_str())), Some(("corral", "1.2.3")));
        let [call, other] = scope_spans.spans.as_slice() else { panic!("two spans") };
        assert_eq!((call.name.as_str(), other.name.as_str()), ("tools/call echo", "other"));
        assert_eq!(call.trace_id, 7u128.to_be_bytes());
        assert_eq!((call.span_id.as_slice(), call.parent_span_id.as_slice()), (&9u64.to_be_bytes()[..], &3u64.to_be_bytes()[..]));
        assert_eq!((call.kind, call.start_time_unix_nano, call.end_time_unix_nano), (span::SpanKind::Server as i32, 10, 20));
        assert_eq!(call.flags, 0x301);
        let values: Vec<_> = call.attributes.iter().map(|kv| (kv.key.as_str(), kv.value.clone().and_then(|v| v.value))).collect();
        assert_eq!(
            values,
            [
                ("gen_ai.tool.name", Some(any_value::Value::StringValue("echo".into()))),
                ("negative", Some(any_value::Value::IntValue(-3))),
                ("ratio", Some(any_value::Value::DoubleValue(0.5))),
                ("flag", Some(any_value::Value::BoolValue(false))),
                ("long", Some(any_value::Value::StringValue(long.clone()))),
                ("corral.fuel_consumed", Some(any_value::Value::IntValue(42))),
            ]
        );
        assert_eq!((call.events[0].name.as_str(), call.events[0].time_unix_nano), ("asked", 15));
        assert_eq!(call.events[0].attributes[0].key, "corral.host_call");
        assert_eq!(call.status.as_ref().map(|s| (s.code, s.message.as_str())), Some((status::StatusCode::Error as i32, "broke")));
    }

    #[test]
    fn a_root_span_with_a_trace_state_and_no_error_decodes_whole() {
        let root = Record::new(10, 0);
        let state = "congo=t61rcWkgMzE".parse().unwrap();
        let span = opentelemetry_proto::tonic::trace::v1::Span::decode(root.encode(&context(state), "root", 20).as_slice()).expect("valid");
        assert_eq!((span.name.as_str(), span.trace_state.as_str(), span.parent_span_id.len(), span.flags), ("root", "congo=t61rcWkgMzE", 0, 0x101));
        assert!(span.status.is_none() && span.events.is_empty() && span.attributes.is_empty());
    }

    #[test]
    fn a_span_keeps_its_first_events_and_counts_the_rest() {
        let mut record = Record::new(10, 0);
        for i in 0..MAX_EVENTS + 5 {
            record.event(u64::from(i), "checkpoint", &[]);
        }
        let span = opentelemetry_proto::tonic::trace::v1::Span::decode(record.encode(&context(TraceState::default()), "busy", 20).as_slice()).expect("valid");
        assert_eq!((span.events.len(), span.dropped_events_count), (MAX_EVENTS as usize, 5));
        assert_eq!(span.events.last().map(|e| e.time_unix_nano), Some(u64::from(MAX_EVENTS - 1)));
    }

    #[test]
    fn an_empty_batch_is_still_a_valid_request() {
        let envelope = Envelope::new(&opentelemetry_sdk::Resource::builder_empty().build(), "corral", "0");
        let request = ExportTraceServiceRequest::decode(envelope.request(&[]).as_slice()).expect("valid");
        assert!(request.resource_spans[0].scope_spans[0].spans.is_empty());
    }

    #[test]
    fn kinds_are_named_case_insensitively() {
        assert_eq!(Kind::named("Server"), Some(Kind::Server));
        assert_eq!(Kind::named("consumer"), Some(Kind::Consumer));
        assert_eq!(Kind::named("sideways"), None);
    }
}
