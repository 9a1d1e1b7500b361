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

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::{LookupSpan, Registry};
use tracing_subscriber::Layer;

use super::export::Sink;
use super::otlp::{self, Kind, Value};
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
    detail: Option<Box<Detail>>,
}

/// A sampled span's record.
struct Detail {
    parent: Option<(SpanId, bool)>,
    name: Option<String>,
    kind: Kind,
    start_unix_nano: u64,
    attributes: otlp::Attributes,
    events: Vec<otlp::Event>,
    error: Option<String>,
    failed: bool,
}

impl<S> Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let remote = fields.parent.take().and_then(|stored| super::context::Carrier::from_stored(&stored)).map(|carrier| carrier.span_context());
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
        let detail = sampled.then(|| {
            let mut detail = Box::new(Detail {
                parent,
                name: None,
                kind: Kind::Internal,
                start_unix_nano: now_unix_nano(),
                attributes: Vec::with_capacity(attrs.fields().len()),
                events: Vec::new(),
                error: None,
                failed: false,
            });
            fields.apply(&mut detail);
            detail
        });
        span.extensions_mut().insert(Traced { context, detail });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(detail) = extensions.get_mut::<Traced>().and_then(|traced| traced.detail.as_mut()) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        fields.apply(detail);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else { return };
        let mut extensions = span.extensions_mut();
        let Some(detail) = extensions.get_mut::<Traced>().and_then(|traced| traced.detail.as_mut()) else { return };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let level = *event.metadata().level();
        let mut attributes = fields.attributes;
        attributes.push(("level", Value::Str(level.as_str().to_owned())));
        let name = fields.message.unwrap_or_else(|| event.metadata().name().to_owned());
        if level == Level::ERROR && !detail.failed {
            // An error inside a span fails it, as tracing-opentelemetry does, unless the span
            // said otherwise itself.
            detail.failed = true;
            detail.error.get_or_insert_with(|| name.clone());
        }
        detail.events.push(otlp::Event { time_unix_nano: now_unix_nano(), name, attributes });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(Traced { context, detail: Some(detail) }) = span.extensions_mut().remove::<Traced>() else { return };
        let detail = *detail;
        let ended = otlp::Ended {
            context,
            parent: detail.parent,
            name: detail.name.unwrap_or_else(|| span.name().to_owned()),
            kind: detail.kind,
            start_unix_nano: detail.start_unix_nano,
            end_unix_nano: now_unix_nano(),
            attributes: detail.attributes,
            events: detail.events,
            error: detail.failed.then(|| detail.error.unwrap_or_default()),
        };
        self.sink.send(ended.encode());
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

/// The fields of a span or an event, sorted into what OTLP keeps apart.
#[derive(Default)]
struct Fields {
    name: Option<String>,
    kind: Option<Kind>,
    status: Option<String>,
    description: Option<String>,
    parent: Option<String>,
    message: Option<String>,
    attributes: otlp::Attributes,
}

impl Fields {
    /// Puts these fields into a span's record: a field recorded again replaces its value.
    fn apply(self, detail: &mut Detail) {
        if let Some(name) = self.name {
            detail.name = Some(name);
        }
        if let Some(kind) = self.kind {
            detail.kind = kind;
        }
        if let Some(status) = self.status {
            detail.failed = status.eq_ignore_ascii_case("error");
        }
        if let Some(description) = self.description {
            detail.error = Some(description);
        }
        for (key, value) in self.attributes {
            match detail.attributes.iter_mut().find(|(known, _)| *known == key) {
                Some(slot) => slot.1 = value,
                None => detail.attributes.push((key, value)),
            }
        }
    }

    fn text(&mut self, field: &Field, text: String) {
        match field.name() {
            "otel.name" => self.name = Some(text),
            "otel.kind" => self.kind = Kind::named(&text),
            "otel.status_code" => self.status = Some(text),
            "otel.status_description" => self.description = Some(text),
            "otel.parent" => self.parent = Some(text),
            "message" => self.message = Some(text),
            name => self.attributes.push((name, Value::Str(text))),
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.text(field, format!("{value:?}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.attributes.push((field.name(), Value::Int(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        // OTLP has no unsigned integer; one beyond i64 is exported as text rather than wrapped.
        match i64::try_from(value) {
            Ok(value) => self.attributes.push((field.name(), Value::Int(value))),
            Err(_) => self.attributes.push((field.name(), Value::Str(value.to_string()))),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.attributes.push((field.name(), Value::Float(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attributes.push((field.name(), Value::Bool(value)));
    }
}
