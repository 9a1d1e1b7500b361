//! `corral tasks result`: an ended task's outcome, whole. A result too large to send inline was
//! kept by reference (`server::result_links`): its large pieces are pages in the store, linked
//! from the result as `corral://results/{id}/{n}`. They are read back here, page by page, so a
//! person sees the whole text where the link stood and a script gets each piece whole (`kept`).

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail};
use serde_json::{json, Value};

use super::unknown;
use crate::cli::args::TasksIdArgs;
use crate::server::RESULTS_SCHEME;
use crate::tasks::{now_ms, Outcome, PartKind, StoreError, TaskStore};

/// One kept piece of a result, read back whole.
struct Kept {
    uri: String,
    part: u32,
    kind: PartKind,
    mime_type: Option<String>,
    data: String,
}

/// Prints the outcome; exits 1 unless it is a result the tool did not mark as an error.
pub async fn print(store: Arc<dyn TaskStore>, args: TasksIdArgs) -> anyhow::Result<ExitCode> {
    let Some(detail) = store.inspect(&args.id).await? else { bail!("{}", unknown(&args.id)) };
    let task = &detail.task;
    if !task.status.is_terminal() {
        eprintln!("corral: task {} is still {}: it has no result yet (`corral tasks watch` follows it)", task.id, task.status.as_str());
        return Ok(ExitCode::from(1));
    }
    let outcome = store.outcome(&task.id).await?.ok_or_else(|| StoreError::MissingOutcome { id: task.id.clone() })?;
    let (result, error) = match &outcome {
        Outcome::Result(value) | Outcome::Failed { result: value, .. } => (Some(value.clone()), None),
        Outcome::Error(error) => (None, Some(error.clone())),
        Outcome::Cancelled | Outcome::Interrupted => (None, None),
    };
    let mut kept = Vec::new();
    for uri in result.as_ref().map(kept_uris).unwrap_or_default() {
        kept.push(read_kept(&*store, &task.owner, &uri).await?);
    }
    let failure = match &outcome {
        Outcome::Failed { kind, .. } => Some(kind.clone()),
        _ => None,
    };
    let tool_error = result.as_ref().is_some_and(|r| r.get("isError") == Some(&Value::Bool(true)));
    let ok = matches!(outcome, Outcome::Result(_)) && !tool_error;
    if args.store.json {
        let kept: Vec<Value> = kept
            .iter()
            .map(|k| json!({ "uri": k.uri, "part": k.part, "kind": k.kind.as_str(), "mime_type": k.mime_type, "size": k.data.len(), "data": k.data }))
            .collect();
        let shown = json!({
            "task_id": task.id,
            "status": task.status.as_str(),
            "outcome": outcome.kind().as_str(),
            "failure": failure,
            "message": task.status_message,
            "result": result,
            "error": error,
            "kept": kept,
        });
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        match (&outcome, &result, &error) {
            (_, Some(result), _) => print_result(result, &kept),
            (_, _, Some(error)) => println!("error {}: {}", error["code"], error["message"].as_str().unwrap_or("")),
            (Outcome::Cancelled, ..) => println!("cancelled: {}", task.status_message.as_deref().unwrap_or("the task was cancelled")),
            _ => println!("interrupted: {}", task.status_message.as_deref().unwrap_or("a host restart interrupted the task")),
        }
        if let Some(kind) = &failure {
            eprintln!("corral: the host ended the call: {kind}");
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The `corral://results/…` links the result lists as kept (`_meta["corral/byReference"]`).
fn kept_uris(result: &Value) -> Vec<String> {
    let parts = result.pointer("/_meta/corral~1byReference/parts").and_then(Value::as_array);
    parts.into_iter().flatten().filter_map(|p| p["uri"].as_str()).filter(|uri| uri.starts_with(RESULTS_SCHEME)).map(str::to_owned).collect()
}

/// Every page of the kept piece `uri`, joined.
async fn read_kept(store: &dyn TaskStore, owner: &str, uri: &str) -> anyhow::Result<Kept> {
    let (id, part) = uri
        .strip_prefix(RESULTS_SCHEME)
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(id, n)| Some((id, n.parse::<u32>().ok()?)))
        .ok_or_else(|| anyhow!("the result links {uri}, which names no kept result"))?;
    let mut data = String::new();
    let mut page = 0;
    loop {
        let Some(read) = store.result_page(owner, id, part, page, now_ms()).await? else {
            bail!("the result's piece {uri} is no longer kept (it expired with its task)");
        };
        data.push_str(&read.data);
        page += 1;
        if page >= read.pages {
            return Ok(Kept { uri: uri.to_owned(), part, kind: read.kind, mime_type: read.mime_type, data });
        }
    }
}

/// A `CallToolResult` for people: its texts, a kept piece whole in place of its stand-in and
/// link, other blocks as JSON, and the structured output when there is nothing else.
fn print_result(result: &Value, kept: &[Kept]) {
    let kept: HashMap<&str, &Kept> = kept.iter().map(|k| (k.uri.as_str(), k)).collect();
    let blocks = result["content"].as_array().cloned().unwrap_or_default();
    let link_of = |block: Option<&Value>| block.filter(|b| b["type"] == "resource_link").and_then(|b| b["uri"].as_str()).and_then(|uri| kept.get(uri).copied());
    let mut i = 0;
    while i < blocks.len() {
        if let Some(piece) = link_of(blocks.get(i + 1)).filter(|_| blocks[i]["type"] == "text") {
            match piece.kind {
                PartKind::Text => println!("{}", piece.data),
                PartKind::Blob => {
                    println!("[binary content, {} bytes of base64{}]", piece.data.len(), piece.mime_type.as_ref().map(|m| format!(", {m}")).unwrap_or_default())
                }
            }
            i += 2;
            continue;
        }
        match blocks[i]["text"].as_str() {
            Some(text) if blocks[i]["type"] == "text" => println!("{text}"),
            _ => println!("{}", blocks[i]),
        }
        i += 1;
    }
    if blocks.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            println!("{}", serde_json::to_string_pretty(structured).unwrap_or_default());
        }
    }
}
