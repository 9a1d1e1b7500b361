//! Transports frame bytes into messages for a [`crate::server::Session`] and carry its answers
//! back. No method is interpreted here.

pub mod http;
mod lines;
pub mod stdio;
mod stdout;

/// Resolves when the process is asked to stop (SIGTERM or Ctrl-C): the shutdown `main` gives
/// the transports.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("installing a SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
