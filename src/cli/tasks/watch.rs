//! `corral tasks watch`: the newest tasks, then each new task and each change as it happens,
//! until Ctrl-C. It reads the store every `--interval` (the same query on both stores, so it
//! works the same on a SQLite file and on PostgreSQL, and costs the hosts one indexed read per
//! interval); a change between two reads is shown once, as the state the second read found.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{json, Value};

use super::view;
use crate::cli::args::TasksWatchArgs;
use crate::tasks::{now_ms, Task, TaskStore};

/// What a change is told by: what a person watching cares to see move.
#[derive(PartialEq)]
struct Seen {
    status: &'static str,
    message: Option<String>,
    attempts: u32,
    checkpoint: u64,
    runner: String,
}

impl Seen {
    fn of(task: &Task) -> Seen {
        Seen {
            status: task.status.as_str(),
            message: task.status_message.clone(),
            attempts: task.attempts,
            checkpoint: task.checkpoint,
            runner: task.runner.clone(),
        }
    }
}

/// Follows the store until Ctrl-C (exit 0); a read that fails is reported and tried again.
pub async fn run(store: Arc<dyn TaskStore>, args: TasksWatchArgs) -> anyhow::Result<ExitCode> {
    let mut known: HashMap<String, Seen> = HashMap::new();
    let mut first = true;
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    if !args.store.json {
        eprintln!("watching the tasks (every {}); Ctrl-C stops", humantime::format_duration(args.interval));
    }
    loop {
        match store.list_all(&args.filter.filter(), None, args.limit).await {
            Ok(page) => {
                let mut out = std::io::stdout().lock();
                if first && !args.store.json {
                    view::print_table(&mut out, &page.tasks, now_ms())?;
                }
                // Oldest first, so the lines read in the order things happened.
                for task in page.tasks.iter().rev() {
                    let seen = Seen::of(task);
                    let event = match known.get(&task.id) {
                        None if first => Some(("listed", None)),
                        None => Some(("added", None)),
                        Some(before) if *before != seen => Some(("changed", Some(before.status))),
                        Some(_) => None,
                    };
                    if let Some((event, before)) = event {
                        if args.store.json {
                            writeln!(out, "{}", line_json(event, task, before))?;
                        } else if event != "listed" {
                            writeln!(out, "{}", line_text(event, task, before))?;
                        }
                    }
                    known.insert(task.id.clone(), seen);
                }
                known.retain(|id, _| page.tasks.iter().any(|t| t.id == *id));
                out.flush()?;
                first = false;
            }
            Err(e) => eprintln!("corral: reading the tasks failed (trying again): {e}"),
        }
        tokio::select! {
            _ = &mut stop => return Ok(ExitCode::SUCCESS),
            _ = tokio::time::sleep(args.interval) => {}
        }
    }
}

/// One change as a JSON line: the task's summary, plus `event` (`listed`, `added`, `changed`),
/// `time` and, for a change, `previous_status`.
fn line_json(event: &str, task: &Task, before: Option<&str>) -> Value {
    let mut value = view::summary_json(task);
    let object = value.as_object_mut().expect("an object");
    object.insert("event".into(), json!(event));
    object.insert("time".into(), json!(view::time(now_ms())));
    if event == "changed" {
        object.insert("previous_status".into(), json!(before));
    }
    value
}

/// One change as a line for people.
fn line_text(event: &str, task: &Task, before: Option<&str>) -> String {
    let clock = view::time(now_ms());
    let clock = clock.get(11..19).unwrap_or(&clock);
    let status = match before {
        Some(before) if before != task.status.as_str() => format!("{before} → {}", task.status.as_str()),
        _ => task.status.as_str().to_owned(),
    };
    let mark = if event == "added" { "+" } else { "~" };
    let message = task.status_message.as_deref().map(|m| format!("  {m}")).unwrap_or_default();
    format!("{clock} {mark} {}  {}  {status}  attempt {}{message}", task.id, task.tool, task.attempts)
}
