//! HTTP for the `instructions` group: a null Streamable HTTP server of the null stdio server's
//! shape, and the plain keep-alive client that drives it and corral alike.
//!
//! The server (`compare --null-http-server`) listens on 127.0.0.1, prints its port, takes one
//! connection and answers each `POST` on it by parsing the body with serde_json and writing a
//! JSON answer, on one thread, until the client closes it; then it exits. What any HTTP MCP
//! server must at least do per call: read a request's head and body, parse, answer.
//!
//! The client writes requests by hand on one `TcpStream` so that it costs the same against
//! both servers and adds nothing (no agent, no pool) to what is counted: only the servers run
//! under callgrind.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{json, Value};

/// Serves one connection, then exits.
pub fn serve() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1");
    println!("{}", listener.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    let (stream, _) = listener.accept().expect("accepting the client");
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some(body) = read_message(&mut reader) {
        let Ok(request) = serde_json::from_slice::<Value>(&body) else { break };
        let result = match request["method"].as_str() {
            Some("tools/call") => json!({"content": [{"type": "text", "text": request["params"]["arguments"]["text"]}]}),
            _ => json!({}),
        };
        let answer = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).unwrap();
        // Head and body in one write, as hyper does.
        let mut message = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", answer.len()).into_bytes();
        message.extend_from_slice(&answer);
        writer.write_all(&message).unwrap();
    }
}

/// One HTTP/1.1 message's body (its length from `content-length`), or `None` at the end of
/// the connection.
pub fn read_message(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("a numeric content-length");
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// A keep-alive connection sending 2026-07-28 `tools/call`s: no session, the `_meta` envelope
/// and the headers that repeat the body.
pub struct Client {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    host: String,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connecting to the server");
        stream.set_nodelay(true).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Client { stream, reader, host: format!("127.0.0.1:{port}") }
    }

    /// Calls `echo` with `text` and returns the answer's body.
    pub fn echo(&mut self, id: usize, text: &str) -> String {
        let params = json!({"name": "echo", "arguments": {"text": text}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}});
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: echo\r\ncontent-length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        self.stream.write_all((head + &body).as_bytes()).expect("writing to the server");
        let answer = read_message(&mut self.reader).expect("the server closed the connection");
        String::from_utf8(answer).expect("a UTF-8 answer")
    }
}
