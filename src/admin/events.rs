//! `GET /api/events`: server-sent events for the console, one producer for every client.
//!
//! One task per host reads what changed (the catalog's generation at once; the unfinished
//! tasks, their live progress and the tools' and sessions' figures every [`TICK`], and only
//! while a client listens) and serializes each event once; every client's stream gets the same
//! `Arc<str>` from a broadcast channel. A client's backlog is bounded by the channel
//! ([`BACKLOG`] events): one that falls behind is sent `resync` (fetch everything again) instead
//! of the events it missed, so a slow browser costs the host nothing but its own socket.
//! Clients are bounded too ([`MAX_CLIENTS`], then 503).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::tasks::TaskRow;
use crate::server::Host;

/// How often the producer looks at tasks and figures while a client listens.
pub const TICK: Duration = Duration::from_millis(500);
/// Events a client may fall behind by before it is told to resync.
const BACKLOG: usize = 64;
/// Event streams open at once.
pub const MAX_CLIENTS: usize = 64;
/// Unfinished tasks watched per tick at most (the newest).
const WATCHED: usize = 500;
/// Figures (tools, sessions) are sent every this many ticks.
const FIGURES_EVERY: u32 = 4;

/// The events of one host, and its clients.
pub struct Hub {
    sender: broadcast::Sender<Arc<str>>,
    clients: AtomicUsize,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub { sender: broadcast::channel(BACKLOG).0, clients: AtomicUsize::new(0) }
    }
}

impl Hub {
    fn send(&self, kind: &str, data: Value) {
        if self.sender.receiver_count() > 0 {
            let _ = self.sender.send(json!({ "kind": kind, "data": data }).to_string().into());
        }
    }

    /// A client's stream, or `None` when [`MAX_CLIENTS`] streams are open. It ends when `stop`
    /// fires (shutdown).
    pub fn subscribe(self: &Arc<Self>, stop: CancellationToken) -> Option<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>> {
        let count = self.clients.fetch_add(1, Ordering::AcqRel);
        let slot = ClientSlot(self.clone());
        if count >= MAX_CLIENTS {
            return None;
        }
        let receiver = self.sender.subscribe();
        let hello = Event::default().event("hello").data("{}");
        let events = stream::unfold((receiver, slot), |(mut receiver, slot)| async move {
            let event = match receiver.recv().await {
                Ok(text) => {
                    let kind = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["kind"].as_str().map(str::to_owned)).unwrap_or_default();
                    Event::default().event(kind).data(text.as_ref())
                }
                // Fell behind: whatever it missed, it fetches again.
                Err(broadcast::error::RecvError::Lagged(_)) => Event::default().event("resync").data("{}"),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((Ok::<Event, std::convert::Infallible>(event), (receiver, slot)))
        });
        let stream = stream::once(async { Ok::<Event, std::convert::Infallible>(hello) }).chain(events).take_until(async move { stop.cancelled().await });
        Some(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
    }

    fn listening(&self) -> bool {
        self.sender.receiver_count() > 0
    }
}

/// Counts an open stream for as long as it lives.
struct ClientSlot(Arc<Hub>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Produces the hub's events until `stop` fires.
pub async fn produce(host: Arc<Host>, hub: Arc<Hub>, stop: CancellationToken) {
    let mut catalog = host.catalog_changes();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The unfinished tasks as last sent, by id: what a tick compares with.
    let mut last: HashMap<String, TaskRow> = HashMap::new();
    let mut n: u32 = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            changed = catalog.changed() => {
                if changed.is_err() {
                    return;
                }
                hub.send("plugins", json!({ "generation": *catalog.borrow_and_update() }));
            }
            _ = ticks.tick() => {
                if !hub.listening() {
                    last.clear();
                    continue;
                }
                n = n.wrapping_add(1);
                if let Err(e) = tick_tasks(&host, &hub, &mut last).await {
                    tracing::debug!("the console's task watch could not read the store: {e}");
                }
                if n % FIGURES_EVERY == 1 {
                    hub.send("figures", json!({ "tools": host.tool_views(), "sessions": host.session_views() }));
                }
            }
        }
    }
}

/// Sends the unfinished tasks that changed since the last tick, and the end of those that
/// ended.
async fn tick_tasks(host: &Host, hub: &Hub, last: &mut HashMap<String, TaskRow>) -> Result<(), String> {
    let now = super::tasks::unfinished(host, WATCHED).await?;
    let mut changed: Vec<TaskRow> = now.iter().filter(|t| last.get(&t.id).is_none_or(|old| old.differs(t))).cloned().collect();
    for gone in last.keys().filter(|id| !now.iter().any(|t| &t.id == *id)) {
        if let Ok(Some(row)) = super::tasks::one(host, gone).await {
            changed.push(row);
        }
    }
    *last = now.into_iter().map(|t| (t.id.clone(), t)).collect();
    if !changed.is_empty() {
        hub.send("tasks", json!({ "changed": changed }));
    }
    Ok(())
}
