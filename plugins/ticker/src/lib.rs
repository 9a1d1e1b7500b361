//! `ticker`: a slow tool that talks to the host while it runs.
//!
//! Shows how to
//! - report progress with `progress` (sent to clients as `notifications/progress`),
//! - log with `log` (sent as `notifications/message` and to the host's log),
//! - check `cancelled()` in a loop and stop early with an error result,
//! - mark tools as usable as MCP tasks: `tick` is `optional`, `countdown` is `required`,
//! - sleep: `std::thread::sleep` works on wasm32-wasip2 (it waits on a wasi:clocks pollable).
//!
//! The manifest next to this crate (`ticker.toml`) sets the call timeout to 120 s
//! and lets at most 4 calls run at once.

use corral_plugin::{cancelled, export, log, progress, LogLevel, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TickArgs {
    /// How many times to tick.
    #[schemars(range(min = 1, max = 10000))]
    count: u64,
    /// Milliseconds to wait before each tick (default 100).
    #[serde(default = "default_interval")]
    #[schemars(range(min = 0, max = 60000))]
    interval_ms: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountdownArgs {
    /// The number to count down from.
    #[schemars(range(min = 1, max = 10000))]
    from: u64,
    /// Milliseconds to wait before each tick (default 100).
    #[serde(default = "default_interval")]
    #[schemars(range(min = 0, max = 60000))]
    interval_ms: u64,
}

fn default_interval() -> u64 {
    100
}

fn tick(args: TickArgs) -> Result<String, String> {
    run("tick", "count", args.count, args.interval_ms, |i, n| format!("tick {i}/{n}"))?;
    Ok(done("tick", format!("ticked {} times", args.count)))
}

fn countdown(args: CountdownArgs) -> Result<String, String> {
    run("countdown", "from", args.from, args.interval_ms, |i, n| format!("{} to go", n - i))?;
    Ok(done("countdown", format!("counted down from {}", args.from)))
}

fn done(tool: &str, message: String) -> String {
    log(LogLevel::Info, &format!("{tool}: {message}"));
    message
}

/// Ticks `count` times, `interval_ms` apart, reporting each tick with `message(i, count)`.
fn run(tool: &str, key: &str, count: u64, interval_ms: u64, message: impl Fn(u64, u64) -> String) -> Result<(), String> {
    // The host has already checked the arguments against the schema; a direct call has not.
    if !(1..=10_000).contains(&count) {
        return Err(format!("`{key}` must be an integer from 1 to 10000"));
    }
    log(LogLevel::Info, &format!("{tool}: {count} ticks, {interval_ms} ms apart"));
    for i in 1..=count {
        std::thread::sleep(Duration::from_millis(interval_ms));
        // The host sets `cancelled` when the client cancels or the deadline passes.
        if cancelled() {
            log(LogLevel::Info, &format!("{tool}: cancelled after {} ticks", i - 1));
            return Err(format!("cancelled after {} ticks", i - 1));
        }
        let message = message(i, count);
        // `progress` must grow with every report, also when counting down.
        progress(i as f64, Some(count as f64), Some(&message));
        log(LogLevel::Debug, &message);
    }
    Ok(())
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("tick", "Ticks `count` times, `interval_ms` apart, reporting progress.", tick).title("Tick").task_support(TaskSupport::Optional),
        Tool::new("countdown", "Counts down from `from`, one tick at a time. Task-only.", countdown).title("Countdown").task_support(TaskSupport::Required),
    ]
    .into_iter()
    // Hints for clients: ticking changes nothing outside the call.
    .map(|tool| tool.read_only(true).destructive(false).idempotent(true).open_world(false))
    .collect()
}

export!(tools);

#[cfg(test)]
mod tests {
    use corral_plugin::{testing, LogLevel};
    use serde_json::json;

    #[test]
    fn tools_pass_the_hosts_checks() {
        testing::check(&super::tools());
        let schema = super::tools()[0].input_schema();
        assert_eq!(schema["properties"]["interval_ms"]["default"], 100);
        assert_eq!(schema["required"], json!(["count"]));
    }

    #[test]
    fn tick_reports_growing_progress_and_logs() {
        testing::reset();
        let result = testing::call(&super::tools(), "tick", json!({"count": 3, "interval_ms": 0}));
        assert_eq!(result.text_content(), "ticked 3 times");
        let reports = testing::progress_reports();
        assert_eq!(reports.iter().map(|r| r.0).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
        assert_eq!(reports[2].2.as_deref(), Some("tick 3/3"));
        let logs = testing::logs();
        assert_eq!(logs.first(), Some(&(LogLevel::Info, "tick: 3 ticks, 0 ms apart".into())));
        assert_eq!(logs.last(), Some(&(LogLevel::Info, "tick: ticked 3 times".into())));
    }

    #[test]
    fn countdown_says_how_many_are_left() {
        testing::reset();
        let result = testing::call(&super::tools(), "countdown", json!({"from": 2, "interval_ms": 0}));
        assert_eq!(result.text_content(), "counted down from 2");
        assert_eq!(testing::progress_reports()[0].2.as_deref(), Some("1 to go"));
    }

    #[test]
    fn a_cancelled_call_stops_early_with_an_error() {
        testing::cancel_after(2);
        let result = testing::call(&super::tools(), "tick", json!({"count": 10, "interval_ms": 0}));
        assert!(result.is_error);
        assert_eq!(result.text_content(), "cancelled after 2 ticks");
    }
}
