//! The tools the MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, server mode) calls,
//! with the names, arguments and results its scenarios assert (see tests/conformance/README.md).
//!
//! Not here: `test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
//! `test_elicitation_sep1330_enums` (the host cannot ask the client yet) and `test_reconnection`
//! (closing the SSE stream mid-call is the transport's business, not a plugin's).

wit_bindgen::generate!({ path: "../../../wit", world: "plugin" });

use std::time::Duration;

use corral::plugin::host::{self, LogLevel};
use corral::plugin::types::{Annotations, Blob, Content, EmbeddedResource, ResourceBody, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};

/// Arguments of the tools that take none.
const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;

/// `json-schema-2020-12` checks that `$schema`, `$defs` and `additionalProperties` survive `tools/list`.
const JSON_SCHEMA_2020_12: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "type": "object",
      "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
    }
  },
  "properties": {
    "name": { "type": "string" },
    "address": { "$ref": "#/$defs/address" }
  },
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

impl Guest for Conformance {
    fn list_tools() -> Vec<Tool> {
        vec![
            tool("test_simple_text", "Returns one text block.", NO_ARGS),
            tool("test_image_content", "Returns a 1x1 red PNG image.", NO_ARGS),
            tool("test_audio_content", "Returns a short silent WAV clip.", NO_ARGS),
            tool("test_embedded_resource", "Returns an embedded text resource.", NO_ARGS),
            tool("test_multiple_content_types", "Returns text, an image and an embedded JSON resource.", NO_ARGS),
            tool("test_tool_with_logging", "Logs three info messages 50 ms apart while it runs.", NO_ARGS),
            tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100, 50 ms apart.", NO_ARGS),
            tool("test_error_handling", "Always fails with a tool error (isError).", NO_ARGS),
            tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
        ]
    }

    fn call_tool(name: String, _arguments: String) -> CallResult {
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
            "test_error_handling" => CallResult {
                content: vec![text("This tool intentionally returns an error for testing")],
                structured: None,
                is_error: true,
            },
            "json_schema_2020_12_tool" => ok(vec![text("JSON Schema 2020-12 tool called")]),
            other => CallResult { content: vec![text(&format!("unknown tool: {other}"))], structured: None, is_error: true },
        }
    }
}

export!(Conformance);
