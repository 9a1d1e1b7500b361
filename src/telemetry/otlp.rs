//! Spans in OTLP's protobuf form: one span encoded where it ends, and a batch of encoded spans
//! framed as one `ExportTraceServiceRequest`.
//!
//! A span is encoded on the thread that ends it, into one buffer, and only that buffer crosses
//! to the exporter's thread. Handing over the span's parts instead (its attribute strings, its
//! events) made every one of them an allocation freed on another thread, which defeats the
//! allocator's per-thread caches: measured, the SDK's `SpanData` path cost more on the request
//! path and on the exporter's thread together than the call it traced. The messages are
//! `opentelemetry-proto`'s (the official definitions) and prost encodes them; a batch is framed
//! from the spans' bytes with prost's own field encoders, since a repeated field's encoding is the
//! concatenation of its items.

use opentelemetry::trace::SpanContext;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message as _;

/// An attribute's value, as a span records it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Value {
    fn into_proto(self) -> AnyValue {
        let value = match self {
            Value::Str(s) => any_value::Value::StringValue(s),
            Value::Int(i) => any_value::Value::IntValue(i),
            Value::Float(f) => any_value::Value::DoubleValue(f),
            Value::Bool(b) => any_value::Value::BoolValue(b),
        };
        AnyValue { value: Some(value) }
    }
}

/// Attributes by name: the names are the `tracing` fields', which live as long as the program.
pub type Attributes = Vec<(&'static str, Value)>;

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

/// Something that happened during a span (a host call, a warning).
#[derive(Debug)]
pub struct Event {
    pub time_unix_nano: u64,
    pub name: String,
    pub attributes: Attributes,
}

/// A span that ended, as it is exported.
#[derive(Debug)]
pub struct Ended {
    pub context: SpanContext,
    /// The parent's span id, and whether the parent is another process's.
    pub parent: Option<(opentelemetry::trace::SpanId, bool)>,
    pub name: String,
    pub kind: Kind,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Attributes,
    pub events: Vec<Event>,
    /// `Some(description)` when the span failed.
    pub error: Option<String>,
}

/// `flags`' bits saying that the span's parent's remoteness is known, and that it is remote.
const CONTEXT_HAS_IS_REMOTE: u32 = 0x100;
const CONTEXT_IS_REMOTE: u32 = 0x200;

impl Ended {
    /// The span as one `Span` message, encoded.
    pub fn encode(self) -> Vec<u8> {
        let remote = self.parent.is_some_and(|(_, remote)| remote);
        let span = Span {
            trace_id: self.context.trace_id().to_bytes().to_vec(),
            span_id: self.context.span_id().to_bytes().to_vec(),
            trace_state: self.context.trace_state().header(),
            parent_span_id: self.parent.map(|(id, _)| id.to_bytes().to_vec()).unwrap_or_default(),
            flags: u32::from(self.context.trace_flags().to_u8()) | CONTEXT_HAS_IS_REMOTE | if remote { CONTEXT_IS_REMOTE } else { 0 },
            name: self.name,
            kind: self.kind.proto() as i32,
            start_time_unix_nano: self.start_unix_nano,
            end_time_unix_nano: self.end_unix_nano,
            attributes: key_values(self.attributes),
            events: self
                .events
                .into_iter()
                .map(|event| span::Event {
                    time_unix_nano: event.time_unix_nano,
                    name: event.name,
                    attributes: key_values(event.attributes),
                    dropped_attributes_count: 0,
                })
                .collect(),
            status: self.error.map(|message| Status { message, code: status::StatusCode::Error as i32 }),
            ..Span::default()
        };
        span.encode_to_vec()
    }
}

fn key_values(attributes: Attributes) -> Vec<KeyValue> {
    attributes.into_iter().map(|(key, value)| KeyValue { key: key.to_owned(), value: Some(value.into_proto()), key_strindex: 0 }).collect()
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

    fn ended(name: &str, attributes: Attributes) -> Ended {
        let context = SpanContext::new(TraceId::from(7u128), SpanId::from(9u64), TraceFlags::SAMPLED, false, TraceState::default());
        Ended {
            context,
            parent: Some((SpanId::from(3u64), true)),
            name: name.to_owned(),
            kind: Kind::Server,
            start_unix_nano: 10,
            end_unix_nano: 20,
            attributes,
            events: vec![Event { time_unix_nano: 15, name: "asked".into(), attributes: vec![("corral.host_call", Value::Str("ask".into()))] }],
            error: Some("broke".into()),
        }
    }

    #[test]
    fn a_framed_batch_decodes_as_the_official_request() {
        let resource = opentelemetry_sdk::Resource::builder_empty().with_service_name("corral-test").build();
        let envelope = Envelope::new(&resource, "corral", "1.2.3");
        let spans =
            [ended("tools/call echo", vec![("gen_ai.tool.name", Value::Str("echo".into())), ("corral.fuel_consumed", Value::Int(42))]), ended("other", vec![])];
        let request = ExportTraceServiceRequest::decode(envelope.request(&spans.map(Ended::encode)).as_slice()).expect("a valid request");

        let [resource_spans] = request.resource_spans.as_slice() else { panic!("one resource: {request:?}") };
        let service = &resource_spans.resource.as_ref().unwrap().attributes;
        assert!(service.iter().any(|kv| kv.key == "service.name" && kv.value == Some(Value::Str("corral-test".into()).into_proto())), "{service:?}");
        let [scope_spans] = resource_spans.scope_spans.as_slice() else { panic!("one scope") };
        assert_eq!(scope_spans.scope.as_ref().map(|s| (s.name.as_str(), s.version.as_str())), Some(("corral", "1.2.3")));
        let [call, other] = scope_spans.spans.as_slice() else { panic!("two spans") };
        assert_eq!((call.name.as_str(), other.name.as_str()), ("tools/call echo", "other"));
        assert_eq!(call.trace_id, 7u128.to_be_bytes());
        assert_eq!((call.span_id.as_slice(), call.parent_span_id.as_slice()), (&9u64.to_be_bytes()[..], &3u64.to_be_bytes()[..]));
        assert_eq!((call.kind, call.start_time_unix_nano, call.end_time_unix_nano), (span::SpanKind::Server as i32, 10, 20));
        assert_eq!(call.flags, 0x301);
        assert_eq!(call.attributes[1].value, Some(AnyValue { value: Some(any_value::Value::IntValue(42)) }));
        assert_eq!(call.events[0].name, "asked");
        assert_eq!(call.status.as_ref().map(|s| (s.code, s.message.as_str())), Some((status::StatusCode::Error as i32, "broke")));
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
