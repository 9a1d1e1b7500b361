//! `LISTEN corral_tasks` on a connection of its own (a pooled one could be handed to another
//! call, and deadpool drives its connections where no one reads notifications).
//!
//! Every status write is announced as `'<id> <status>'` on `corral_tasks` once it has
//! committed (and progress relayed for another replica's session as `'<id> progress <json>'`), several to a payload (one per line; see [`notify`](super::notify)), on every replica. PostgreSQL does
//! not replay notifications to a listener that was away: after each (re)connection the
//! listener sends [`StoreEvent::Resync`], and whoever waits reads the tasks again.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::channel::{ANSWERED, CHANNEL, PROGRESS, PROGRESS_IN_ROW};
use super::errors::describe;
use super::pool::Target;
use crate::tasks::model::TaskStatus;
use crate::tasks::store::StoreEvent;

/// How long the listener waits before connecting again after losing its connection.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);

/// Listens until `stop` fires, reconnecting whenever the connection is lost.
pub(super) async fn listen(target: Target, events: broadcast::Sender<StoreEvent>, stop: CancellationToken) {
    let mut lost = false;
    loop {
        let problem = tokio::select! {
            _ = stop.cancelled() => return,
            problem = session(&target, &events, lost) => problem,
        };
        if !lost {
            tracing::warn!("task store {}: lost the LISTEN connection ({problem}); waiting on other replicas' tasks falls back to polling", target.shown);
        }
        lost = true;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(RECONNECT_AFTER) => {}
        }
    }
}

/// One connection's life: returns why it ended.
async fn session(target: &Target, events: &broadcast::Sender<StoreEvent>, reconnected: bool) -> String {
    let (client, mut connection) = match target.config.connect(target.tls.clone()).await {
        Ok(connected) => connected,
        Err(e) => return describe(&e),
    };
    let (payloads, mut received) = mpsc::unbounded_channel();
    // The connection must be polled for the LISTEN below to be answered, and for notifications.
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    let _ = payloads.send(Ok(n.payload().to_owned()));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = payloads.send(Err(describe(&e)));
                    return;
                }
            }
        }
        let _ = payloads.send(Err("the server closed the connection".to_owned()));
    });
    let problem = async {
        if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
            return describe(&e);
        }
        if reconnected {
            tracing::info!("task store {}: listening again; catching up on missed changes", target.shown);
        }
        // Whatever changed before this point was not heard: waiters read again.
        let _ = events.send(StoreEvent::Resync);
        loop {
            match received.recv().await {
                Some(Ok(payload)) => {
                    for event in payload.lines().filter_map(parse) {
                        let _ = events.send(event);
                    }
                }
                Some(Err(problem)) => return problem,
                None => return "the connection task ended".to_owned(),
            }
        }
    }
    .await;
    driver.abort();
    drop(client);
    problem
}

/// `"<id> <status>"` as the store's statements send it, or `"<id> progress <json>"` (or
/// `progress-row`, the message being in the row) as the [`Notifier`](super::notify::Notifier)
/// sends a progress report.
fn parse(line: &str) -> Option<StoreEvent> {
    let (id, rest) = line.split_once(' ')?;
    let id = id.to_owned();
    if let Some((kind, report)) = rest.split_once(' ') {
        let message_in_row = match kind {
            PROGRESS => false,
            PROGRESS_IN_ROW => true,
            _ => return None,
        };
        return Some(StoreEvent::Progress { id, progress: serde_json::from_str(report).ok()?, message_in_row });
    }
    if rest == ANSWERED {
        return Some(StoreEvent::Answered { id });
    }
    Some(StoreEvent::Changed { id, status: TaskStatus::parse(rest)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_as_the_statements_write_them() {
        assert_eq!(parse("abc-1 cancelled"), Some(StoreEvent::Changed { id: "abc-1".into(), status: TaskStatus::Cancelled }));
        assert_eq!(parse("abc-1 nonsense"), None);
        assert_eq!(parse("no-space"), None);
        let progress = crate::tasks::Progress { progress: 2.0, total: None, message: Some("a b".into()) };
        assert_eq!(
            parse(r#"abc-1 progress {"progress":2.0,"message":"a b"}"#),
            Some(StoreEvent::Progress { id: "abc-1".into(), progress, message_in_row: false })
        );
        let in_row = crate::tasks::Progress { progress: 2.0, total: Some(4.0), message: None };
        assert_eq!(
            parse(r#"abc-1 progress-row {"progress":2.0,"total":4.0}"#),
            Some(StoreEvent::Progress { id: "abc-1".into(), progress: in_row, message_in_row: true })
        );
        assert_eq!(parse("abc-1 progress not-json"), None);
        assert_eq!(parse("abc-1 answered"), Some(StoreEvent::Answered { id: "abc-1".into() }));
    }
}
