//! Prometheus metrics: requests by protocol era and method, calls and errors by tool and kind,
//! call latency, fuel and peak memory by tool, the outbound connections calls made, tasks by
//! status and the task queue, audit records dropped, in the text exposition format; and the
//! per-tool figures typed ([`Metrics::tool_usage`]) for a console.
//!
//! Prometheus histograms cannot be read back, so the per-tool figures keep their own counts
//! beside them (`usage::ToolStats`, the same latency buckets).

use std::time::Duration;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub use super::usage::ToolUsage;
use super::usage::{ToolStats, LATENCY_BUCKETS};
use crate::audit::Audit;
use crate::runtime::{Totals, Usage};
use crate::tasks::Engine;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    /// `ok`, `tool-error` (the tool returned isError) or a corral error kind.
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// `2025-11-25` or `2026-07-28`: which wire the request came on.
    era: &'static str,
    /// A method of that era (unknown names are not counted, so clients cannot grow the set):
    /// one of a fixed list, so counting a request allocates nothing.
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectionLabels {
    tool: String,
    /// `tcp` or `http`.
    via: &'static str,
    /// `allowed` or `refused`, by the plugin's network grants.
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    commit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

/// The host's Prometheus registry and the metrics in it.
pub struct Metrics {
    registry: Registry,
    /// The process's figures, under the unprefixed names every client library uses.
    process: Registry,
    /// 1, labelled with the running build's version and commit.
    build: Family<BuildLabels, Gauge>,
    requests: Family<RequestLabels, Counter>,
    calls: Family<CallLabels, Counter>,
    /// Outbound connections calls' guests opened or tried, by tool, door and verdict.
    connections: Family<ConnectionLabels, Counter>,
    latency: Family<ToolLabel, Histogram>,
    tasks: Family<StatusLabel, Gauge>,
    queued: Gauge,
    running: Gauge,
    /// Task ends waiting for the store to answer again, and those dropped (see `tasks::pending`).
    ends_pending: Gauge,
    ends_dropped: Counter,
    /// Bytes of results kept by reference, read from the store at each scrape.
    result_bytes: Gauge,
    /// Fuel consumed and peak linear memory per call, by tool.
    fuel: Family<ToolLabel, Histogram>,
    memory: Family<ToolLabel, Histogram>,
    /// Audit records dropped (the writer could not keep up, or a write failed).
    audit_dropped: Counter,
    /// Admin tokens presented that were not one (a sign-in or a bearer token on the admin API).
    admin_sign_ins_refused: Counter,
    /// The per-tool figures, readable (see the module doc).
    stats: ToolStats,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("corral");
        let requests = Family::<RequestLabels, Counter>::default();
        let calls = Family::<CallLabels, Counter>::default();
        let latency = Family::<ToolLabel, Histogram>::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS));
        let tasks = Family::<StatusLabel, Gauge>::default();
        let (queued, running) = (Gauge::default(), Gauge::default());
        registry.register("requests", "Requests by protocol era and method", requests.clone());
        registry.register("tool_calls", "Tool calls by tool and outcome", calls.clone());
        let connections = Family::<ConnectionLabels, Counter>::default();
        registry.register("tool_connections", "Outbound connections (TCP or wasi:http) calls' guests made, by tool, door and verdict", connections.clone());
        registry.register("tool_call_seconds", "Time from a call's start to its result", latency.clone());
        registry.register("tasks", "Stored tasks by status", tasks.clone());
        registry.register("task_queue_depth", "Tasks admitted and waiting for a worker", queued.clone());
        registry.register("tasks_running", "Tasks running now", running.clone());
        let (ends_pending, ends_dropped) = (Gauge::default(), Counter::default());
        registry.register("task_ends_pending", "Ended tasks whose end waits for the task store to answer again", ends_pending.clone());
        registry.register("task_ends_dropped", "Task ends dropped because too many waited for the task store", ends_dropped.clone());
        let result_bytes = Gauge::default();
        registry.register("result_bytes_kept", "Bytes of large results kept by reference in the task store", result_bytes.clone());
        // About one unit per instruction: a thousand to some ten billion.
        let fuel = Family::<ToolLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(1_000.0, 4.0, 13)));
        // 64 KiB (one page) to 4 GiB.
        let memory = Family::<ToolLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(65_536.0, 2.0, 17)));
        registry.register("tool_fuel_consumed", "Fuel a call's guest consumed (about one unit per WebAssembly instruction)", fuel.clone());
        registry.register("tool_peak_memory_bytes", "The largest linear memory a call's guest held", memory.clone());
        let spans = crate::telemetry::export::span_counts();
        registry.register("trace_spans_exported", "Trace spans the OTLP collector took", spans.exported.clone());
        registry.register("trace_spans_dropped", "Trace spans dropped: the export queue was full or the collector failed", spans.dropped.clone());
        let audit_dropped = Counter::default();
        registry.register("audit_records_dropped", "Audit records dropped: the writer could not keep up, or a write failed", audit_dropped.clone());
        let build = Family::<BuildLabels, Gauge>::default();
        registry.register("build_info", "The running build: 1, labelled with its version and commit", build.clone());
        let mut process = Registry::default();
        process.register_collector(Box::new(super::process_metrics::ProcessCollector));
        let admin_sign_ins_refused = Counter::default();
        registry.register("admin_sign_ins_refused", "Admin tokens presented to the admin listener that were not one", admin_sign_ins_refused.clone());
        Metrics {
            registry,
            process,
            build,
            requests,
            calls,
            connections,
            latency,
            tasks,
            queued,
            running,
            ends_pending,
            ends_dropped,
            result_bytes,
            fuel,
            memory,
            audit_dropped,
            admin_sign_ins_refused,
            stats: ToolStats::default(),
        }
    }
}

impl Metrics {
    /// Records one request of a known `method`, on the wire of `era`.
    pub fn request(&self, era: &'static str, method: &'static str) {
        self.requests.get_or_create(&RequestLabels { era, method }).inc();
    }

    /// Records one finished call: its outcome (`ok`, `tool-error` or a failure kind), how
    /// long it took and what its guest consumed.
    pub fn call(&self, tool: &str, outcome: &str, took: Duration, usage: &Usage) {
        self.calls.get_or_create(&CallLabels { tool: tool.to_owned(), outcome: outcome.to_owned() }).inc();
        let label = ToolLabel { tool: tool.to_owned() };
        self.latency.get_or_create(&label).observe(took.as_secs_f64());
        let (fuel, memory) = (usage.fuel_consumed(), usage.peak_memory());
        // A call refused before its guest ran (invalid arguments) consumed nothing to show.
        if fuel > 0 || memory > 0 {
            self.fuel.get_or_create(&label).observe(fuel as f64);
            self.memory.get_or_create(&label).observe(memory as f64);
        }
        self.stats.record(tool, outcome, took, fuel, memory);
    }

    /// Counts the outbound connections one call's guest made.
    pub fn connections(&self, tool: &str, totals: &Totals) {
        for (door, allowed, n) in totals.each() {
            let labels = ConnectionLabels { tool: tool.to_owned(), via: door.as_str(), verdict: if allowed { "allowed" } else { "refused" } };
            self.connections.get_or_create(&labels).inc_by(n);
        }
    }

    /// Names the running build in `corral_build_info`.
    pub fn set_build(&self, version: &str, commit: &str) {
        self.build.get_or_create(&BuildLabels { version: version.to_owned(), commit: commit.to_owned() }).set(1);
    }

    /// Counts an admin token presented that was not one.
    pub fn admin_sign_in_refused(&self) {
        self.admin_sign_ins_refused.inc();
    }

    /// Each tool's figures so far, in tool name order.
    pub fn tool_usage(&self) -> Vec<ToolUsage> {
        self.stats.snapshot()
    }

    /// The exposition text, with task figures read now (the counts by status from the store,
    /// asynchronously: a scrape never holds the thread that serves clients).
    pub async fn render(&self, engine: &Engine, audit: &Audit) -> String {
        self.audit_dropped.inc_by(audit.dropped().saturating_sub(self.audit_dropped.get()));
        let counts = engine.counts();
        self.queued.set(counts.queued as i64);
        self.running.set(counts.running as i64);
        let (pending, dropped) = engine.pending_ends();
        self.ends_pending.set(pending as i64);
        self.ends_dropped.inc_by(dropped.saturating_sub(self.ends_dropped.get()));
        if let Ok(by_status) = engine.count_by_status().await {
            for status in crate::tasks::TaskStatus::ALL {
                let n = by_status.iter().find(|(s, _)| *s == status).map_or(0, |(_, n)| *n);
                self.tasks.get_or_create(&StatusLabel { status: status.as_str().to_owned() }).set(n as i64);
            }
        }
        if let Ok(bytes) = engine.result_bytes_kept().await {
            self.result_bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        encode_registry(&mut text, &self.registry).expect("writing to a String cannot fail");
        encode_registry(&mut text, &self.process).expect("writing to a String cannot fail");
        encode_eof(&mut text).expect("writing to a String cannot fail");
        text
    }
}
