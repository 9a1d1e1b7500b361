//! Per-tool figures a console reads: calls, errors by kind, latency quantiles, fuel and
//! memory, kept beside the Prometheus metrics (which cannot be read back) in the same buckets.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// The upper bounds of the latency buckets, in seconds: 50 µs × 2.5ⁿ, up to about 3 minutes.
pub(super) const LATENCY_BUCKETS: [f64; 14] = {
    let mut bounds = [0.000_05; 14];
    let mut i = 1;
    while i < bounds.len() {
        bounds[i] = bounds[i - 1] * 2.5;
        i += 1;
    }
    bounds
};

/// What one tool's calls came to since the host started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolUsage {
    /// The tool's name as served.
    pub tool: String,
    /// Calls that ended (cancelled ones included).
    pub calls: u64,
    /// Calls that did not end `ok`, by kind: `tool-error` (the tool's own error result), or
    /// the failure the host imposed (`timeout`, `fuel-exhausted`, `invalid-arguments`,
    /// `cancelled`, …).
    pub errors: BTreeMap<String, u64>,
    /// The median latency: the upper bound of the bucket holding it (`None` before a call).
    pub latency_p50: Option<Duration>,
    /// The 99th percentile latency, the same way.
    pub latency_p99: Option<Duration>,
    /// The longest call.
    pub latency_max: Duration,
    /// Fuel consumed by all its calls.
    pub fuel_consumed: u64,
    /// The most fuel one call consumed.
    pub fuel_max: u64,
    /// The largest linear memory one call's guest held, in bytes.
    pub peak_memory_max: u64,
    /// The mean of the calls' peak memory, in bytes.
    pub peak_memory_mean: u64,
}

/// Every tool's running figures.
#[derive(Default)]
pub(super) struct ToolStats(Mutex<HashMap<String, Stats>>);

#[derive(Default)]
struct Stats {
    calls: u64,
    errors: BTreeMap<String, u64>,
    /// Calls per latency bucket; the last counts those above every bound.
    latency: [u64; LATENCY_BUCKETS.len() + 1],
    latency_max: Duration,
    fuel: u64,
    fuel_max: u64,
    memory_sum: u128,
    memory_max: u64,
}

impl ToolStats {
    pub(super) fn record(&self, tool: &str, outcome: &str, took: Duration, fuel: u64, memory: u64) {
        let mut all = self.0.lock().unwrap();
        let stats = match all.get_mut(tool) {
            Some(stats) => stats,
            None => all.entry(tool.to_owned()).or_default(),
        };
        stats.calls += 1;
        if outcome != "ok" {
            *stats.errors.entry(outcome.to_owned()).or_default() += 1;
        }
        let seconds = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS.iter().position(|&bound| seconds <= bound).unwrap_or(LATENCY_BUCKETS.len());
        stats.latency[bucket] += 1;
        stats.latency_max = stats.latency_max.max(took);
        stats.fuel = stats.fuel.saturating_add(fuel);
        stats.fuel_max = stats.fuel_max.max(fuel);
        stats.memory_sum += u128::from(memory);
        stats.memory_max = stats.memory_max.max(memory);
    }

    pub(super) fn snapshot(&self) -> Vec<ToolUsage> {
        let all = self.0.lock().unwrap();
        let mut usage: Vec<ToolUsage> = all
            .iter()
            .map(|(tool, s)| ToolUsage {
                tool: tool.clone(),
                calls: s.calls,
                errors: s.errors.clone(),
                latency_p50: quantile(&s.latency, s.latency_max, 0.50),
                latency_p99: quantile(&s.latency, s.latency_max, 0.99),
                latency_max: s.latency_max,
                fuel_consumed: s.fuel,
                fuel_max: s.fuel_max,
                peak_memory_max: s.memory_max,
                peak_memory_mean: u64::try_from(s.memory_sum / u128::from(s.calls.max(1))).unwrap_or(u64::MAX),
            })
            .collect();
        usage.sort_by(|a, b| a.tool.cmp(&b.tool));
        usage
    }
}

/// The upper bound of the bucket that holds quantile `q` (the longest call for the last
/// bucket, and never more than it).
fn quantile(buckets: &[u64], max: Duration, q: f64) -> Option<Duration> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, &n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            let bound = LATENCY_BUCKETS.get(i).map_or(max, |&b| Duration::from_secs_f64(b));
            return Some(bound.min(max));
        }
    }
    Some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_fall_in_the_right_bucket_and_errors_are_by_kind() {
        let stats = ToolStats::default();
        for _ in 0..98 {
            stats.record("echo", "ok", Duration::from_micros(40), 1_000, 65_536);
        }
        stats.record("echo", "timeout", Duration::from_secs(2), 5_000, 131_072);
        stats.record("echo", "tool-error", Duration::from_secs(2), 0, 0);
        let usage = stats.snapshot();
        assert_eq!(usage.len(), 1);
        let echo = &usage[0];
        assert_eq!((echo.calls, echo.fuel_consumed, echo.fuel_max, echo.peak_memory_max), (100, 103_000, 5_000, 131_072));
        assert_eq!(echo.errors, BTreeMap::from([("timeout".to_owned(), 1), ("tool-error".to_owned(), 1)]));
        let p50 = echo.latency_p50.unwrap();
        assert!(p50 >= Duration::from_micros(40) && p50 <= Duration::from_micros(50), "the first bucket's bound: {p50:?}");
        let p99 = echo.latency_p99.unwrap();
        assert!(p99 >= Duration::from_secs(2) && p99 <= Duration::from_secs(5), "{p99:?}");
        assert_eq!(echo.latency_max, Duration::from_secs(2));
    }
}
