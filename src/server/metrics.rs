//! Prometheus metrics: requests by protocol era and method, calls and errors by tool and kind,
//! call latency, tasks by status and the task queue, in the text exposition format.

use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

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
    era: String,
    /// A method of that era (unknown names are not counted, so clients cannot grow the set).
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

/// The host's Prometheus registry and the metrics in it.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    calls: Family<CallLabels, Counter>,
    latency: Family<ToolLabel, Histogram>,
    tasks: Family<StatusLabel, Gauge>,
    queued: Gauge,
    running: Gauge,
    /// Task ends waiting for the store to answer again, and those dropped (see `tasks::pending`).
    ends_pending: Gauge,
    ends_dropped: Counter,
    /// Bytes of results kept by reference, read from the store at each scrape.
    result_bytes: Gauge,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("corral");
        let requests = Family::<RequestLabels, Counter>::default();
        let calls = Family::<CallLabels, Counter>::default();
        let latency = Family::<ToolLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.000_05, 2.5, 14)));
        let tasks = Family::<StatusLabel, Gauge>::default();
        let (queued, running) = (Gauge::default(), Gauge::default());
        registry.register("requests", "Requests by protocol era and method", requests.clone());
        registry.register("tool_calls", "Tool calls by tool and outcome", calls.clone());
        registry.register("tool_call_seconds", "Time from a call's start to its result", latency.clone());
        registry.register("tasks", "Stored tasks by status", tasks.clone());
        registry.register("task_queue_depth", "Tasks admitted and waiting for a worker", queued.clone());
        registry.register("tasks_running", "Tasks running now", running.clone());
        let (ends_pending, ends_dropped) = (Gauge::default(), Counter::default());
        registry.register("task_ends_pending", "Ended tasks whose end waits for the task store to answer again", ends_pending.clone());
        registry.register("task_ends_dropped", "Task ends dropped because too many waited for the task store", ends_dropped.clone());
        let result_bytes = Gauge::default();
        registry.register("result_bytes_kept", "Bytes of large results kept by reference in the task store", result_bytes.clone());
        Metrics { registry, requests, calls, latency, tasks, queued, running, ends_pending, ends_dropped, result_bytes }
    }
}

impl Metrics {
    /// Records one request of a known `method`, on the wire of `era`.
    pub fn request(&self, era: &str, method: &str) {
        self.requests.get_or_create(&RequestLabels { era: era.to_owned(), method: method.to_owned() }).inc();
    }

    /// Records one finished call.
    pub fn call(&self, tool: &str, outcome: &str, took: Duration) {
        self.calls.get_or_create(&CallLabels { tool: tool.to_owned(), outcome: outcome.to_owned() }).inc();
        self.latency.get_or_create(&ToolLabel { tool: tool.to_owned() }).observe(took.as_secs_f64());
    }

    /// The exposition text of what is counted in memory, without reading the task store.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }

    /// The exposition text, with task figures read now (the counts by status from the store,
    /// asynchronously: a scrape never holds the thread that serves clients).
    pub async fn render(&self, engine: &Engine) -> String {
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
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}
