//! The host's log lines on stderr: `text` for people, `json` for collectors, and in JSON the id
//! of the trace an event happened in, so that one id leads from a log line to its trace.

use std::fmt;

use tracing::Subscriber;
use tracing_subscriber::filter::{FilterExt, LevelFilter};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::Layer;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// How the host's own log is written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields.message` and the event's fields,
    /// and `trace_id` when the event happened inside a traced request.
    Json,
}

/// The log layer: events at `level` (unless `RUST_LOG` says otherwise) written in `format`.
/// It never sees the host's trace spans (they are for the exporter), so a line reads the same
/// whether traces are exported or not.
pub fn layer<S>(level: &str, format: LogFormat) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level_directives(level)));
    // Its hint leaves the level to `filter`'s: without one, the layers' joint hint would be
    // "everything", and each `log` record of a dependency below the level (wasmtime, hyper)
    // would be turned into an event only to be refused.
    let events = tracing_subscriber::filter::filter_fn(|metadata| !super::trace::is_host_span(metadata)).with_max_level_hint(LevelFilter::TRACE);
    let log = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false);
    match format {
        LogFormat::Text => log.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).with_filter(filter.and(events)).boxed(),
        // One object a line, nothing but JSON: a collector parses every line.
        LogFormat::Json => {
            // `json()` for its field formatter; the line itself is `WithTraceId`'s.
            let line = Format::default().json().with_ansi(false).with_current_span(false).with_span_list(false);
            log.json().event_format(WithTraceId(line)).with_filter(filter.and(events)).boxed()
        }
    }
}

/// `--log-level`'s directives. wasmtime-wasi's own debug lines hold the bytes a guest writes
/// to its stdout and stderr before the host's redaction of the call's secrets sees them, so
/// however verbose the host's log, they stay out of it (only `RUST_LOG` can ask for them).
fn level_directives(level: &str) -> String {
    match level.trim().parse::<LevelFilter>() {
        Ok(parsed) if parsed > LevelFilter::INFO => format!("{level},wasmtime_wasi=info"),
        _ => level.to_owned(),
    }
}

/// The JSON format with the current trace's id first, when there is one.
struct WithTraceId(Format<Json>);

impl<S, N> FormatEvent<S, N> for WithTraceId
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &tracing::Event<'_>) -> fmt::Result {
        let Some(trace_id) = super::trace::current_trace_id() else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) if !rest.starts_with('}') => write!(writer, "{{\"trace_id\":\"{trace_id}\",{rest}"),
            _ => writer.write_str(&line),
        }
    }
}
