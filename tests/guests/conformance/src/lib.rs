//! The tools, resources, prompts and completions the MCP conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.16, server mode) asks for, with the names, arguments and
//! results its scenarios assert (see tests/conformance/README.md). A `corral:plugin@0.2.0` plugin
//! (world `full`).
//!
//! Not here: `test_reconnection` (closing the SSE stream mid-call is the transport's business, not a
//! plugin's).
//!
//! Beyond the suite, the host's own tests (tests/surface.rs) use `ask_user` and `ask_model` (the
//! answer, or the error, as JSON text; optional as tasks), `touch` (reports a resource updated) and the
//! `fixture://` resources. Two variables (granted by a manifest) make a second copy load beside the
//! first for the namespacing tests: `FIXTURE_TOOL_PREFIX` prefixes every tool name, and
//! `FIXTURE_NO_RESOURCES` (any value) leaves out the resources and templates.

wit_bindgen::generate!({ path: "../../../wit/v0.2", world: "full" });

use std::time::Duration;

use corral::plugin::host::{self, ElicitAction, LogLevel, ModelPreferences, RequestError, SamplingRequest};
use corral::plugin::messages::{Message, Role};
use corral::plugin::types::{Annotations, Blob, Content, EmbeddedResource, ResourceBody, TaskSupport};
use exports::corral::plugin::completions::{self, Completion, Reference};
use exports::corral::plugin::prompts::{self, Prompt, PromptArgument, PromptError, PromptResult};
use exports::corral::plugin::resources::{self, Contents, ReadError, Resource, ResourceTemplate};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};

/// Arguments of the tools that take none.
const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;

/// `json-schema-2020-12` checks that `$schema`, `$defs` and `additionalProperties` survive `tools/list`, and
/// (0.2.0-alpha.12, SEP-2106) `$anchor`, `allOf`/`anyOf` and `if`/`then`/`else` too.
const JSON_SCHEMA_2020_12: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
    }
  },
  "properties": {
    "name": { "type": "string" },
    "address": { "$ref": "#/$defs/address" },
    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
    "phone": { "type": "string" },
    "email": { "type": "string" }
  },
  "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
  "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
  "then": { "required": ["phone"] },
  "else": { "required": ["email"] },
  "additionalProperties": false
}"##;

/// A 1×1 red pixel, 8-bit RGB PNG.
const RED_PIXEL_PNG: [u8; 69] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, //
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, //
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0x00, //
    0x00, 0x03, 0x01, 0x01, 0x00, 0xf7, 0x03, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, //
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A tenth of a second of silence: RIFF/WAVE, PCM, mono, 8 kHz, 16 bit.
fn silent_wav() -> Vec<u8> {
    const RATE: u32 = 8000;
    const SAMPLES: u32 = RATE / 10;
    let data_len = SAMPLES * 2;
    let mut wav = Vec::with_capacity(44 + data_len as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // channels
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&(RATE * 2).to_le_bytes()); // byte rate
    wav.extend_from_slice(&2u16.to_le_bytes()); // block align
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.resize(44 + data_len as usize, 0);
    wav
}

fn tool(name: &str, description: &str, input_schema: &str) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: input_schema.into(),
        output_schema: None,
        annotations: Annotations { title: None, read_only: Some(true), destructive: None, idempotent: None, open_world: Some(false) },
        task_support: TaskSupport::Forbidden,
    }
}

fn required_task_tool(name: &str, description: &str, input_schema: &str) -> Tool {
    Tool { task_support: TaskSupport::Required, ..tool(name, description, input_schema) }
}

const GREET_ARGS: &str = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;
const SLOW_ARGS: &str = r#"{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}"#;
const CONFIRM_ARGS: &str = r#"{"type":"object","properties":{"filename":{"type":"string"}}}"#;

/// A number field of a JSON object, found by hand like [`string_field`].
fn number_field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+')).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Sleeps `seconds` in short steps, so a cancelled call stops at its next step.
fn sleep_for(seconds: f64) {
    let mut left = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    while !left.is_zero() {
        let step = left.min(Duration::from_millis(50));
        std::thread::sleep(step);
        left -= step;
    }
}

fn task_tool(name: &str, description: &str, input_schema: &str) -> Tool {
    Tool { task_support: TaskSupport::Optional, ..tool(name, description, input_schema) }
}

const SAMPLING_ARGS: &str = r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#;
const ELICITATION_ARGS: &str = r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#;
const ASK_ARGS: &str = r#"{"type":"object","properties":{"message":{"type":"string"},"schema":{"type":"object"}},"required":["message"]}"#;
const TOUCH_ARGS: &str = r#"{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}"#;

/// `test_elicitation`'s form.
const USER_SCHEMA: &str = r#"{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}"#;

/// SEP-1034: a default for every primitive type.
const DEFAULTS_SCHEMA: &str = r#"{"type":"object","properties":{
  "name":{"type":"string","default":"John Doe"},
  "age":{"type":"integer","default":30},
  "score":{"type":"number","default":95.5},
  "status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
  "verified":{"type":"boolean","default":true}}}"#;

/// SEP-1330: the five enum shapes.
const ENUMS_SCHEMA: &str = r#"{"type":"object","properties":{
  "untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
  "titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
  "legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
  "untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
  "titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}"#;

/// A string field of a JSON object, found by hand (the fixture has no JSON parser).
fn string_field(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// The object under `key` of a JSON object, as text (balanced braces, strings skipped).
fn object_field(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start();
    if !rest.starts_with('{') {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    for (i, c) in rest.char_indices() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (false, _, '"') => in_string = true,
            (false, _, '{') => depth += 1,
            (false, _, '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(rest[..=i].to_owned());
                }
            }
            _ => {}
        }
    }
    None
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    }
}

fn error_json(e: &RequestError) -> String {
    let (kind, text) = match e {
        RequestError::Unsupported(t) => ("unsupported", t),
        RequestError::Invalid(t) => ("invalid", t),
        RequestError::Refused(t) => ("refused", t),
        RequestError::Unavailable(t) => ("unavailable", t),
    };
    format!(r#"{{"error":{},"message":{}}}"#, quote(kind), quote(text))
}

fn error_text(e: &RequestError) -> String {
    match e {
        RequestError::Unsupported(t) | RequestError::Invalid(t) | RequestError::Refused(t) | RequestError::Unavailable(t) => t.clone(),
    }
}

fn tool_error(text: String) -> CallResult {
    CallResult { content: vec![Content::Text(text)], structured: None, is_error: true }
}

fn sampling(prompt: &str) -> SamplingRequest {
    SamplingRequest {
        messages: vec![Message { role: Role::User, content: Content::Text(prompt.into()) }],
        system_prompt: None,
        max_tokens: 100,
        temperature: None,
        stop_sequences: vec![],
        model_preferences: Some(ModelPreferences { hints: vec![], cost_priority: None, speed_priority: None, intelligence_priority: Some(0.5) }),
    }
}

fn first_text(content: &[Content]) -> String {
    content.iter().find_map(|c| if let Content::Text(t) = c { Some(t.clone()) } else { None }).unwrap_or_default()
}

fn text(s: &str) -> Content {
    Content::Text(s.into())
}

fn ok(content: Vec<Content>) -> CallResult {
    CallResult { content, structured: None, is_error: false }
}

fn pause() {
    std::thread::sleep(Duration::from_millis(50));
}

struct Conformance;

fn tool_prefix() -> String {
    std::env::var("FIXTURE_TOOL_PREFIX").unwrap_or_default()
}

impl Guest for Conformance {
    fn list_tools() -> Vec<Tool> {
        let prefix = tool_prefix();
        let tools = vec![
            tool("test_simple_text", "Returns one text block.", NO_ARGS),
            tool("test_image_content", "Returns a 1x1 red PNG image.", NO_ARGS),
            tool("test_audio_content", "Returns a short silent WAV clip.", NO_ARGS),
            tool("test_embedded_resource", "Returns an embedded text resource.", NO_ARGS),
            tool("test_multiple_content_types", "Returns text, an image and an embedded JSON resource.", NO_ARGS),
            tool("test_tool_with_logging", "Logs three info messages 50 ms apart while it runs.", NO_ARGS),
            tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100, 50 ms apart.", NO_ARGS),
            tool("test_error_handling", "Always fails with a tool error (isError).", NO_ARGS),
            tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
            tool("test_sampling", "Asks the client's model to answer `prompt`.", SAMPLING_ARGS),
            tool("test_elicitation", "Asks the user for a username and an email.", ELICITATION_ARGS),
            tool("test_elicitation_sep1034_defaults", "Asks the user a form with defaults for every primitive type.", NO_ARGS),
            tool("test_elicitation_sep1330_enums", "Asks the user a form with the five enum shapes.", NO_ARGS),
            task_tool("ask_user", "Elicits `message` with `schema` (default: one string `answer`); returns the answer or the error as JSON.", ASK_ARGS),
            task_tool("ask_model", "Samples an answer to `message`; returns it or the error as JSON.", ASK_ARGS),
            tool("touch", "Reports resource `uri` updated.", TOUCH_ARGS),
            // 2026-07-28 (conformance 0.2.0-alpha.12): `server-stateless`.
            tool("test_missing_capability", "Asks the client's model; a request without `sampling` must be refused with -32021.", NO_ARGS),
            tool("test_streaming_elicitation", "Asks the user; on the 2026-07-28 wire that never becomes a server-to-client request.", NO_ARGS),
            tool("test_logging_tool", "Logs three info messages; sent only when the request names a log level.", NO_ARGS),
            // The tasks extension scenarios (`tasks-*`).
            tool("greet", "Says hello to `name` (never a task).", GREET_ARGS),
            task_tool("slow_compute", "Sleeps `seconds` seconds, then answers `label` (optional task: inline when quick).", SLOW_ARGS),
            required_task_tool("failing_job", "Fails with a tool error (isError) after about a second; always a task.", NO_ARGS),
            required_task_tool("protocol_error_job", "Traps, which the host reports as a failure; always a task.", NO_ARGS),
            required_task_tool("confirm_delete", "Asks the user to confirm deleting `filename`; always a task.", CONFIRM_ARGS),
        ];
        tools.into_iter().map(|t| Tool { name: format!("{prefix}{}", t.name), ..t }).collect()
    }

    fn call_tool(name: String, _arguments: String) -> CallResult {
        let name = name.strip_prefix(&tool_prefix()).map(str::to_owned).unwrap_or(name);
        let png = || Content::Image(Blob { data: RED_PIXEL_PNG.to_vec(), mime_type: "image/png".into() });
        match name.as_str() {
            "test_simple_text" => ok(vec![text("This is a simple text response for testing.")]),
            "test_image_content" => ok(vec![png()]),
            "test_audio_content" => ok(vec![Content::Audio(Blob { data: silent_wav(), mime_type: "audio/wav".into() })]),
            "test_embedded_resource" => ok(vec![Content::Embedded(EmbeddedResource {
                uri: "test://embedded-resource".into(),
                mime_type: Some("text/plain".into()),
                body: ResourceBody::Text("This is an embedded resource content.".into()),
            })]),
            "test_multiple_content_types" => ok(vec![
                text("Multiple content types test:"),
                png(),
                Content::Embedded(EmbeddedResource {
                    uri: "test://mixed-content-resource".into(),
                    mime_type: Some("application/json".into()),
                    body: ResourceBody::Text(r#"{"test":"data","value":123}"#.into()),
                }),
            ]),
            "test_tool_with_logging" => {
                host::log(LogLevel::Info, "Tool execution started");
                pause();
                host::log(LogLevel::Info, "Tool processing data");
                pause();
                host::log(LogLevel::Info, "Tool execution completed");
                ok(vec![text("Tool with logging executed successfully")])
            }
            "test_tool_with_progress" => {
                host::progress(0.0, Some(100.0), None);
                pause();
                host::progress(50.0, Some(100.0), None);
                pause();
                host::progress(100.0, Some(100.0), None);
                ok(vec![text("Tool with progress executed successfully")])
            }
            "test_error_handling" => {
                CallResult { content: vec![text("This tool intentionally returns an error for testing")], structured: None, is_error: true }
            }
            "json_schema_2020_12_tool" => ok(vec![text("JSON Schema 2020-12 tool called")]),
            "test_missing_capability" => match host::sample(&sampling("Say hello")) {
                Ok(answer) => ok(vec![text(&format!("LLM response: {}", first_text(&answer.content)))]),
                Err(e) => ok(vec![text(&format!("sampling unavailable: {}", error_text(&e)))]),
            },
            "test_streaming_elicitation" => match host::elicit("Please enter your name", r#"{"type":"object","properties":{"name":{"type":"string"}}}"#) {
                Ok(answer) => ok(vec![text(&format!("User response: action={}", action_name(answer.action)))]),
                Err(e) => ok(vec![text(&format!("elicitation unavailable: {}", error_text(&e)))]),
            },
            "test_logging_tool" => {
                for line in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                    host::log(LogLevel::Info, line);
                }
                ok(vec![text("Tool with logging executed successfully")])
            }
            "greet" => ok(vec![text(&format!("Hello, {}!", string_field(&_arguments, "name").unwrap_or_else(|| "World".into())))]),
            "slow_compute" => {
                sleep_for(number_field(&_arguments, "seconds").unwrap_or(1.0));
                let label = string_field(&_arguments, "label").unwrap_or_else(|| "slow_compute".into());
                ok(vec![text(&format!("Computed {label}"))])
            }
            "failing_job" => {
                sleep_for(1.0);
                tool_error("failing_job always fails".into())
            }
            "protocol_error_job" => panic!("protocol_error_job fails on purpose"),
            "confirm_delete" => {
                let schema = r#"{"type":"object","properties":{"confirm":{"type":"boolean"}}}"#;
                match host::elicit("Please confirm", schema) {
                    Ok(answer) => ok(vec![text(&format!("User response: action={}", action_name(answer.action)))]),
                    Err(e) => ok(vec![text(&format!("elicitation unavailable: {}", error_text(&e)))]),
                }
            }
            "test_sampling" => {
                let prompt = string_field(&_arguments, "prompt").unwrap_or_default();
                match host::sample(&sampling(&prompt)) {
                    Ok(answer) => ok(vec![text(&format!("LLM response: {}", first_text(&answer.content)))]),
                    Err(e) => tool_error(format!("sampling failed: {}", error_text(&e))),
                }
            }
            "test_elicitation" | "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
                let (message, schema, prefix) = match name.as_str() {
                    "test_elicitation" => (string_field(&_arguments, "message").unwrap_or_default(), USER_SCHEMA, "User response: "),
                    "test_elicitation_sep1034_defaults" => ("Please review these defaults".to_owned(), DEFAULTS_SCHEMA, "Elicitation completed: "),
                    _ => ("Please choose your options".to_owned(), ENUMS_SCHEMA, "Elicitation completed: "),
                };
                match host::elicit(&message, schema) {
                    Ok(answer) => {
                        ok(vec![text(&format!("{prefix}action={}, content={}", action_name(answer.action), answer.content.unwrap_or_else(|| "{}".into())))])
                    }
                    Err(e) => tool_error(format!("elicitation failed: {}", error_text(&e))),
                }
            }
            "ask_user" => {
                let message = string_field(&_arguments, "message").unwrap_or_default();
                let schema = object_field(&_arguments, "schema").unwrap_or_else(|| r#"{"type":"object","properties":{"answer":{"type":"string"}}}"#.into());
                host::log(LogLevel::Info, "asking the user");
                let answer = match host::elicit(&message, &schema) {
                    Ok(a) => format!(r#"{{"action":{},"content":{}}}"#, quote(action_name(a.action)), a.content.unwrap_or_else(|| "null".into())),
                    Err(e) => error_json(&e),
                };
                ok(vec![text(&answer)])
            }
            "ask_model" => {
                let message = string_field(&_arguments, "message").unwrap_or_default();
                let answer = match host::sample(&sampling(&message)) {
                    Ok(a) => format!(
                        r#"{{"text":{},"model":{},"stopReason":{}}}"#,
                        quote(&first_text(&a.content)),
                        quote(&a.model),
                        a.stop_reason.as_deref().map(quote).unwrap_or_else(|| "null".into())
                    ),
                    Err(e) => error_json(&e),
                };
                ok(vec![text(&answer)])
            }
            "touch" => {
                let uri = string_field(&_arguments, "uri").unwrap_or_default();
                host::resource_updated(&uri);
                ok(vec![text(&format!("touched {uri}"))])
            }
            other => CallResult { content: vec![text(&format!("unknown tool: {other}"))], structured: None, is_error: true },
        }
    }
}

fn resource(uri: &str, name: &str, description: &str, mime_type: &str) -> Resource {
    Resource { uri: uri.into(), name: name.into(), title: None, description: Some(description.into()), mime_type: Some(mime_type.into()), size: None }
}

fn text_contents(uri: &str, mime_type: &str, body: &str) -> Contents {
    Contents { uri: uri.into(), mime_type: Some(mime_type.into()), body: ResourceBody::Text(body.into()) }
}

fn no_resources() -> bool {
    std::env::var_os("FIXTURE_NO_RESOURCES").is_some()
}

impl resources::Guest for Conformance {
    fn list_resources() -> Vec<Resource> {
        if no_resources() {
            return Vec::new();
        }
        vec![
            resource("test://static-text", "static-text", "A static text resource", "text/plain"),
            resource("test://static-binary", "static-binary", "A static binary resource (a 1x1 PNG)", "image/png"),
            resource("test://watched-resource", "watched-resource", "A resource clients may subscribe to", "text/plain"),
        ]
    }

    fn list_resource_templates() -> Vec<ResourceTemplate> {
        if no_resources() {
            return Vec::new();
        }
        vec![
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template-data".into(),
                title: None,
                description: Some("Data for an id".into()),
                mime_type: Some("application/json".into()),
            },
            ResourceTemplate {
                uri_template: "fixture://{+path}".into(),
                name: "fixture".into(),
                title: None,
                description: Some("Echoes the path; `fixture://missing` is not found, `fixture://fail` fails".into()),
                mime_type: Some("text/plain".into()),
            },
        ]
    }

    fn read_resource(uri: String) -> Result<Vec<Contents>, ReadError> {
        match uri.as_str() {
            "test://static-text" => Ok(vec![text_contents(&uri, "text/plain", "This is the content of the static text resource.")]),
            "test://static-binary" => Ok(vec![Contents { uri, mime_type: Some("image/png".into()), body: ResourceBody::Bytes(RED_PIXEL_PNG.to_vec()) }]),
            "test://watched-resource" => Ok(vec![text_contents(&uri, "text/plain", "Watched resource content.")]),
            "fixture://missing" => Err(ReadError::NotFound),
            "fixture://fail" => Err(ReadError::Failed("the fixture fails on purpose".into())),
            _ => {
                if let Some(id) = uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
                    let body = format!(r#"{{"id":{},"templateTest":true,"data":{}}}"#, quote(id), quote(&format!("Data for ID: {id}")));
                    return Ok(vec![text_contents(&uri, "application/json", &body)]);
                }
                match uri.strip_prefix("fixture://") {
                    Some(path) => Ok(vec![text_contents(&uri, "text/plain", &format!("path: {path}"))]),
                    None => Err(ReadError::NotFound),
                }
            }
        }
    }
}

fn argument(name: &str, description: &str) -> PromptArgument {
    PromptArgument { name: name.into(), title: None, description: Some(description.into()), required: true }
}

fn prompt(name: &str, description: &str, arguments: Vec<PromptArgument>) -> Prompt {
    Prompt { name: name.into(), title: None, description: Some(description.into()), arguments }
}

fn user(content: Content) -> Message {
    Message { role: Role::User, content }
}

impl prompts::Guest for Conformance {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("test_simple_prompt", "A simple prompt without arguments", vec![]),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two required arguments",
                vec![argument("arg1", "First test argument"), argument("arg2", "Second test argument")],
            ),
            prompt("test_prompt_with_embedded_resource", "A prompt that embeds a resource", vec![argument("resourceUri", "URI of the resource to embed")]),
            prompt("test_prompt_with_image", "A prompt with an image", vec![]),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<(String, String)>) -> Result<PromptResult, PromptError> {
        let arg = |key: &str| arguments.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default();
        let messages = match name.as_str() {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
            "test_prompt_with_arguments" => vec![user(text(&format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))))],
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri");
                if !uri.contains(':') {
                    return Err(PromptError::InvalidArguments(format!("resourceUri {uri:?} is not a URI")));
                }
                vec![
                    user(Content::Embedded(EmbeddedResource {
                        uri,
                        mime_type: Some("text/plain".into()),
                        body: ResourceBody::Text("Embedded resource content for testing.".into()),
                    })),
                    user(text("Please process the embedded resource above.")),
                ]
            }
            "test_prompt_with_image" => {
                vec![user(Content::Image(Blob { data: RED_PIXEL_PNG.to_vec(), mime_type: "image/png".into() })), user(text("Please analyze the image above."))]
            }
            other => return Err(PromptError::Failed(format!("no prompt {other}"))),
        };
        Ok(PromptResult { description: None, messages })
    }
}

impl completions::Guest for Conformance {
    fn complete(reference: Reference, argument: String, value: String, _context: Vec<(String, String)>) -> Completion {
        let candidates: Vec<String> = match (&reference, argument.as_str()) {
            (Reference::Prompt(_), "arg1" | "arg2") => ["test", "testing", "tested", "other"].map(String::from).to_vec(),
            (Reference::ResourceTemplate(_), "id") => (1..=150).map(|n| n.to_string()).collect(),
            _ => Vec::new(),
        };
        let values: Vec<String> = candidates.into_iter().filter(|c| c.starts_with(&value)).collect();
        Completion { total: Some(values.len() as u32), values, has_more: false }
    }
}

export!(Conformance);
