//! A session's server-initiated messages, numbered for SSE and kept in a bounded buffer so a
//! client that reconnects with `Last-Event-ID` gets what it missed.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::server::Outlet;

/// One numbered message.
#[derive(Clone, Debug)]
pub struct Event {
    pub id: u64,
    pub message: Value,
}

pub struct EventLog {
    state: Mutex<State>,
    live: broadcast::Sender<Event>,
    capacity: usize,
}

struct State {
    next_id: u64,
    buffer: VecDeque<Event>,
}

impl EventLog {
    pub fn new(capacity: usize) -> EventLog {
        EventLog { state: Mutex::new(State { next_id: 1, buffer: VecDeque::new() }), live: broadcast::channel(capacity.max(16)).0, capacity }
    }

    /// Subscribes to new events, after replaying the buffered ones that follow `last_seen`.
    /// `None` when `last_seen` is older than the buffer reaches back (events were lost).
    pub fn subscribe(&self, last_seen: Option<u64>) -> (Vec<Event>, broadcast::Receiver<Event>, bool) {
        let state = self.state.lock().unwrap();
        let receiver = self.live.subscribe();
        let Some(last) = last_seen else { return (Vec::new(), receiver, true) };
        let complete = state.buffer.front().is_none_or(|first| first.id <= last + 1);
        let missed = state.buffer.iter().filter(|e| e.id > last).cloned().collect();
        (missed, receiver, complete)
    }

    pub fn push(&self, message: Value) {
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
    fn send(&self, message: Value) {
        self.push(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reconnecting_replays_what_was_missed_from_the_buffer() {
        let log = EventLog::new(3);
        for n in 0..5 {
            log.push(json!(n));
        }
        let (missed, _, complete) = log.subscribe(Some(3));
        assert_eq!(missed.iter().map(|e| e.id).collect::<Vec<_>>(), vec![4, 5]);
        assert!(complete);
        let (_, _, complete) = log.subscribe(Some(1));
        assert!(!complete, "event 2 fell out of the buffer");
    }
}
