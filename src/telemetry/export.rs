//! The OTLP exporter, configured by the standard OpenTelemetry variables and nothing else.
//!
//! Spans are batched off the request path: a span that ends goes into the batch processor's
//! bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, default 2048), and the processor's own thread
//! exports it (`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`). A dead or slow
//! collector therefore never slows a call: the queue fills and later spans are dropped, and
//! every span that was dropped (a full queue, a failed export) is counted in `/metrics`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::bail;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::Context;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use prometheus_client::metrics::counter::Counter;
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Spans exported, and spans dropped (the queue full, or their export failed): what
/// `/metrics` shows as `corral_trace_spans_exported_total` and `…_dropped_total`.
#[derive(Clone, Debug, Default)]
pub struct SpanCounts {
    /// Spans the collector took.
    pub exported: Counter,
    /// Spans that never reached it.
    pub dropped: Counter,
}

/// This process's span counts (zero while nothing is exported).
pub fn span_counts() -> &'static SpanCounts {
    static COUNTS: OnceLock<SpanCounts> = OnceLock::new();
    COUNTS.get_or_init(SpanCounts::default)
}

/// The configured exporter: its provider, and where it sends.
pub struct Exporter {
    provider: SdkTracerProvider,
    endpoint: String,
    protocol: &'static str,
}

impl Exporter {
    /// The exporter the environment asks for, or `None` when no OTLP endpoint is set (or
    /// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`).
    pub fn from_env() -> anyhow::Result<Option<Exporter>> {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v == "none") {
            return Ok(None);
        }
        let (traces, generic) = (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT"));
        if traces.is_none() && generic.is_none() {
            return Ok(None);
        }
        let (protocol_var, protocol) = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
            Some(p) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", p),
            None => ("OTEL_EXPORTER_OTLP_PROTOCOL", var("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_else(|| "http/protobuf".into())),
        };
        // The HTTP and gRPC clients speak TLS through rustls, whose provider the process picks
        // once (ring, as for OCI and OAuth); whoever builds a client first installs it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (exporter, protocol, endpoint) = match protocol.as_str() {
            "http/protobuf" => {
                // The signal's own endpoint is used as written; the generic one gets `/v1/traces`.
                let endpoint = traces.unwrap_or_else(|| format!("{}/v1/traces", generic.unwrap_or_default().trim_end_matches('/')));
                let exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_endpoint(endpoint.clone()).build()?;
                (exporter, "http/protobuf", endpoint)
            }
            "grpc" => {
                let endpoint = traces.or(generic).unwrap_or_default();
                let exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic().with_endpoint(endpoint.clone()).build()?;
                (exporter, "grpc", endpoint)
            }
            other => bail!("{protocol_var}={other}: corral exports traces over `http/protobuf` or `grpc`"),
        };
        let counts = span_counts().clone();
        let queue = var("OTEL_BSP_MAX_QUEUE_SIZE").and_then(|v| v.parse().ok()).unwrap_or(2048);
        let queued = Arc::new(AtomicUsize::new(0));
        let batches = BatchSpanProcessor::builder(Counted { inner: exporter, queued: queued.clone(), counts: counts.clone() }).build();
        let processor = Queued { inner: batches, queued, queue, counts };
        let provider = SdkTracerProvider::builder().with_resource(resource()).with_span_processor(processor).build();
        Ok(Some(Exporter { provider, endpoint: safe_to_show(&endpoint), protocol }))
    }

    /// The `tracing` layer that turns the host's spans into OpenTelemetry spans for this exporter.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("corral"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            // The host reads a span's context from the span (`OpenTelemetrySpanExt::context`),
            // never from OpenTelemetry's current context: activating it on every poll of a
            // traced future would cost for nothing.
            .with_context_activation(false)
    }

    /// Where spans go (scheme, host and port: never credentials in the URL).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `http/protobuf` or `grpc`.
    pub fn protocol(&self) -> &'static str {
        self.protocol
    }

    /// Exports what is still queued (bounded by the exporter's timeout) and stops.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            tracing::warn!("the trace exporter did not shut down cleanly: {e}");
        }
    }
}

/// `service.name` is `corral` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` says
/// otherwise; the variables' attributes are read by the SDK's detectors.
fn resource() -> Resource {
    let named =
        std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty()) || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named {
        builder.build()
    } else {
        builder.with_service_name("corral").build()
    }
}

/// `url` without user information, path or query: what a log line may show of it.
fn safe_to_show(url: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(uri) => format!("{}://{}{}", uri.scheme_str().unwrap_or("http"), uri.host().unwrap_or(""), uri.port().map(|p| format!(":{p}")).unwrap_or_default()),
        Err(_) => "(an endpoint that is not a URL)".into(),
    }
}

/// The batch processor, counting the spans its full queue turns away.
#[derive(Debug)]
struct Queued {
    inner: BatchSpanProcessor,
    /// Spans handed to the processor and not yet exported (or failed).
    queued: Arc<AtomicUsize>,
    queue: usize,
    counts: SpanCounts,
}

impl SpanProcessor for Queued {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.queued.fetch_add(1, Ordering::Relaxed) >= self.queue {
            // The processor drops it: its queue is full.
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.counts.dropped.inc();
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, counting what it delivered and what it failed to.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    queued: Arc<AtomicUsize>,
    counts: SpanCounts,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let sent = self.inner.export(batch).await;
        self.queued.fetch_sub(spans.min(self.queued.load(Ordering::Relaxed)), Ordering::Relaxed);
        match &sent {
            Ok(()) => {
                self.counts.exported.inc_by(spans as u64);
            }
            Err(e) => {
                self.counts.dropped.inc_by(spans as u64);
                tracing::debug!("exporting {spans} spans failed: {e}");
            }
        }
        sent
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
