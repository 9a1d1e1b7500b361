//! Why a call did not produce a result, in terms a client can act on.

use std::time::Duration;

use wasmtime::Trap;

use crate::config::{display_size, Limits};

#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The wall-clock deadline passed.
    Timeout { limit: Duration },
    /// The fuel budget ran out.
    FuelExhausted { budget: u64 },
    /// The guest tried to grow its memory past the cap.
    MemoryLimit { limit: u64 },
    /// The guest trapped (unreachable, stack overflow, out-of-bounds access...).
    Trap { message: String },
    /// The client cancelled the call.
    Cancelled,
    /// The guest's result cannot be turned into a tool result.
    InvalidOutput { reason: String },
    /// The guest's result is bigger than the host passes on (`size` when it was measured
    /// before the host stopped copying it).
    OutputTooLarge { size: Option<u64>, limit: u64 },
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Stopped {
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the call passed its deadline")]
    DeadlinePassed,
}

impl Failure {
    /// The stable name clients match on, in `_meta["corral/error"].kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Timeout { .. } => "timeout",
            Failure::FuelExhausted { .. } => "fuel-exhausted",
            Failure::MemoryLimit { .. } => "memory-limit",
            Failure::Trap { .. } => "trap",
            Failure::Cancelled => "cancelled",
            Failure::InvalidOutput { .. } => "invalid-output",
            Failure::OutputTooLarge { .. } => "output-too-large",
        }
    }

    /// A sentence about tool `tool`, for people and models.
    pub fn describe(&self, tool: &str) -> String {
        self.describe_as(&format!("tool `{tool}`"))
    }

    /// A sentence about `subject` ("tool `x`", "list-tools", "reading resource `notes://a`").
    pub fn describe_as(&self, subject: &str) -> String {
        match self {
            Failure::Timeout { limit } => format!("{subject} exceeded its {} time limit", humantime::format_duration(*limit)),
            Failure::FuelExhausted { budget } => format!("{subject} ran out of fuel: it used its whole compute budget of {budget} units"),
            Failure::MemoryLimit { limit } => format!("{subject} tried to use more than its {} memory limit", display_size(*limit)),
            Failure::Trap { message } => format!("{subject} crashed: {message}"),
            Failure::Cancelled => format!("{subject} was cancelled"),
            Failure::InvalidOutput { reason } => format!("{subject} returned an invalid result: {reason}"),
            Failure::OutputTooLarge { size: Some(size), limit } => {
                format!("{subject} returned {}, more than the host's {} output limit", display_size(*size), display_size(*limit))
            }
            Failure::OutputTooLarge { size: None, limit } => format!("{subject} returned more than the host's {} output limit", display_size(*limit)),
        }
    }

    /// Turns a wasmtime error from a call into the failure it stands for.
    pub(crate) fn from_wasmtime(err: &wasmtime::Error, limits: &Limits, memory_cap_hit: bool, max_output: u64) -> Failure {
        if memory_cap_hit {
            return Failure::MemoryLimit { limit: limits.memory };
        }
        match err.downcast_ref::<Stopped>() {
            Some(Stopped::Cancelled) => return Failure::Cancelled,
            Some(Stopped::DeadlinePassed) => return Failure::Timeout { limit: limits.timeout },
            None => {}
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => Failure::FuelExhausted { budget: limits.fuel },
            Some(trap) => Failure::Trap { message: trap.to_string() },
            None => {
                let text = format!("{err:#}");
                // wasmtime's hostcall fuel ran out while copying the guest's data to the host.
                if text.contains("fuel allocated for hostcalls") {
                    return Failure::OutputTooLarge { size: None, limit: max_output };
                }
                if text.to_ascii_lowercase().contains("utf-8") || text.contains("utf8") {
                    Failure::InvalidOutput { reason: format!("a string is not valid UTF-8 ({text})") }
                } else {
                    Failure::Trap { message: text }
                }
            }
        }
    }
}
