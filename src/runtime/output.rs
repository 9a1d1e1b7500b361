//! A plugin's stdout and stderr: written line by line to the host log under the plugin's name.
//!
//! Each call gets a byte budget; past it output is dropped (and said so once) rather than
//! failing the guest's write, so a chatty plugin cannot flood the log or break itself.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use super::redact::{redacted, SecretVars};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes of stdout plus stderr one call may log.
pub const OUTPUT_BUDGET: usize = 64 * 1024;

#[derive(Clone)]
pub struct PluginOutput {
    plugin: Arc<str>,
    stream: &'static str,
    budget: Arc<AtomicUsize>,
    partial: Arc<Mutex<Vec<u8>>>,
    /// The call's secrets, replaced by their names in every line.
    secrets: SecretVars,
}

impl PluginOutput {
    /// A stdout and a stderr sharing one budget, redacting `secrets`.
    pub fn pair(plugin: Arc<str>, secrets: SecretVars) -> (PluginOutput, PluginOutput) {
        let budget = Arc::new(AtomicUsize::new(OUTPUT_BUDGET));
        let make = |stream| PluginOutput { plugin: plugin.clone(), stream, budget: budget.clone(), partial: Default::default(), secrets: secrets.clone() };
        (make("stdout"), make("stderr"))
    }

    fn accept(&self, bytes: &[u8]) {
        let before = self.budget.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some(b.saturating_sub(bytes.len()))).unwrap_or(0);
        let kept = &bytes[..bytes.len().min(before)];
        let mut partial = self.partial.lock().unwrap();
        partial.extend_from_slice(kept);
        while let Some(end) = partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = partial.drain(..=end).collect();
            self.emit(&line[..line.len() - 1]);
        }
        if kept.len() < bytes.len() && before > 0 {
            tracing::warn!(plugin = %self.plugin, "plugin output past {OUTPUT_BUDGET} bytes in one call is dropped");
        }
    }

    fn emit(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = redacted(&self.secrets, &text).map_or(text, Into::into);
        tracing::info!(plugin = %self.plugin, stream = self.stream, "{text}");
    }

    /// Logs what is left without a final newline; called when the call ends.
    pub fn flush_partial(&self) {
        let mut partial = self.partial.lock().unwrap();
        if !partial.is_empty() {
            let line = std::mem::take(&mut *partial);
            self.emit(&line);
        }
    }
}

impl IsTerminal for PluginOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for PluginOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for PluginOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.accept(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
