//! Checkpoints: durable progress for work that can resume after a crash.
//!
//! In a task, [`checkpoint`] stores the tool's state with the task, durably, before it returns;
//! if the host dies, the task runs again (when its tool is idempotent, or its manifest says
//! `resumable = true`) and [`resume`] hands back the last state. Outside a task the state is
//! kept for the call only and [`resume`] returns `None`.
//!
//! Each checkpoint is a **safe retry boundary**: everything after it may run twice. Write
//! outputs so that running again from the boundary is harmless — write a file whole under a
//! temporary name and rename it ([`write_atomically`]), name outputs after what they hold, and
//! checkpoint *after* an output is complete, never before.
//!
//! The state is serde JSON here ([`checkpoint`], [`resume::<State>()`](resume)); the raw bytes
//! are [`checkpoint_bytes`] and [`resume_bytes`]. Off wasm, [`crate::testing`] records
//! checkpoints and can simulate a crash ([`crate::testing::crash_after`]).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Stores `state` (as JSON) as the task's checkpoint, replacing the previous one. Fails past
/// the plugin's size cap (`[limits] checkpoint`, 1 MiB by default), or when the task ended.
pub fn checkpoint<T: Serialize>(state: &T) -> Result<(), String> {
    let bytes = serde_json::to_vec(state).map_err(|e| format!("the checkpoint state does not serialize: {e}"))?;
    checkpoint_bytes(&bytes)
}

/// The state of the task's last checkpoint, when it runs again after an interruption; `None`
/// on a first run (or when the stored state is not a `T`).
pub fn resume<T: DeserializeOwned>() -> Option<T> {
    resume_bytes().and_then(|bytes| serde_json::from_slice(&bytes).ok())
}

/// [`checkpoint`] with bytes of the tool's own format.
pub fn checkpoint_bytes(state: &[u8]) -> Result<(), String> {
    imp::checkpoint(state)
}

/// [`resume`] as bytes.
pub fn resume_bytes() -> Option<Vec<u8>> {
    imp::resume()
}

/// Writes `contents` to `path` so that a reader (or a run resumed after a crash) sees the old
/// file or the new one, never half of it: a temporary file beside it, then a rename.
pub fn write_atomically(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::wasm::bindings::corral::plugin::checkpoints;

    pub fn checkpoint(state: &[u8]) -> Result<(), String> {
        checkpoints::checkpoint(state)
    }

    pub fn resume() -> Option<Vec<u8>> {
        checkpoints::resume()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use crate::testing::RECORDER;

    pub fn checkpoint(state: &[u8]) -> Result<(), String> {
        let crash = RECORDER.with_borrow_mut(|r| {
            r.checkpoints.push(state.to_vec());
            r.crash_after.is_some_and(|n| r.checkpoints.len() >= n)
        });
        if crash {
            // What a host crash looks like to the tool: the call never returns.
            std::panic::panic_any(crate::testing::Crashed);
        }
        Ok(())
    }

    pub fn resume() -> Option<Vec<u8>> {
        RECORDER.with_borrow(|r| r.resume.clone())
    }
}
