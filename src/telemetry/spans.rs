//! The `tracing` layer that turns the host's spans into OTLP spans.
//!
//! A span of the host's trace target gets a trace context when it starts (its parent's trace,
//! or its caller's, or a new one) and, when sampled, a record of its fields and events; when it
//! closes, the record is encoded ([`super::otlp`]) and handed to the exporter's queue
//! ([`super::export::Sink`]). Fields follow tracing-opentelemetry's conventions, which the
//! span constructors in [`super::trace`] use: `otel.name`, `otel.kind`, `otel.status_code`,
//! `otel.status_description`, and `otel.parent` (a caller's context, as a task stores it); every
//! other field is an attribute.
//!
//! The record lives in the span's registry extensions, so reading a span's context
//! ([`context_of`]) needs no global state of ours.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, TraceFlags, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tracing::field::{Field, Visit};
use tracing::span::{self, Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::{LookupSpan, Registry};
use tracing_subscriber::Layer;

use super::context::Carrier;
use super::export::Sink;
use super::otlp::{self, Kind, Record, Value};
use super::sampling::Sampling;

/// The layer: where ended spans go, and which are kept.
pub struct SpanLayer {
    sink: Sink,
    sampling: Sampling,
    ids: RandomIdGenerator,
}

impl SpanLayer {
    pub fn new(sink: Sink, sampling: Sampling) -> SpanLayer {
        SpanLayer { sink, sampling, ids: RandomIdGenerator::default() }
    }
}

/// What a span carries while it is open: its context, and what it will export if sampled.
struct Traced {
    context: SpanContext,
    record: Option<Record>,
}

impl<S> Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        // Recorded before the sampling decision, which needs `otel.parent`; one pass over the
        // fields either way, and a span that is not kept drops its record unread.
        let mut record = Record::new(now_unix_nano(), attrs.fields().len());
        let mut fields = SpanFields { record: &mut record, parent: None };
        attrs.record(&mut fields);
        let remote = fields.parent.take().and_then(|stored| Carrier::from_stored(&stored)).map(|carrier| carrier.span_context());
        let local = match &remote {
            Some(_) => None,
            None => span.parent().and_then(|parent| parent.extensions().get::<Traced>().map(|traced| traced.context.clone())),
        };
        let (trace_id, sampled, state, parent) = match (&remote, &local) {
            (Some(caller), _) => {
                (caller.trace_id(), self.sampling.sampled(Some(caller), caller.trace_id()), caller.trace_state().clone(), Some((caller.span_id(), true)))
            }
            (None, Some(parent)) => (parent.trace_id(), parent.is_sampled(), parent.trace_state().clone(), Some((parent.span_id(), false))),
            (None, None) => {
                let trace_id = self.ids.new_trace_id();
                (trace_id, self.sampling.sampled(None, trace_id), TraceState::default(), None)
            }
        };
        let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
        let context = SpanContext::new(trace_id, self.ids.new_span_id(), flags, false, state);
        record.parent = parent;
        span.extensions_mut().insert(Traced { context, record: sampled.then_some(record) });
    }

    fn on_record(&self, id: &Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(record) = extensions.get_mut::<Traced>().and_then(|traced| traced.record.as_mut()) else { return };
        values.record(&mut SpanFields { record, parent: None });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else { return };
        let mut extensions = span.extensions_mut();
        let Some(record) = extensions.get_mut::<Traced>().and_then(|traced| traced.record.as_mut()) else { return };
        let mut fields = EventFields::default();
        event.record(&mut fields);
        let level = *event.metadata().level();
        otlp::event_attribute("level", Value::Str(level.as_str()), &mut fields.attributes);
        let name = fields.message.unwrap_or_else(|| event.metadata().name().to_owned());
        if level == Level::ERROR && !record.failed {
            // An error inside a span fails it, as tracing-opentelemetry does, unless the span
            // said otherwise itself.
            record.failed = true;
            record.description.get_or_insert_with(|| name.clone());
        }
        record.event(now_unix_nano(), &name, &fields.attributes);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(Traced { context, record: Some(record) }) = span.extensions_mut().remove::<Traced>() else { return };
        self.sink.send(record.encode(&context, span.name(), now_unix_nano()));
    }
}

/// The trace context of `span` (or of its nearest traced ancestor), when traces are exported.
pub fn context_of(span: &tracing::Span) -> Option<SpanContext> {
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let span = registry.span(id)?;
        span.scope().find_map(|span| span.extensions().get::<Traced>().map(|traced| traced.context.clone()))
    })
    .flatten()
}

fn now_unix_nano() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

thread_local! {
    /// Where a field recorded with `%` or `?` is written before it is encoded: one buffer per
    /// thread instead of a string per field.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `value` as text, handed to `f`.
fn formatted(value: &dyn std::fmt::Debug, f: impl FnOnce(&str)) {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut text) => {
            text.clear();
            let _ = write!(text, "{value:?}");
            f(&text);
        }
        // Formatting the value recorded another field on this thread.
        Err(_) => f(&format!("{value:?}")),
    })
}

/// A span's fields, into its record: the `otel.*` ones into what OTLP keeps apart, the others
/// as attributes; `otel.parent` (a caller's stored context) aside for the sampling decision.
struct SpanFields<'r> {
    record: &'r mut Record,
    parent: Option<String>,
}

impl SpanFields<'_> {
    fn text(&mut self, field: &Field, text: &str) {
        match field.name() {
            "otel.name" => self.record.name = Some(text.to_owned()),
            "otel.kind" => self.record.kind = Kind::named(text).unwrap_or(self.record.kind),
            "otel.status_code" => self.record.failed = text.eq_ignore_ascii_case("error"),
            "otel.status_description" => self.record.description = Some(text.to_owned()),
            "otel.parent" => self.parent = Some(text.to_owned()),
            name => self.record.attribute(name, Value::Str(text)),
        }
    }
}

impl Visit for SpanFields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        formatted(value, |text| self.text(field, text));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record.attribute(field.name(), Value::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        // OTLP has no unsigned integer; one beyond i64 is exported as text rather than wrapped.
        match i64::try_from(value) {
            Ok(value) => self.record.attribute(field.name(), Value::Int(value)),
            Err(_) => self.record.attribute(field.name(), Value::Str(&value.to_string())),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.record.attribute(field.name(), Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.record.attribute(field.name(), Value::Bool(value));
    }
}

/// An event's fields: its message (the event's name in OTLP) and its other fields, encoded.
#[derive(Default)]
struct EventFields {
    message: Option<String>,
    attributes: Vec<u8>,
}

impl EventFields {
    fn value(&mut self, field: &Field, value: Value<'_>) {
        match (field.name(), value) {
            ("message", Value::Str(text)) => self.message = Some(text.to_owned()),
            (name, value) => otlp::event_attribute(name, value, &mut self.attributes),
        }
    }
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.value(field, Value::Str(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        formatted(value, |text| self.value(field, Value::Str(text)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.value(field, Value::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(value) => self.value(field, Value::Int(value)),
            Err(_) => self.value(field, Value::Str(&value.to_string())),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.value(field, Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.value(field, Value::Bool(value));
    }
}
