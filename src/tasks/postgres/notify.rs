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

use deadpool_postgres::Pool;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::listen::CHANNEL;
use super::pool::get;
use crate::tasks::store::StoreResult;

/// PostgreSQL refuses a payload of 8000 bytes or more; a batch is cut into payloads below this.
const PAYLOAD_MAX: usize = 7900;

/// Hands changes to the sending task; cheap to clone.
#[derive(Clone)]
pub(super) struct Notifier(mpsc::UnboundedSender<String>);

impl Notifier {
    /// Starts the sender on `pool`; it runs until `stop` fires, then sends what is left.
    pub(super) fn start(pool: Pool, stop: CancellationToken) -> (Notifier, impl std::future::Future<Output = ()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Notifier(tx), send(pool, rx, stop))
    }

    /// Announces that task `id` now has `status` (a write that has committed).
    pub(super) fn changed(&self, id: &str, status: &str) {
        let _ = self.0.send(format!("{id} {status}"));
    }
}

async fn send(pool: Pool, mut changes: mpsc::UnboundedReceiver<String>, stop: CancellationToken) {
    loop {
        let first = tokio::select! {
            _ = stop.cancelled() => None,
            first = changes.recv() => first,
        };
        let mut batch: Vec<String> = first.into_iter().collect();
        while let Ok(more) = changes.try_recv() {
            batch.push(more);
        }
        if !batch.is_empty() {
            if let Err(e) = notify(&pool, &payloads(&batch)).await {
                tracing::warn!("notifying other replicas of {} task changes failed ({e}); their waiters fall back to polling", batch.len());
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
}
