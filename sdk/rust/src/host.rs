//! What the host offers a running tool: log lines, progress, whether the call was cancelled, and
//! word that a resource changed.
//!
//! In a wasm build these call the host. Anywhere else (`cargo test`) they are recorded for
//! [`crate::testing`] to read, and `cancelled()` answers what the test set.

/// Severity of a log line; the client sees lines at or above the level it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detail for whoever debugs the plugin.
    Debug,
    /// What happened.
    Info,
    /// Worth noticing.
    Notice,
    /// Something went wrong, the call goes on.
    Warning,
    /// Something failed.
    Error,
}

/// Logs a line, attributed to the plugin and the current call. It goes to the host's log and,
/// as `notifications/message`, to a client that asked for this level.
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message)
}

/// Reports the call's progress. `progress` must grow from one report to the next (the host
/// drops reports that don't); `total`, when known, is what `progress` reaches at the end.
pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    imp::progress(progress, total, message)
}

/// Tells the host that the resource at `uri` changed, so clients subscribed to it hear of it
/// (`notifications/resources/updated`). `uri` must be one of the plugin's resources, or match
/// one of its templates; the host ignores (and logs) others.
pub fn resource_updated(uri: &str) {
    imp::resource_updated(uri)
}

/// True once the client cancelled the call or its time limit passed. Long loops should check it
/// now and then and return early; a tool that never checks is stopped anyway.
pub fn cancelled() -> bool {
    imp::cancelled()
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::LogLevel;
    use crate::wasm::bindings::corral::plugin::host;

    pub fn log(level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Notice => host::LogLevel::Notice,
            LogLevel::Warning => host::LogLevel::Warning,
            LogLevel::Error => host::LogLevel::Error,
        };
        host::log(level, message)
    }

    pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
        host::progress(progress, total, message)
    }

    pub fn cancelled() -> bool {
        host::cancelled()
    }

    pub fn resource_updated(uri: &str) {
        host::resource_updated(uri)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::LogLevel;
    use crate::testing::RECORDER;

    pub fn log(level: LogLevel, message: &str) {
        RECORDER.with_borrow_mut(|r| r.logs.push((level, message.to_owned())));
    }

    pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
        RECORDER.with_borrow_mut(|r| r.progress.push((progress, total, message.map(str::to_owned))));
    }

    pub fn resource_updated(uri: &str) {
        RECORDER.with_borrow_mut(|r| r.updated.push(uri.to_owned()));
    }

    pub fn cancelled() -> bool {
        RECORDER.with_borrow_mut(|r| {
            r.cancel_checks += 1;
            r.cancel_after.is_some_and(|n| r.cancel_checks > n)
        })
    }
}
