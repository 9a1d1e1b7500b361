//! Opaque access tokens against a hostile authorization server: `corral serve` on the real binary
//! trusts an issuer served here on 127.0.0.1 (its metadata, an empty key set and an RFC 7662
//! introspection endpoint that answers what each test scripts and counts every call), so the
//! answers a real provider would never give can be given.
//!
//! - a `sub` that is not a non-empty string is refused, never replaced by the `client_id`
//!   (which would make every user of one client application one principal);
//! - refusals are remembered briefly, by the token's digest, and the introspections one client
//!   address may cause are bounded: garbage tokens cost the authorization server a bounded
//!   number of calls, and the client a clear 429.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use common::client::TIMEOUT;
use common::modern_http::agent;
use common::serve::{serve_command, HttpServe};
use serde_json::{json, Value};

const RESOURCE: &str = "https://corral.test/mcp";

/// The hostile issuer: `answer` decides what the introspection endpoint says of each token.
struct Issuer {
    url: String,
    introspections: Arc<AtomicUsize>,
}

impl Issuer {
    fn start(answer: fn(&str, &str) -> Value) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let introspections = Arc::new(AtomicUsize::new(0));
        let (issuer, calls) = (url.clone(), introspections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (issuer, calls) = (issuer.clone(), calls.clone());
                std::thread::spawn(move || serve_one(stream, &issuer, &calls, answer));
            }
        });
        Issuer { url, introspections }
    }

    fn calls(&self) -> usize {
        self.introspections.load(Ordering::SeqCst)
    }
}

/// Answers the requests of one connection until it closes.
fn serve_one(stream: TcpStream, issuer: &str, calls: &AtomicUsize, answer: fn(&str, &str) -> Value) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = match path.as_str() {
            "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration" => {
                json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/jwks"), "introspection_endpoint": format!("{issuer}/introspect") })
            }
            "/jwks" => json!({ "keys": [] }),
            "/introspect" => {
                calls.fetch_add(1, Ordering::SeqCst);
                let form = String::from_utf8_lossy(&body).into_owned();
                let token = form.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or("").to_owned();
                answer(issuer, &token)
            }
            _ => json!({}),
        };
        let text = reply.to_string();
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", text.len());
        if stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(text.as_bytes())).is_err() {
            return;
        }
    }
}

/// An active answer for this host naming `extra`'s claims over a user of client `app`.
fn active(issuer: &str, extra: Value) -> Value {
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let mut answer = json!({ "active": true, "iss": issuer, "aud": RESOURCE, "scope": "mcp", "client_id": "app", "exp": exp, "token_type": "Bearer" });
    answer.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    answer
}

/// `corral serve` trusting `issuer`, introspecting as `corral-rs`, with `more` flags.
fn corral(issuer: &Issuer, secret: &tempfile::NamedTempFile, more: &[&str]) -> HttpServe {
    let plugins = common::example_plugins(&["text"]);
    let client = format!("{}=corral-rs", issuer.url);
    let extra = [
        "--public-url",
        "https://corral.test",
        "--oauth-issuer",
        &issuer.url,
        "--oauth-introspection-client",
        &client,
        "--oauth-introspection-secret-file",
        secret.path().to_str().unwrap(),
    ];
    let extra: Vec<&str> = extra.iter().chain(more).copied().collect();
    let serve = HttpServe::spawn(serve_command(plugins.path(), ":memory:", &extra), TIMEOUT);
    // The plugins are read at start; the directory may go.
    drop(plugins);
    serve
}

fn secret_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "corral-rs-secret\n").unwrap();
    file
}

/// One `initialize` POST with `token`: (status, `Retry-After`, body).
fn initialize(url: &str, token: &str) -> (u16, Option<String>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"));
    let response = agent().run(request.body(body.to_string()).unwrap()).unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), retry, response.into_body().read_to_string().unwrap())
}

#[test]
fn a_subject_that_is_not_a_non_empty_string_is_refused_never_taken_for_the_client() {
    let issuer = Issuer::start(|issuer, token| match token {
        "numeric-1001" => active(issuer, json!({ "sub": 1001 })),
        "numeric-1002" => active(issuer, json!({ "sub": 1002 })),
        "empty" => active(issuer, json!({ "sub": "" })),
        "named-1001" => active(issuer, json!({ "sub": "1001" })),
        "client-credentials" => active(issuer, json!({})),
        _ => json!({ "active": false }),
    });
    let secret = secret_file();
    let host = corral(&issuer, &secret, &[]);
    for token in ["numeric-1001", "numeric-1002", "empty"] {
        let (status, _, body) = initialize(&host.url, token);
        assert_eq!(status, 401, "{token}: {body}");
    }
    for token in ["named-1001", "client-credentials"] {
        let (status, _, body) = initialize(&host.url, token);
        assert_eq!(status, 200, "{token}: {body}");
    }
}

/// Garbage opaque tokens from one address: the same one again is answered from the refusal
/// remembered (one call for fifty requests); new ones cost a call each only while the address's
/// bucket lasts (`5/h` here: five at once, the next an hour later), then 429 with Retry-After
/// and no call, while a token already known is still served from memory.
#[test]
fn refusals_are_remembered_and_the_introspections_of_one_address_are_bounded() {
    let issuer = Issuer::start(|issuer, token| match token {
        "good" => active(issuer, json!({ "sub": "ada" })),
        _ => json!({ "active": false }),
    });
    let secret = secret_file();
    let host = corral(&issuer, &secret, &["--oauth-introspection-rate", "5/h"]);
    assert_eq!(initialize(&host.url, "good").0, 200);
    assert_eq!(issuer.calls(), 1);
    for _ in 0..50 {
        let (status, _, body) = initialize(&host.url, "garbage");
        assert_eq!(status, 401, "{body}");
    }
    assert_eq!(issuer.calls(), 2, "one call for fifty requests with one refused token");

    let mut throttled = 0;
    for n in 0..400 {
        let (status, retry_after, body) = initialize(&host.url, &format!("garbage-{n}"));
        match status {
            401 => {}
            429 => {
                throttled += 1;
                let seconds: u64 = retry_after.as_deref().unwrap_or_else(|| panic!("no Retry-After: {body}")).parse().unwrap();
                assert!((1..=3600).contains(&seconds), "{seconds}");
                assert!(body.contains("too many unknown access tokens from this address"), "{body}");
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(issuer.calls(), 5, "the address's five introspections, then none");
    assert_eq!(throttled, 397);
    assert_eq!(initialize(&host.url, "good").0, 200, "a known token costs no introspection");
    assert!(!host.stderr.lock().unwrap().contains("garbage-"), "no token in the log");
}
