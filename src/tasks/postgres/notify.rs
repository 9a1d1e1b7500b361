//! Notifications sent after the writes they announce, in batches, off the callers' path.
//!
//! A `NOTIFY` inside a write would cost every writer PostgreSQL's one notification lock, which a
//! committing transaction holds from before its commit record until the end, flush included: all
//! notifying transactions of the cluster commit one at a time, and group commit never forms. That
//! is what capped admissions at about one per fsync (BENCHMARKS §12, before). So a write commits
//! alone and hands `"<id> <status>"` to the [`Notifier`]; one task per replica sends whatever has
//! gathered in one statement (`pg_notify` over an array), one transaction per batch.
//!
//! A listener reads a task only once its notification came, and the notification is sent after
//! the write committed, so it always reads the write. If the replica dies between the two, the
//! change goes unheard: waiters on other replicas fall back to the task's poll interval, as after
//! a lost `LISTEN` connection.
//!
//! Progress of a task whose session is on another replica goes the same way, as `"<id> progress
//! <json>"`, and is coalesced: of a task's reports gathered in one batch only the newest is sent,
//! so a guest reporting in a tight loop costs one line per batch, not one per report. A report
//! whose line would not fit a payload has its message written to the task's `status_message`
//! (fenced on the runner) and is sent as `"<id> progress-row <json>"` without it: the listener
//! reads the row.

use std::collections::HashMap;

use deadpool_postgres::Pool;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::channel::{CHANNEL, PROGRESS, PROGRESS_IN_ROW};
use super::pool::get;
use crate::tasks::model::{now_ms, Progress};
use crate::tasks::store::StoreResult;

/// PostgreSQL refuses a payload of 8000 bytes or more; a batch is cut into payloads below this.
const PAYLOAD_MAX: usize = 7900;

/// One thing to tell the other replicas.
enum Note {
    /// A committed status write, as its line.
    Status(String),
    /// A progress report of task `id`, which `runner` runs.
    Progress { id: String, runner: String, progress: Progress },
}

/// Hands changes to the sending task; cheap to clone.
#[derive(Clone)]
pub(super) struct Notifier(mpsc::UnboundedSender<Note>);

impl Notifier {
    /// Starts the sender on `pool`; it runs until `stop` fires, then sends what is left.
    pub(super) fn start(pool: Pool, stop: CancellationToken) -> (Notifier, impl std::future::Future<Output = ()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Notifier(tx), send(pool, rx, stop))
    }

    /// Announces that task `id` now has `status` (a write that has committed).
    pub(super) fn changed(&self, id: &str, status: &str) {
        let _ = self.0.send(Note::Status(format!("{id} {status}")));
    }

    /// Announces `progress` of task `id`, which `runner` runs; coalesced per batch.
    pub(super) fn progress(&self, id: &str, runner: &str, progress: Progress) {
        let _ = self.0.send(Note::Progress { id: id.to_owned(), runner: runner.to_owned(), progress });
    }
}

async fn send(pool: Pool, mut changes: mpsc::UnboundedReceiver<Note>, stop: CancellationToken) {
    loop {
        let first = tokio::select! {
            _ = stop.cancelled() => None,
            first = changes.recv() => first,
        };
        let mut batch: Vec<Note> = first.into_iter().collect();
        while let Ok(more) = changes.try_recv() {
            batch.push(more);
        }
        if !batch.is_empty() {
            let lines = lines(&pool, batch).await;
            if let Err(e) = notify(&pool, &payloads(&lines)).await {
                tracing::warn!("notifying other replicas of {} task changes failed ({e}); their waiters fall back to polling", lines.len());
            }
        }
        if stop.is_cancelled() {
            return;
        }
    }
}

async fn notify(pool: &Pool, payloads: &[String]) -> StoreResult<()> {
    let client = get(pool).await?;
    let statement = client.prepare_cached(&format!("SELECT pg_notify('{CHANNEL}', p) FROM unnest($1::text[]) AS p")).await?;
    client.execute(&statement, &[&payloads]).await?;
    Ok(())
}

/// The batch's lines: the newest progress report of each task first (a report older than a
/// status line of the same batch is no news after it), then the status lines in order.
async fn lines(pool: &Pool, batch: Vec<Note>) -> Vec<String> {
    let (statuses, reports) = coalesce(batch);
    let mut lines = Vec::with_capacity(statuses.len() + reports.len());
    for (id, runner, progress) in reports {
        match progress_line(&id, &progress) {
            Some(line) => lines.push(line),
            None => match message_to_row(pool, &id, &runner, &progress).await {
                Ok(true) => lines.push(format!("{id} {PROGRESS_IN_ROW} {}", json(&Progress { message: None, ..progress }))),
                Ok(false) => {} // the task ended or moved: nobody is told of its old progress
                Err(e) => tracing::debug!(task = %id, "storing a large progress message failed: {e}"),
            },
        }
    }
    lines.extend(statuses);
    lines
}

/// The status lines in order, and the newest progress report of each task (in the order the
/// tasks first reported).
fn coalesce(batch: Vec<Note>) -> (Vec<String>, Vec<(String, String, Progress)>) {
    let (mut statuses, mut reports) = (Vec::new(), Vec::<(String, String, Progress)>::new());
    let mut at: HashMap<String, usize> = HashMap::new();
    for note in batch {
        match note {
            Note::Status(line) => statuses.push(line),
            Note::Progress { id, runner, progress } => match at.get(&id) {
                Some(&i) => reports[i] = (id, runner, progress),
                None => {
                    at.insert(id.clone(), reports.len());
                    reports.push((id, runner, progress));
                }
            },
        }
    }
    (statuses, reports)
}

fn json(progress: &Progress) -> String {
    serde_json::to_string(progress).expect("progress serializes")
}

/// `"<id> progress <json>"`, or `None` when it would not fit a payload.
fn progress_line(id: &str, progress: &Progress) -> Option<String> {
    let line = format!("{id} {PROGRESS} {}", json(progress));
    (line.len() < PAYLOAD_MAX).then_some(line)
}

/// Writes a report's message as the task's `status_message`, fenced on `runner`; false when
/// the task is no longer `runner`'s or has ended.
async fn message_to_row(pool: &Pool, id: &str, runner: &str, progress: &Progress) -> StoreResult<bool> {
    let client = get(pool).await?;
    let statement = client
        .prepare_cached(
            "UPDATE corral_tasks SET status_message = $3, updated_at = $4 WHERE id = $1 AND runner = $2 AND status IN ('working', 'input_required')",
        )
        .await?;
    Ok(client.execute(&statement, &[&id, &runner, &progress.message, &now_ms()]).await? == 1)
}

/// The batch as payloads of lines, each payload under [`PAYLOAD_MAX`] bytes.
fn payloads(batch: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in batch {
        match out.last_mut() {
            Some(last) if last.len() + 1 + line.len() < PAYLOAD_MAX => {
                last.push('\n');
                last.push_str(line);
            }
            _ => out.push(line.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_cut_into_payloads_postgres_accepts() {
        assert_eq!(payloads(&["a working".into(), "b completed".into()]), ["a working\nb completed"]);
        let many: Vec<String> = (0..2000).map(|i| format!("{i:036} completed")).collect();
        let cut = payloads(&many);
        assert!(cut.len() > 1 && cut.iter().all(|p| p.len() < PAYLOAD_MAX), "{}", cut.len());
        assert_eq!(cut.iter().flat_map(|p| p.lines()).count(), 2000, "every line once");
    }

    fn report(n: f64) -> Progress {
        Progress { progress: n, total: Some(10.0), message: Some(format!("step {n}")) }
    }

    #[test]
    fn a_burst_of_progress_is_one_line_per_task_the_newest() {
        let note = |id: &str, n: f64| Note::Progress { id: id.into(), runner: "r".into(), progress: report(n) };
        let mut batch: Vec<Note> = (1..=500).map(|n| note("a", n as f64)).collect();
        batch.push(Note::Status("b working".into()));
        batch.push(note("b", 1.0));
        batch.push(note("a", 501.0));
        let (statuses, reports) = coalesce(batch);
        assert_eq!(statuses, ["b working"]);
        let newest: Vec<(&str, f64)> = reports.iter().map(|(id, _, p)| (id.as_str(), p.progress)).collect();
        assert_eq!(newest, [("a", 501.0), ("b", 1.0)]);
    }

    #[test]
    fn a_progress_line_that_would_not_fit_a_payload_goes_by_row() {
        let line = progress_line("t", &report(3.0)).unwrap();
        assert_eq!(line, r#"t progress {"progress":3.0,"total":10.0,"message":"step 3"}"#);
        let large = Progress { message: Some("x".repeat(PAYLOAD_MAX)), ..report(4.0) };
        assert_eq!(progress_line("t", &large), None);
    }
}
