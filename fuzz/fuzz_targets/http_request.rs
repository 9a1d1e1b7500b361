//! Fuzz target `http_request`: see `fuzz/harness.rs` for what it checks.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::http_request(data));
