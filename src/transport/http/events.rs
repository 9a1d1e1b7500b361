//! A session's server-initiated messages, numbered for SSE and kept in a bounded buffer so a
//! client that reconnects with `Last-Event-ID` gets what it missed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::mcp::jsonrpc::Outgoing;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::server::Outlet;

/// One numbered message.
#[derive(Clone, Debug)]
pub struct Event {
    pub id: u64,
    pub message: Outgoing,
}

/// What a new stream starts from.
pub struct Subscription {
    /// Buffered events after the client's `Last-Event-ID`.
    pub missed: Vec<Event>,
    pub live: broadcast::Receiver<Event>,
    /// False when the buffer no longer reaches back to `Last-Event-ID` (events were lost).
    pub complete: bool,
    /// Fires when a newer stream takes over or the session ends.
    pub ended: CancellationToken,
}

pub struct EventLog {
    state: Mutex<State>,
    live: broadcast::Sender<Event>,
    capacity: usize,
    /// GET streams being served now.
    listeners: AtomicUsize,
}

struct State {
    next_id: u64,
    buffer: VecDeque<Event>,
    /// Ends the newest subscriber's stream; only one stream receives at a time.
    current: Option<CancellationToken>,
}

impl EventLog {
    pub fn new(capacity: usize) -> EventLog {
        EventLog {
            state: Mutex::new(State { next_id: 1, buffer: VecDeque::new(), current: None }),
            live: broadcast::channel(capacity.max(16)).0,
            capacity,
            listeners: AtomicUsize::new(0),
        }
    }

    /// A GET stream started reading.
    pub fn attach(&self) {
        self.listeners.fetch_add(1, Ordering::AcqRel);
    }

    /// A GET stream ended.
    pub fn detach(&self) {
        self.listeners.fetch_sub(1, Ordering::AcqRel);
    }

    /// Subscribes to new events, after replaying the buffered ones that follow `last_seen`.
    /// The previous subscriber's stream ends: each message goes on one stream only.
    pub fn subscribe(&self, last_seen: Option<u64>) -> Subscription {
        let mut state = self.state.lock().unwrap();
        let ended = CancellationToken::new();
        if let Some(previous) = state.current.replace(ended.clone()) {
            previous.cancel();
        }
        let live = self.live.subscribe();
        let Some(last) = last_seen else { return Subscription { missed: Vec::new(), live, complete: true, ended } };
        let complete = state.buffer.front().is_none_or(|first| first.id <= last + 1);
        let missed = state.buffer.iter().filter(|e| e.id > last).cloned().collect();
        Subscription { missed, live, complete, ended }
    }

    /// Ends the open stream, if any (the session is over).
    pub fn close(&self) {
        if let Some(current) = self.state.lock().unwrap().current.take() {
            current.cancel();
        }
    }

    pub fn push(&self, message: Outgoing) {
        let mut state = self.state.lock().unwrap();
        let event = Event { id: state.next_id, message };
        state.next_id += 1;
        state.buffer.push_back(event.clone());
        while state.buffer.len() > self.capacity {
            state.buffer.pop_front();
        }
        // Sent under the lock so subscribers see events in id order with no gap.
        let _ = self.live.send(event);
    }
}

impl Outlet for EventLog {
    fn send(&self, message: Outgoing) {
        self.push(message);
    }

    /// Whether a GET stream is reading now: without one, a message waits in the buffer for a
    /// client that may never come back for it.
    fn is_open(&self) -> bool {
        self.listeners.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc::notification;

    #[test]
    fn reconnecting_replays_what_was_missed_from_the_buffer() {
        let log = EventLog::new(3);
        for n in 0..5 {
            log.push(notification("n", &n));
        }
        let first = log.subscribe(Some(3));
        assert_eq!(first.missed.iter().map(|e| e.id).collect::<Vec<_>>(), vec![4, 5]);
        assert!(first.complete);
        let second = log.subscribe(Some(1));
        assert!(!second.complete, "event 2 fell out of the buffer");
        assert!(first.ended.is_cancelled(), "the newer stream took over");
    }
}
