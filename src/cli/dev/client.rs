//! Running fixture calls the way a client makes them: an MCP session of the host's own (the
//! stdio transport, over in-process pipes), so a fixture goes through everything a real call
//! does: the catalog, the policy, tasks (`tools/call` with `task`, then `tasks/result`) and the
//! requests a call makes to its client, which the fixture's scripted answers reply to.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::fixtures::Fixture;
use crate::mcp::types::LATEST_PROTOCOL_VERSION;
use crate::server::Host;

/// How one fixture call went.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub fixture: String,
    pub tool: String,
    pub took: Duration,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    /// The call answered, with the wrong result.
    Fail(String),
    /// The call did not answer with a result: a JSON-RPC error, or no answer in time.
    Error(String),
}

/// Runs `fixtures` one after the other on a session of their own.
pub async fn run_all(host: &Arc<Host>, fixtures: &[Fixture]) -> anyhow::Result<Vec<Outcome>> {
    let mut client = Client::connect(host.clone()).await?;
    let mut outcomes = Vec::new();
    for fixture in fixtures {
        let started = Instant::now();
        let verdict = match client.call(fixture).await {
            Ok(result) => match fixture.expect.mismatch(&result) {
                None => Verdict::Pass,
                Some(why) => Verdict::Fail(why),
            },
            Err(e) => Verdict::Error(e),
        };
        outcomes.push(Outcome { fixture: fixture.name.clone(), tool: fixture.tool.clone(), took: started.elapsed(), verdict });
    }
    Ok(outcomes)
}

/// A session of the host's own, spoken to as a client.
struct Client {
    to_server: std::io::PipeWriter,
    from_server: mpsc::UnboundedReceiver<Value>,
    next_id: u64,
}

impl Client {
    async fn connect(host: Arc<Host>) -> anyhow::Result<Client> {
        let (server_in, to_server) = std::io::pipe()?;
        let (from_server, server_out) = std::io::pipe()?;
        // Ends when `to_server` is dropped: the session's input ends.
        tokio::spawn(async move {
            if let Err(e) = crate::transport::stdio::serve(host, server_in, server_out, std::future::pending()).await {
                tracing::warn!("the fixtures' session: {e:#}");
            }
        });
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new().name("corral-fixtures".into()).spawn(move || {
            for line in BufReader::new(from_server).lines() {
                let Ok(line) = line else { return };
                let Ok(message) = serde_json::from_str::<Value>(&line) else { return };
                if tx.send(message).is_err() {
                    return;
                }
            }
        })?;
        let mut client = Client { to_server, from_server: rx, next_id: 0 };
        let params = json!({ "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": { "elicitation": {} }, "clientInfo": { "name": "corral-fixtures", "version": env!("CARGO_PKG_VERSION") } });
        client.request("initialize", params, &mut VecDeque::new(), Duration::from_secs(60)).await.map_err(anyhow::Error::msg)?;
        client.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).map_err(anyhow::Error::msg)?;
        Ok(client)
    }

    /// The fixture's call: its result, or why there is none.
    async fn call(&mut self, fixture: &Fixture) -> Result<Value, String> {
        let deadline = fixture.timeout;
        let mut answers: VecDeque<Value> = fixture.answers.iter().cloned().collect();
        let mut params = json!({ "name": fixture.tool, "arguments": fixture.arguments });
        if fixture.task {
            params["task"] = json!({});
        }
        let started = Instant::now();
        let result = self.request("tools/call", params, &mut answers, deadline).await?;
        if !fixture.task {
            return Ok(result);
        }
        let Some(id) = result["task"]["taskId"].as_str() else { return Err(format!("called as a task, the tool answered without one: {result}")) };
        self.request("tasks/result", json!({ "taskId": id }), &mut answers, deadline.saturating_sub(started.elapsed())).await
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.to_server.write_all(line.as_bytes()).map_err(|e| format!("the session is gone: {e}"))
    }

    /// Sends a request and waits for its answer, replying to what the host asks meanwhile.
    async fn request(&mut self, method: &str, params: Value, answers: &mut VecDeque<Value>, within: Duration) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let message = match tokio::time::timeout_at(deadline, self.from_server.recv()).await {
                Ok(Some(message)) => message,
                Ok(None) => return Err("the session ended".into()),
                Err(_) => return Err(format!("no answer to {method} within {}", humantime::format_duration(within))),
            };
            if message["id"] == json!(id) && message.get("method").is_none() {
                return match message.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}")),
                    None => Ok(message["result"].clone()),
                };
            }
            if let (Some(asked), Some(request)) = (message["method"].as_str(), message.get("id")) {
                let reply = match asked {
                    "elicitation/create" => match answers.pop_front() {
                        Some(answer) => json!({ "jsonrpc": "2.0", "id": request, "result": answer }),
                        None => {
                            json!({ "jsonrpc": "2.0", "id": request, "error": { "code": -32603, "message": "the fixture scripts no (more) answers to elicitation/create" } })
                        }
                    },
                    "roots/list" => json!({ "jsonrpc": "2.0", "id": request, "result": { "roots": [] } }),
                    "ping" => json!({ "jsonrpc": "2.0", "id": request, "result": {} }),
                    other => json!({ "jsonrpc": "2.0", "id": request, "error": { "code": -32601, "message": format!("a fixture cannot answer {other}") } }),
                };
                self.send(&reply)?;
            }
        }
    }
}

/// The outcomes as people read them, one line each.
pub fn lines(plugin: &str, outcomes: &[Outcome]) -> String {
    let mut text = String::new();
    for o in outcomes {
        let took = humantime::format_duration(Duration::from_millis(o.took.as_millis() as u64));
        match &o.verdict {
            Verdict::Pass => text.push_str(&format!("  ok    {plugin}: {} ({took})\n", o.fixture)),
            Verdict::Fail(why) => text.push_str(&format!("  FAIL  {plugin}: {} ({took}): {why}\n", o.fixture)),
            Verdict::Error(why) => text.push_str(&format!("  ERROR {plugin}: {} ({took}): {why}\n", o.fixture)),
        }
    }
    let passed = outcomes.iter().filter(|o| o.verdict == Verdict::Pass).count();
    text.push_str(&format!("  {plugin}: {passed} of {} fixtures passed", outcomes.len()));
    text
}
