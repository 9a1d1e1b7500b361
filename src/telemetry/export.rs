//! The OTLP exporter, configured by the standard OpenTelemetry variables and nothing else.
//!
//! Spans are batched off the request path: a span that ends is encoded where it ends and goes
//! into a bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, default 2048); the exporter's own thread
//! sends what is queued at least every `OTEL_BSP_SCHEDULE_DELAY` (5 s) and whenever
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512) spans wait, in requests of at most that many. The
//! queue is a vector under a lock, and the thread is woken only when a batch is full: a channel
//! woke it for every span, which cost a traced call more than encoding its span. A dead or slow collector therefore
//! never slows a call: the queue fills and later spans are dropped, and every span that was
//! dropped (a full queue, a failed export) is counted in `/metrics`.
//!
//! OTLP over HTTP/protobuf goes through reqwest, over gRPC through tonic with the official
//! service definition (`opentelemetry-proto`); both on a runtime of the exporter's thread, so
//! that a slow export never takes a worker from the host's own runtime.

use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context as _};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prometheus_client::metrics::counter::Counter;
use prost::Message as _;
use tokio::sync::{oneshot, Notify};

use super::otlp::Envelope;
use super::sampling::Sampling;
use super::vars::Vars;

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

/// Where ended spans go: the exporter's queue. Sending never waits; a span that finds the
/// queue full is dropped and counted.
#[derive(Clone, Debug)]
pub struct Sink {
    queue: Arc<Queue>,
}

#[derive(Debug)]
struct Queue {
    spans: Mutex<Vec<Vec<u8>>>,
    /// Spans the queue holds at most.
    capacity: usize,
    /// Spans that make a batch: the exporter is woken when that many wait.
    batch: usize,
    full_batch: Notify,
}

impl Sink {
    /// Queues one encoded span.
    pub fn send(&self, span: Vec<u8>) {
        let queue = &self.queue;
        let mut spans = queue.spans.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if spans.len() >= queue.capacity {
            drop(spans);
            span_counts().dropped.inc();
            return;
        }
        spans.push(span);
        let wake = spans.len() == queue.batch;
        drop(spans);
        if wake {
            queue.full_batch.notify_one();
        }
    }
}

impl Queue {
    /// Everything queued, leaving the queue empty.
    fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.spans.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

/// How spans reach the collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    HttpProtobuf,
    Grpc,
}

/// What the OTEL_* variables configure.
struct Settings {
    protocol: Protocol,
    endpoint: String,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    timeout: Duration,
    queue: usize,
    delay: Duration,
    batch: usize,
    sampling: Sampling,
}

/// The configured exporter: its queue, its thread, and where it sends.
pub struct Exporter {
    sink: Sink,
    sampling: Sampling,
    stop: Option<oneshot::Sender<()>>,
    stopped: std_mpsc::Receiver<()>,
    timeout: Duration,
    endpoint: String,
    protocol: &'static str,
}

impl Exporter {
    /// The exporter the environment asks for, started, or `None` when no OTLP endpoint is set
    /// (or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`).
    pub fn from_env() -> anyhow::Result<Option<Exporter>> {
        let Some(settings) = Settings::read(&Vars::env())? else { return Ok(None) };
        // The HTTP and gRPC clients speak TLS through rustls, whose provider the process picks
        // once (ring, as for OCI and OAuth); whoever builds a client first installs it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let envelope = Envelope::new(&resource(), "corral", env!("CARGO_PKG_VERSION"));
        let queue = Arc::new(Queue { spans: Mutex::new(Vec::new()), capacity: settings.queue, batch: settings.batch, full_batch: Notify::new() });
        let spans = queue.clone();
        let (stop, stop_asked) = oneshot::channel();
        let (stopped_tx, stopped) = std_mpsc::channel();
        let protocol = match settings.protocol {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        };
        let endpoint = safe_to_show(&settings.endpoint);
        let timeout = settings.timeout;
        let sampling = settings.sampling.clone();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the trace exporter's runtime")?;
        std::thread::Builder::new()
            .name("corral-otlp".into())
            .spawn(move || {
                runtime.block_on(run(settings, envelope, spans, stop_asked));
                let _ = stopped_tx.send(());
            })
            .context("starting the trace exporter's thread")?;
        Ok(Some(Exporter { sink: Sink { queue }, sampling, stop: Some(stop), stopped, timeout, endpoint, protocol }))
    }

    /// Where the host's spans go.
    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Which traces are kept.
    pub fn sampling(&self) -> Sampling {
        self.sampling.clone()
    }

    /// Where spans go (scheme, host and port: never credentials in the URL).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `http/protobuf` or `grpc`.
    pub fn protocol(&self) -> &'static str {
        self.protocol
    }

    /// Exports what is still queued (for at most 5 s) and stops.
    pub fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // At most 5 s: a collector that does not answer must not hold the process's exit for
        // the whole export timeout.
        if self.stopped.recv_timeout((self.timeout + Duration::from_secs(1)).min(Duration::from_secs(5))).is_err() {
            tracing::warn!("the trace exporter did not finish its last export in time; its spans are lost");
        }
    }
}

impl Settings {
    fn read(vars: &Vars<'_>) -> anyhow::Result<Option<Settings>> {
        let var = |name: &str| vars.get(name);
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v == "none") {
            return Ok(None);
        }
        let (traces, generic) = (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT"));
        if traces.is_none() && generic.is_none() {
            return Ok(None);
        }
        let endpoint_var = if traces.is_some() { "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" } else { "OTEL_EXPORTER_OTLP_ENDPOINT" };
        let (protocol_var, protocol) = vars.signal_or_generic("PROTOCOL");
        let protocol = match protocol.as_deref().unwrap_or("http/protobuf") {
            "http/protobuf" => Protocol::HttpProtobuf,
            "grpc" => Protocol::Grpc,
            other => bail!("{protocol_var}={other}: corral exports traces over `http/protobuf` or `grpc`"),
        };
        let endpoint = match (protocol, traces) {
            // The signal's own endpoint is used as written; the generic one gets `/v1/traces`.
            (Protocol::HttpProtobuf, Some(traces)) => traces,
            (Protocol::HttpProtobuf, None) => format!("{}/v1/traces", generic.unwrap_or_default().trim_end_matches('/')),
            (Protocol::Grpc, traces) => traces.or(generic).unwrap_or_default(),
        };
        match endpoint.parse::<http::Uri>() {
            Ok(uri) if uri.scheme_str() == Some("http") || (uri.scheme_str() == Some("https") && protocol == Protocol::HttpProtobuf) => {}
            Ok(uri) if uri.scheme_str() == Some("https") => {
                bail!("{endpoint_var}: corral's gRPC exporter speaks plain HTTP/2; for a collector behind TLS use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
            }
            _ => bail!("{endpoint_var}: {} is not an http:// or https:// URL", safe_to_show(&endpoint)),
        }
        let queue = vars.number("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?.max(1);
        let timeout = Duration::from_millis(match vars.signal_or_generic("TIMEOUT") {
            (name, Some(value)) => value.parse().map_err(|_| anyhow::anyhow!("{name}={value}: the timeout is a number of milliseconds"))?,
            (_, None) => 10_000,
        })
        .min(Duration::from_millis(vars.number("OTEL_BSP_EXPORT_TIMEOUT", 30_000)? as u64));
        Ok(Some(Settings {
            protocol,
            endpoint,
            headers: headers(vars)?,
            timeout,
            queue,
            delay: Duration::from_millis(vars.number("OTEL_BSP_SCHEDULE_DELAY", 5_000)?.max(1) as u64),
            batch: vars.number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.clamp(1, queue),
            sampling: Sampling::read(vars)?,
        }))
    }
}

/// The headers of every export: `key1=value1,key2=value2`, values percent-decoded. They often
/// hold a collector's credentials, so an error names the header and never shows a value.
fn headers(vars: &Vars<'_>) -> anyhow::Result<Vec<(http::HeaderName, http::HeaderValue)>> {
    let (name, Some(list)) = vars.signal_or_generic("HEADERS") else { return Ok(Vec::new()) };
    let mut headers = Vec::new();
    for pair in list.split(',').map(str::trim).filter(|pair| !pair.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else { bail!("{name}: an entry without `=` (the form is key1=value1,key2=value2)") };
        let key = key.trim();
        let header = http::HeaderName::try_from(key).map_err(|_| anyhow::anyhow!("{name}: `{key}` is not a header name"))?;
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| anyhow::anyhow!("{name}: the value of `{key}` is not UTF-8 once decoded"))?;
        let value = http::HeaderValue::try_from(value.as_ref()).map_err(|_| anyhow::anyhow!("{name}: the value of `{key}` is not a valid header value"))?;
        headers.push((header, value));
    }
    Ok(headers)
}

/// `service.name` is `corral` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` says
/// otherwise; the variables' attributes are read by the SDK's detectors.
fn resource() -> opentelemetry_sdk::Resource {
    let named =
        std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty()) || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = opentelemetry_sdk::Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
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

/// The exporter's thread: sends what is queued whenever a batch is full or the delay has
/// passed, until asked to stop; then sends what is left.
async fn run(settings: Settings, envelope: Envelope, queue: Arc<Queue>, mut stop: oneshot::Receiver<()>) {
    let mut client = match Client::new(&settings) {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!("the trace exporter cannot start, so no span will be exported: {e:#}");
            // Nothing will drain the queue: it stays full, and every span is counted dropped.
            let _ = stop.await;
            span_counts().dropped.inc_by(queue.take().len() as u64);
            return;
        }
    };
    let mut ticks = tokio::time::interval(settings.delay);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stopping = tokio::select! {
            _ = queue.full_batch.notified() => false,
            _ = ticks.tick() => false,
            _ = &mut stop => true,
        };
        let spans = queue.take();
        for batch in spans.chunks(settings.batch) {
            client.export(&envelope, batch).await;
        }
        if stopping {
            return;
        }
    }
}

/// A client of the collector, for one protocol.
enum Client {
    Http { client: reqwest::Client, url: String, headers: http::HeaderMap },
    Grpc { client: TraceServiceClient<tonic::transport::Channel>, headers: tonic::metadata::MetadataMap, timeout: Duration },
}

impl Client {
    fn new(settings: &Settings) -> anyhow::Result<Client> {
        match settings.protocol {
            Protocol::HttpProtobuf => {
                let mut headers: http::HeaderMap = settings.headers.iter().cloned().collect();
                headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-protobuf"));
                let client = reqwest::Client::builder().timeout(settings.timeout).build()?;
                Ok(Client::Http { client, url: settings.endpoint.clone(), headers })
            }
            Protocol::Grpc => {
                let channel = tonic::transport::Endpoint::from_shared(settings.endpoint.clone())?.timeout(settings.timeout).connect_lazy();
                let headers = tonic::metadata::MetadataMap::from_headers(settings.headers.iter().cloned().collect());
                Ok(Client::Grpc { client: TraceServiceClient::new(channel), headers, timeout: settings.timeout })
            }
        }
    }

    /// Sends `batch`, counting its spans as exported or dropped.
    async fn export(&mut self, envelope: &Envelope, batch: &[Vec<u8>]) {
        let spans = batch.len() as u64;
        let body = envelope.request(batch);
        let sent = match self {
            Client::Http { client, url, headers } => match client.post(url.as_str()).headers(headers.clone()).body(body).send().await {
                Ok(response) if response.status().is_success() => Ok(()),
                Ok(response) => Err(format!("the collector answered {}", response.status())),
                Err(e) => Err(e.without_url().to_string()),
            },
            Client::Grpc { client, headers, timeout } => match ExportTraceServiceRequest::decode(body.as_slice()) {
                Ok(request) => {
                    let mut request = tonic::Request::new(request);
                    *request.metadata_mut() = headers.clone();
                    request.set_timeout(*timeout);
                    client.export(request).await.map(drop).map_err(|status| format!("the collector answered {:?}: {}", status.code(), status.message()))
                }
                Err(e) => Err(format!("a batch did not decode: {e}")),
            },
        };
        match sent {
            Ok(()) => {
                span_counts().exported.inc_by(spans);
            }
            Err(why) => {
                span_counts().dropped.inc_by(spans);
                tracing::debug!("exporting {spans} spans failed: {why}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> anyhow::Result<Option<Settings>> {
        let table: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let lookup = move |name: &str| table.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Settings::read(&Vars::from(&lookup))
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        match read(pairs) {
            Err(e) => format!("{e:#}"),
            Ok(_) => panic!("{pairs:?} was accepted"),
        }
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint_or_when_disabled() {
        assert!(read(&[]).unwrap().is_none());
        assert!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")]).unwrap().is_none(), "an empty value is unset");
        for off in [("OTEL_SDK_DISABLED", "TRUE"), ("OTEL_TRACES_EXPORTER", "none")] {
            assert!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), off]).unwrap().is_none(), "{off:?}");
        }
    }

    #[test]
    fn endpoints_protocols_and_limits_are_read_as_the_specification_says() {
        let generic = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]).unwrap().unwrap();
        assert_eq!((generic.protocol, generic.endpoint.as_str()), (Protocol::HttpProtobuf, "http://collector:4318/v1/traces"));
        assert_eq!((generic.timeout, generic.queue, generic.batch, generic.delay), (Duration::from_secs(10), 2048, 512, Duration::from_secs(5)));
        let signal = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/custom")]).unwrap().unwrap();
        assert_eq!(signal.endpoint, "https://b/custom", "the signal's endpoint is used as written");
        let grpc = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"), ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")]).unwrap().unwrap();
        assert_eq!((grpc.protocol, grpc.endpoint.as_str()), (Protocol::Grpc, "http://a:4317"));
        let bounded = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "100"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "600000"),
            ("OTEL_BSP_EXPORT_TIMEOUT", "2000"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            (bounded.queue, bounded.batch, bounded.timeout),
            (16, 16, Duration::from_secs(2)),
            "a batch is at most the queue; an export at most the BSP timeout"
        );
    }

    #[test]
    fn headers_are_percent_decoded_and_an_error_names_the_header_never_its_value() {
        let settings = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"), ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team%20a, authorization = Bearer%20k1 ,")])
            .unwrap()
            .unwrap();
        let headers: Vec<(&str, &str)> = settings.headers.iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(headers, [("x-tenant", "team a"), ("authorization", "Bearer k1")]);

        let bad = error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"), ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Bearer%0Asecret-token")]);
        assert!(bad.contains("OTEL_EXPORTER_OTLP_TRACES_HEADERS") && bad.contains("`authorization`") && !bad.contains("secret-token"), "{bad}");
        let unpaired = error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"), ("OTEL_EXPORTER_OTLP_HEADERS", "secret-token")]);
        assert!(unpaired.contains("without `=`") && !unpaired.contains("secret-token"), "{unpaired}");
    }

    #[test]
    fn a_configuration_that_cannot_work_is_refused_naming_its_variable() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a");
        for (pairs, expected) in [
            (vec![endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")], "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "https://a:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")], "plain HTTP/2"),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://a")], "OTEL_EXPORTER_OTLP_ENDPOINT: ftp://a is not an http:// or https:// URL"),
            (vec![endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "lots")], "OTEL_BSP_MAX_QUEUE_SIZE=lots: not a number"),
            (vec![endpoint, ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")], "OTEL_EXPORTER_OTLP_TIMEOUT=10s"),
            (vec![endpoint, ("OTEL_TRACES_SAMPLER", "jaeger_remote")], "OTEL_TRACES_SAMPLER=jaeger_remote"),
            (vec![endpoint, ("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "2")], "OTEL_TRACES_SAMPLER_ARG=2"),
        ] {
            let message = error(&pairs);
            assert!(message.contains(expected), "{pairs:?}: {message}");
        }
    }
}
