//! The audit trail: who called which tool, how it went and what it cost, every transition of
//! every task, and what operators did, as one JSON line each (`--audit-log`).
//!
//! Data flows one way: the server (a finished call, a refused request) and the task engine (a
//! transition it stored) hand a typed record to [`Audit`]; nothing here calls back. The trail is
//! written off the request path: a record is moved into a bounded channel, and a thread of its
//! own formats and writes it. When that thread cannot keep up (a slow disk, a full one, a pipe
//! nobody reads) the record is dropped and counted, never waited for: auditing must not become
//! the reason calls stall.
//!
//! A record holds the owner's key as the engine stores it; the principal, era and transport
//! are read from it (`principal::Owner`) by the writer, not on the request path.

mod line;
mod operator;
mod record;
mod trail;

pub use operator::{OperatorAction, OperatorRecord, SecretNamed};
pub use record::{CallOutcome, CallRecord, CallSecrets, Reached, Subject, TaskRecord, TaskRun, Transition};
pub use trail::{Audit, Destination};
