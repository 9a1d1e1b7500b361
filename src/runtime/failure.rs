//! Why a call did not produce a result, in terms a client can act on.

use std::time::Duration;

use wasmtime::Trap;

use crate::config::{display_size, Limits};

/// Why a call did not produce a result, in words a client can act on ([`Failure::describe`]) and as a stable machine name ([`Failure::kind`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The wall-clock deadline passed.
    Timeout {
        /// The call's wall-clock limit.
        limit: Duration,
    },
    /// The fuel budget ran out.
    FuelExhausted {
        /// The fuel the call had.
        budget: u64,
    },
    /// The guest tried to grow its memory past the cap.
    MemoryLimit {
        /// The cap, in bytes.
        limit: u64,
    },
    /// The guest trapped (unreachable, stack overflow, out-of-bounds access...).
    Trap {
        /// wasmtime's description of the trap.
        message: String,
    },
    /// The client cancelled the call.
    Cancelled,
    /// The guest's result cannot be turned into a tool result.
    InvalidOutput {
        /// What is wrong with it.
        reason: String,
    },
    /// The guest's result is bigger than the host passes on (`size` when it was measured
    /// before the host stopped copying it).
    OutputTooLarge {
        /// Its size in bytes, when it was measured.
        size: Option<u64>,
        /// `--max-output`, in bytes.
        limit: u64,
    },
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Stopped {
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the call passed its deadline")]
    DeadlinePassed,
    /// A host import: the call asked for input its request cannot answer yet (a 2026-07-28
    /// plain call); the server answers with an input-required result instead of this failure.
    #[error("the call stopped to wait for input from the client")]
    ForInput,
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
            Some(stop @ Stopped::ForInput) => return Failure::Trap { message: stop.to_string() },
            None => {}
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => Failure::FuelExhausted { budget: limits.fuel },
            Some(trap) => Failure::Trap { message: trap.to_string() },
            None => {
                let text = format!("{err:#}");
                // Lifting a guest string runs `str::from_utf8`, whose error wasmtime passes on.
                if err.downcast_ref::<std::str::Utf8Error>().is_some() {
                    return Failure::InvalidOutput { reason: format!("a string is not valid UTF-8 ({text})") };
                }
                // wasmtime's hostcall fuel ran out while copying the guest's data to the host.
                // Its error type (`HostcallFuelExhausted`) is private: the message is pinned by
                // the test `exhausted_hostcall_fuel_is_output_too_large`.
                if text.contains("fuel allocated for hostcalls") {
                    return Failure::OutputTooLarge { size: None, limit: max_output };
                }
                Failure::Trap { message: text }
            }
        }
    }
}

/// Each branch of [`Failure::from_wasmtime`] against an error wasmtime `=48.0.8` really raises,
/// from WAT guests run on the host's own engine configuration. A wasmtime upgrade that changes
/// a type or a message fails here rather than turning a failure into a plain `trap`.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::engine::{build, EngineSettings};
    use wasmtime::component::{Component, Linker};
    use wasmtime::Store;

    /// A component exporting `f: func() -> string` whose core function runs `body` and then
    /// returns the string at offset 16 of memory, `len` bytes long (the bytes there are `fill`).
    fn component(body: &str, len: u32, fill: &str) -> String {
        format!(
            r#"(component
                (core module $m
                  (memory (export "mem") 1)
                  (data (i32.const 16) "{fill}")
                  (func (export "f") (result i32)
                    {body}
                    (i32.store (i32.const 0) (i32.const 16))
                    (i32.store (i32.const 4) (i32.const {len}))
                    (i32.const 0)))
                (core instance $i (instantiate $m))
                (func (export "f") (result string) (canon lift (core func $i "f") (memory $i "mem"))))"#
        )
    }

    /// Runs `f` with `fuel` and `hostcall_fuel`; `stop` makes the first epoch check fail with it.
    fn failure(wat: &str, fuel: u64, hostcall_fuel: usize, stop: Option<fn() -> Stopped>) -> Failure {
        let engine = build(&EngineSettings::default()).unwrap();
        let component = Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
        let mut store = Store::new(&engine, ());
        store.set_fuel(fuel).unwrap();
        store.set_hostcall_fuel(hostcall_fuel);
        match stop {
            Some(stop) => {
                store.set_epoch_deadline(0);
                store.epoch_deadline_callback(move |_| Err(stop().into()));
            }
            None => store.set_epoch_deadline(u64::MAX / 2),
        }
        let instance = Linker::new(&engine).instantiate(&mut store, &component).unwrap();
        let f = instance.get_typed_func::<(), (String,)>(&mut store, "f").unwrap();
        let err = f.call(&mut store, ()).expect_err("the guest was meant to fail");
        Failure::from_wasmtime(&err, &limits(), false, 4096)
    }

    fn limits() -> Limits {
        Limits { timeout: Duration::from_secs(7), fuel: 1000, memory: 1 << 20, ..Limits::default() }
    }

    const SPIN: &str = "(loop $l (br $l))";

    #[test]
    fn running_out_of_fuel_is_a_typed_trap() {
        assert_eq!(failure(&component(SPIN, 1, "x"), 1000, 1 << 20, None), Failure::FuelExhausted { budget: 1000 });
    }

    #[test]
    fn other_traps_keep_wasmtimes_words() {
        let got = failure(&component("unreachable", 1, "x"), 1000, 1 << 20, None);
        assert_eq!(got, Failure::Trap { message: Trap::UnreachableCodeReached.to_string() });
    }

    #[test]
    fn the_epoch_callbacks_stops_come_back_typed() {
        assert_eq!(failure(&component(SPIN, 1, "x"), u64::MAX, 1 << 20, Some(|| Stopped::Cancelled)), Failure::Cancelled);
        let late = failure(&component(SPIN, 1, "x"), u64::MAX, 1 << 20, Some(|| Stopped::DeadlinePassed));
        assert_eq!(late, Failure::Timeout { limit: Duration::from_secs(7) });
    }

    /// wasmtime's `HostcallFuelExhausted` is private, so its message is all there is to match.
    #[test]
    fn exhausted_hostcall_fuel_is_output_too_large() {
        assert_eq!(failure(&component("", 60_000, "x"), 1000, 100, None), Failure::OutputTooLarge { size: None, limit: 4096 });
    }

    #[test]
    fn a_string_that_is_not_utf8_is_invalid_output() {
        match failure(&component("", 1, "\\ff"), 1000, 1 << 20, None) {
            Failure::InvalidOutput { reason } => assert!(reason.starts_with("a string is not valid UTF-8 ("), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_memory_cap_hit_wins_over_the_trap_it_caused() {
        let engine_err = wasmtime::Error::new(Trap::UnreachableCodeReached);
        assert_eq!(Failure::from_wasmtime(&engine_err, &limits(), true, 4096), Failure::MemoryLimit { limit: 1 << 20 });
    }
}
