//! Fuzz target `jsonrpc_parse`: see `fuzz/harness.rs` for what it checks.
#![no_main]

#[allow(dead_code)] // each target uses one entry point of the shared harness
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::jsonrpc_parse(data));
