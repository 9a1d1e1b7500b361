//! The host's own telemetry: its log lines ([`logs`]) and its traces ([`trace`], exported by
//! [`export`]).
//!
//! Traces are configured only by the standard OpenTelemetry variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, …): with neither endpoint
//! set nothing is exported, and the spans the host would make are disabled where they are made
//! (one cached check per call site), so tracing off costs nothing measurable. The host's spans are
//! `tracing` spans of the [`trace::TARGET`] target, which only the span layer ([`spans`]) sees:
//! the log lines stay as they were, and gain a `trace_id` (JSON) inside a traced request.
//!
//! The path from a span to the collector is kept short because tracing on is priced per call:
//! the layer keeps a span's fields in its registry entry and encodes the span in OTLP's protobuf
//! form ([`otlp`]) when it ends; the exporter ([`export`]) frames queued spans into requests on
//! its own thread. The SDK's span pipeline (tracing-opentelemetry, `SpanData`, the OTLP
//! exporter's conversion) cost 60 k instructions for a call of 135 k, most of it allocations
//! freed on another thread; this path keeps the SDK's parts that decide (the W3C propagator, the
//! sampler, the id generator, the resource detectors) and the official protobuf messages.
//!
//! A leaf: it knows neither MCP nor the task store; the rooms that make spans name what they carry.

mod context;
pub mod export;
pub mod logs;
mod otlp;
mod sampling;
mod spans;
mod switch;
pub mod trace;
mod vars;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

pub use logs::LogFormat;
pub use switch::enabled;

/// What [`init`] started; dropping it flushes the spans still queued (bounded by the exporter's
/// timeout) and stops the exporter's thread.
#[must_use = "dropping it stops the trace exporter"]
pub struct Telemetry {
    exporter: Option<export::Exporter>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(exporter) = self.exporter.take() {
            exporter.shutdown();
        }
    }
}

/// Starts the log lines at `level` (unless `RUST_LOG` says otherwise) in `format`, and the trace
/// exporter when the environment configures one. Called once, inside the tokio runtime (the gRPC
/// exporter binds to it). A trace configuration that cannot work (an unknown protocol, a bad
/// endpoint) is an error naming the variable: better refused at start than silently dropped.
pub fn init(level: &str, format: LogFormat) -> anyhow::Result<Telemetry> {
    let exporter = export::Exporter::from_env()?;
    let spans = exporter.as_ref().map(|exporter| spans::SpanLayer::new(exporter.sink(), exporter.sampling()).with_filter(trace::only_host_spans()));
    switch::set(exporter.is_some());
    tracing_subscriber::registry().with(logs::layer(level, format)).with(spans).init();
    if let Some(exporter) = &exporter {
        tracing::info!(endpoint = %exporter.endpoint(), protocol = exporter.protocol(), "exporting traces over OTLP");
    }
    Ok(Telemetry { exporter })
}
