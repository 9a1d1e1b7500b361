//! Where a session's outbound messages go: the one way anything reaches a client.

use crate::mcp::jsonrpc::Outgoing;

/// Where a session's outbound messages go (a stdout writer, an HTTP stream...).
pub trait Outlet: Send + Sync + 'static {
    /// Delivers one whole message (a line on stdout, an event on an HTTP stream); never
    /// blocks on the client.
    fn send(&self, message: Outgoing);

    /// False once nothing sent here can arrive any more (an HTTP response the client stopped
    /// reading); requests to the client then take the session's own stream instead.
    fn is_open(&self) -> bool {
        true
    }
}
