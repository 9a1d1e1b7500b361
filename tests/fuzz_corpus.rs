//! Replays the committed fuzz corpora (`fuzz/corpus/TARGET/*`) through the same entry points
//! the fuzz targets use, so a plain `cargo test` re-checks every past find without libFuzzer.

#[allow(dead_code)]
#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{} holds no input", dir.display());
    for input in inputs {
        let data = std::fs::read(&input).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{} fails", input.display());
        }
    }
}

#[test]
fn jsonrpc_parse_corpus() {
    replay("jsonrpc_parse", harness::jsonrpc_parse);
}

#[test]
fn session_corpus() {
    replay("session", harness::session);
}

#[test]
fn manifest_corpus() {
    replay("manifest", harness::manifest);
}

#[test]
fn uri_template_corpus() {
    replay("uri_template", harness::uri_template);
}

#[test]
fn http_request_corpus() {
    replay("http_request", harness::http_request);
}
