//! Transports frame bytes into messages for a [`crate::server::Session`] and carry its answers
//! back. No method is interpreted here.

pub mod stdio;
