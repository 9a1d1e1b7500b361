//! Where a call's guest reached out: each outbound connection it opened or tried, through
//! `wasi:sockets` TCP or `wasi:http`, with whether the plugin's network grants allowed it. The
//! network guard records them as it decides; the server puts them on the call's audit record
//! beside its principal and the names of the secrets it carried, so an operator can answer
//! which service a tool reached, and as whom.

use std::sync::Mutex;

/// The most distinct destinations a call keeps; beyond them, connections are only counted.
const MAX_DESTINATIONS: usize = 32;

/// How the guest reached out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// A `wasi:sockets` TCP connect.
    Tcp,
    /// A `wasi:http` request (the host opens its connection).
    Http,
}

impl Door {
    /// `tcp` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Tcp => "tcp",
            Door::Http => "http",
        }
    }
}

/// One destination of a call, with how many times it was tried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// How.
    pub door: Door,
    /// The host: a name for `wasi:http`, an IP for TCP.
    pub host: String,
    /// For a TCP connect to an IP that an allowed name of this call resolved to, that name.
    pub name: Option<String>,
    /// The port.
    pub port: u16,
    /// Whether the grants allowed it (a refusal is also in the call's denials).
    pub allowed: bool,
    /// How many times the guest tried it in this call.
    pub count: u32,
}

/// The connections of one call, filled in by its network guard.
#[derive(Default)]
pub struct Connections(Mutex<Tally>);

#[derive(Default)]
struct Tally {
    destinations: Vec<Connection>,
    /// Connections to destinations beyond [`MAX_DESTINATIONS`].
    uncounted: u64,
    /// Every connection, by door and verdict, the uncounted included (for `/metrics`).
    totals: Totals,
}

/// A call's connections by door and verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// `[door][allowed]`: TCP, then HTTP; refused, then allowed.
    counts: [[u64; 2]; 2],
}

impl Totals {
    /// Each non-zero count, with its door and whether it was allowed.
    pub fn each(&self) -> impl Iterator<Item = (Door, bool, u64)> + '_ {
        [Door::Tcp, Door::Http]
            .into_iter()
            .flat_map(move |door| [false, true].into_iter().map(move |allowed| (door, allowed, self.counts[door as usize][allowed as usize])))
            .filter(|(_, _, n)| *n > 0)
    }
}

impl Connections {
    /// Records one connection (or attempt) to `host:port`.
    pub(crate) fn record(&self, door: Door, host: String, name: Option<String>, port: u16, allowed: bool) {
        let mut tally = self.0.lock().unwrap();
        tally.totals.counts[door as usize][allowed as usize] += 1;
        let same = |c: &&mut Connection| c.door == door && c.host == host && c.port == port && c.allowed == allowed && c.name == name;
        if let Some(seen) = tally.destinations.iter_mut().find(|c| same(c)) {
            seen.count = seen.count.saturating_add(1);
        } else if tally.destinations.len() < MAX_DESTINATIONS {
            tally.destinations.push(Connection { door, host, name, port, allowed, count: 1 });
        } else {
            tally.uncounted += 1;
        }
    }

    /// The destinations recorded so far, in the order first tried, and how many connections
    /// went beyond them; leaving none.
    pub fn take(&self) -> (Vec<Connection>, u64, Totals) {
        let mut tally = self.0.lock().unwrap();
        (std::mem::take(&mut tally.destinations), std::mem::take(&mut tally.uncounted), std::mem::take(&mut tally.totals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_destination_is_kept_once_with_its_count_and_the_list_is_bounded() {
        let c = Connections::default();
        c.record(Door::Tcp, "127.0.0.1".into(), None, 80, true);
        c.record(Door::Tcp, "127.0.0.1".into(), None, 80, true);
        c.record(Door::Http, "api.example".into(), None, 443, false);
        for port in 0..40 {
            c.record(Door::Tcp, "10.0.0.1".into(), None, port, false);
        }
        let (kept, uncounted, totals) = c.take();
        assert_eq!(kept.len(), MAX_DESTINATIONS);
        assert_eq!((kept[0].count, kept[1].door, kept[1].allowed), (2, Door::Http, false));
        assert_eq!(uncounted, 10);
        assert_eq!(totals.each().collect::<Vec<_>>(), vec![(Door::Tcp, false, 40), (Door::Tcp, true, 2), (Door::Http, false, 1)]);
        assert_eq!(c.take(), (Vec::new(), 0, Totals::default()));
    }
}
