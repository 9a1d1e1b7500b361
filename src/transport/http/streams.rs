//! Long-lived event streams: a session's GET stream and a 2026-07-28 `subscriptions/listen`.
//!
//! Each holds a connection for as long as it is open, and neither ends by itself. Unbounded, one
//! client could open as many as the connection cap allows and leave everyone else, health
//! checks included, with a 503. So streams are bounded three ways:
//!
//! - per client: the authenticated principal, or without authentication the peer's address
//!   (behind a proxy that is the proxy's address: authenticate, or raise the bound);
//! - in all: streams may hold at most three quarters of `--max-connections`, so a quarter is
//!   always left for new clients, plain requests and probes;
//! - in time: a stream ends gracefully after `--max-stream-lifetime`; the client reconnects (a
//!   GET stream with `Last-Event-ID`, a listen by listening again), which also moves streams off
//!   a replica that is being drained behind a load balancer.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::principal::Principal;

/// The bounds from the flags.
#[derive(Clone, Debug)]
pub struct StreamSettings {
    /// Streams one client may hold open at once (`--max-streams-per-client`).
    pub per_client: usize,
    /// How long a stream lives before it is ended for the client to reopen
    /// (`--max-stream-lifetime`).
    pub max_lifetime: Duration,
}

impl Default for StreamSettings {
    fn default() -> StreamSettings {
        StreamSettings { per_client: 32, max_lifetime: Duration::from_secs(30 * 60) }
    }
}

/// The address of the peer a request came from, set on every request by the acceptor.
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub SocketAddr);

/// Whose streams count together.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum StreamClient {
    /// An authenticated principal, wherever it connects from.
    Principal(Principal),
    /// Without authentication: everyone at one address (an IPv6 /64).
    Address(IpAddr),
    /// Neither known (a request that did not come through the acceptor): counted together.
    Unknown,
}

impl StreamClient {
    /// The client a request counts as: its principal when authenticated, else its address.
    pub(super) fn of(principal: Option<Principal>, peer: Option<PeerAddr>) -> StreamClient {
        match (principal, peer) {
            (Some(principal), _) => StreamClient::Principal(principal),
            (None, Some(PeerAddr(addr))) => StreamClient::Address(crate::principal::client_address(addr.ip())),
            (None, None) => StreamClient::Unknown,
        }
    }
}

/// Why a stream was not opened.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum StreamRefusal {
    /// The client holds `limit` streams already.
    Client { limit: usize },
    /// Streams hold every slot they may; the rest are kept for other requests.
    All { limit: usize },
}

impl StreamRefusal {
    /// What the client is told, naming the bound.
    pub(super) fn message(&self) -> String {
        match self {
            StreamRefusal::Client { limit } => {
                format!("this client holds {limit} open event streams, the most one client may (--max-streams-per-client); close one first")
            }
            StreamRefusal::All { limit } => {
                format!("{limit} event streams are open, the most this server keeps (three quarters of --max-connections); try again later")
            }
        }
    }
}

/// The streams open now, by client.
pub(super) struct Streams {
    settings: StreamSettings,
    /// The most streams open in all.
    total: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    by_client: HashMap<StreamClient, usize>,
    all: usize,
}

/// One open stream's place, given back when dropped (the stream ended, however it ended).
pub(super) struct StreamSlot {
    streams: Arc<Streams>,
    client: StreamClient,
}

impl Streams {
    /// Bounds for a listener that serves at most `max_connections` connections.
    pub(super) fn new(settings: StreamSettings, max_connections: usize) -> Arc<Streams> {
        let total = (max_connections - max_connections / 4).max(1);
        Arc::new(Streams { settings, total, open: Mutex::default() })
    }

    /// A place for one more of `client`'s streams, or why not.
    pub(super) fn open(self: &Arc<Self>, client: StreamClient) -> Result<StreamSlot, StreamRefusal> {
        let mut open = self.open.lock().unwrap();
        if open.all >= self.total {
            tracing::warn!("refused an event stream: {} are open (three quarters of --max-connections)", open.all);
            return Err(StreamRefusal::All { limit: self.total });
        }
        let limit = self.settings.per_client.max(1);
        let held = open.by_client.entry(client.clone()).or_default();
        if *held >= limit {
            tracing::info!("refused an event stream: the client holds {limit} (--max-streams-per-client)");
            return Err(StreamRefusal::Client { limit });
        }
        *held += 1;
        open.all += 1;
        Ok(StreamSlot { streams: self.clone(), client })
    }

    /// How long a stream may stay open.
    pub(super) fn lifetime(&self) -> Duration {
        self.settings.max_lifetime
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap();
        open.all -= 1;
        if let Some(held) = open.by_client.get_mut(&self.client) {
            *held -= 1;
            if *held == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> StreamClient {
        StreamClient::of(None, Some(PeerAddr(SocketAddr::from(([10, 0, 0, last], 4000)))))
    }

    #[test]
    fn without_authentication_an_ipv6_64_is_one_client() {
        let v6 = |s: &str| StreamClient::of(None, Some(PeerAddr(SocketAddr::new(s.parse().unwrap(), 4000))));
        assert_eq!(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff::9"));
        assert_ne!(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1"));
    }

    #[test]
    fn a_client_holds_at_most_its_bound_and_a_closed_stream_frees_its_place() {
        let streams = Streams::new(StreamSettings { per_client: 2, ..StreamSettings::default() }, 100);
        let first: Vec<StreamSlot> = (0..2).map(|_| streams.open(address(1)).expect("within the bound")).collect();
        assert_eq!(streams.open(address(1)).err(), Some(StreamRefusal::Client { limit: 2 }));
        let other = streams.open(address(2)).expect("another address has places of its own");
        drop(first);
        assert!(streams.open(address(1)).is_ok(), "closed streams give their places back");
        drop(other);
        assert!(!streams.open.lock().unwrap().by_client.contains_key(&address(2)), "a client with none open is forgotten");
    }

    #[test]
    fn a_principal_counts_as_one_client_from_any_address_and_the_total_keeps_a_reserve() {
        let streams = Streams::new(StreamSettings { per_client: 100, ..StreamSettings::default() }, 8);
        let token = || StreamClient::of(Some(Principal::Token("ci".into())), Some(PeerAddr(SocketAddr::from(([10, 0, 0, 9], 1)))));
        assert_ne!(token(), address(9), "an authenticated client is not its address");
        let held: Vec<StreamSlot> = (0..6).map(|_| streams.open(token()).expect("within the total")).collect();
        assert_eq!(streams.open(address(3)).err(), Some(StreamRefusal::All { limit: 6 }), "a quarter of 8 connections is kept");
        assert!(StreamRefusal::All { limit: 6 }.message().contains("--max-connections"));
        drop(held);
        assert!(streams.open(address(3)).is_ok());
    }
}
