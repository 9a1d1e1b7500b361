//! A whole HTTP answer as the suites that speak raw HTTP to the host read it, and the SSE
//! parsing it needs: one JSON body, or the `data` of each event of a `text/event-stream`.

use serde_json::Value;

/// A whole HTTP answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {} {:?}\n{}", self.status, self.headers, self.body)
    }
}

impl Reply {
    /// Reads `response` whole: status, headers and body.
    pub fn read(response: ureq::http::Response<ureq::Body>) -> Result<Reply, ureq::Error> {
        let status = response.status().as_u16();
        let headers = response.headers().iter().map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect();
        Ok(Reply { status, headers, body: response.into_body().read_to_string()? })
    }

    /// The first header of that name (in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    /// The body, which must be JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("the body is not JSON ({e}): {self:?}"))
    }

    /// The JSON-RPC messages of the answer: the `data` of each event for SSE, else the body.
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type().starts_with("text/event-stream") {
            let mut parser = SseParser::default();
            let mut events: Vec<Value> = self.body.split_inclusive('\n').filter_map(|l| parser.line(l)).map(|e| e.json()).collect();
            events.extend(parser.line("\n").map(|e| e.json()));
            events
        } else {
            vec![self.json()]
        }
    }

    /// The JSON-RPC response the answer ends with.
    pub fn answer(&self) -> Value {
        let messages = self.messages();
        let last = messages.last().cloned().unwrap_or_else(|| panic!("no message in {self:?}"));
        assert!(last.get("result").is_some() || last.get("error").is_some(), "the answer does not end with a response: {self:?}");
        last
    }
}

/// One event of an SSE stream that carried data.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

impl SseEvent {
    /// The data, which must be JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {self:?}"))
    }
}

/// Line-by-line SSE parsing: an event ends at a blank line; comments (keep-alives) and events
/// without data are skipped.
#[derive(Default)]
pub struct SseParser {
    id: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    /// Takes one line; the event it ends, if any.
    pub fn line(&mut self, line: &str) -> Option<SseEvent> {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.is_empty() {
            let id = self.id.take();
            if self.data.is_empty() {
                return None;
            }
            let data = std::mem::take(&mut self.data).join("\n");
            return Some(SseEvent { id, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "data" => self.data.push(value.to_owned()),
            "id" => self.id = Some(value.to_owned()),
            _ => {}
        }
        None
    }
}
