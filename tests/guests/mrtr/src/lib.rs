//! A `corral:plugin@0.3.0` fixture (world `full`): input under keys the plugin chooses.
//!
//! The conformance suite's `input-required-result-*` scenarios (0.2.0-alpha.12, 2026-07-28) call the
//! `test_input_required_result_*` tools and the `test_input_required_result_prompt` prompt with the
//! keys and texts they assert. The host's own tests use the rest:
//!
//! - `ask_two`: elicitation (`who`) and sampling (`model`) in one `ask`; the answers as JSON text,
//!   or the error as `{"error": {"kind", "message"}}`.
//! - `list_roots`: `input.roots()` as JSON text (same error shape).
//! - `ask_bad_keys`: an `ask` with a key used twice (the host refuses it before asking).
//! - `keep_checkpoint`: `checkpoint` then `resume` outside a task, and a checkpoint past the cap.
//! - `side_effect_after_ask`: logs "before ask" before asking, then answers; the tests count how
//!   often the log line is seen (a retried 2026-07-28 call runs the whole call again).
//! - resource template `mrtr://ask/{topic}`: a read that asks the user first.

wit_bindgen::generate!({ path: "../../../wit/v0.3", world: "full" });

use corral::plugin::checkpoints;
use corral::plugin::host::{self, ElicitAction, ElicitResponse, LogLevel, RequestError, SamplingRequest};
use corral::plugin::input::{self, ElicitRequest, InputRequest, InputResponse};
use corral::plugin::messages::{Message, Role};
use corral::plugin::types::{Annotations, Content, ResourceBody, TaskSupport};
use exports::corral::plugin::completions::{self, Completion, Reference};
use exports::corral::plugin::prompts::{self, Prompt, PromptError, PromptResult};
use exports::corral::plugin::resources::{self, Contents, ReadError, Resource, ResourceTemplate};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};

const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;

fn tool(name: &str, description: &str) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: NO_ARGS.into(),
        output_schema: None,
        annotations: Annotations { title: None, read_only: None, destructive: None, idempotent: None, open_world: None },
        task_support: TaskSupport::Forbidden,
    }
}

fn text(s: &str) -> Content {
    Content::Text(s.into())
}

fn ok(s: &str) -> CallResult {
    CallResult { content: vec![text(s)], structured: None, is_error: false }
}

fn failed(s: &str) -> CallResult {
    CallResult { content: vec![text(s)], structured: None, is_error: true }
}

/// A form with one property of `kind` called `field`, required.
fn form(key: &str, message: &str, field: &str, kind: &str) -> (String, InputRequest) {
    let schema = json!({"type":"object","properties":{field:{"type":kind}},"required":[field]});
    (key.into(), InputRequest::Elicit(ElicitRequest { message: message.into(), requested_schema: schema.to_string() }))
}

fn sample(key: &str, prompt: &str, max_tokens: u32) -> (String, InputRequest) {
    let request = SamplingRequest {
        messages: vec![Message { role: Role::User, content: text(prompt) }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: vec![],
        model_preferences: None,
    };
    (key.into(), InputRequest::Sample(request))
}

fn roots(key: &str) -> (String, InputRequest) {
    (key.into(), InputRequest::ListRoots)
}

fn error_json(e: &RequestError) -> Value {
    let (kind, message) = match e {
        RequestError::Unsupported(m) => ("unsupported", m),
        RequestError::Invalid(m) => ("invalid", m),
        RequestError::Refused(m) => ("refused", m),
        RequestError::Unavailable(m) => ("unavailable", m),
    };
    json!({"error": {"kind": kind, "message": message}})
}

fn elicited(r: &ElicitResponse) -> Value {
    let action = match r.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = r.content.as_deref().and_then(|c| serde_json::from_str::<Value>(c).ok()).unwrap_or(Value::Null);
    json!({"action": action, "content": content})
}

fn first_text(content: &[Content]) -> String {
    content.iter().find_map(|c| if let Content::Text(t) = c { Some(t.clone()) } else { None }).unwrap_or_default()
}

/// An answer as JSON: the form's action and content, the model's text, or the roots.
fn answer_json(r: &InputResponse) -> Value {
    match r {
        InputResponse::Elicit(e) => elicited(e),
        InputResponse::Sample(s) => json!({"model": s.model, "text": first_text(&s.content)}),
        InputResponse::Roots(roots) => Value::Array(roots.iter().map(|r| json!({"uri": r.uri, "name": r.name})).collect()),
    }
}

fn answers_json(answers: &[(String, InputResponse)]) -> Value {
    Value::Object(answers.iter().map(|(k, r)| (k.clone(), answer_json(r))).collect())
}

/// A field of an accepted form, as text.
fn field(answers: &[(String, InputResponse)], key: &str, name: &str) -> String {
    answers
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, r)| match r {
            InputResponse::Elicit(e) => e.content.as_deref().and_then(|c| serde_json::from_str::<Value>(c).ok()),
            _ => None,
        })
        .and_then(|c| c.get(name).cloned())
        .map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))
        .unwrap_or_default()
}

fn model_text(answers: &[(String, InputResponse)], key: &str) -> String {
    answers
        .iter()
        .find_map(|(k, r)| match r {
            InputResponse::Sample(s) if k == key => Some(first_text(&s.content)),
            _ => None,
        })
        .unwrap_or_default()
}

fn ask_or_fail(requests: Vec<(String, InputRequest)>, then: impl FnOnce(&[(String, InputResponse)]) -> CallResult) -> CallResult {
    match input::ask(&requests) {
        Ok(answers) => then(&answers),
        Err(e) => failed(&error_json(&e).to_string()),
    }
}

struct Fixture;

impl Guest for Fixture {
    fn list_tools() -> Vec<Tool> {
        vec![
            tool("test_input_required_result_elicitation", "Asks the user's name under the key user_name."),
            tool("test_input_required_result_sampling", "Asks the client's model under the key capital_question."),
            tool("test_input_required_result_list_roots", "Asks the client's roots under the key client_roots."),
            tool("test_input_required_result_request_state", "Asks for a confirmation; answers state-ok."),
            tool("test_input_required_result_multiple_inputs", "Asks a form, the model and the roots at once."),
            tool("test_input_required_result_multi_round", "Asks a name, then a colour, in two rounds."),
            tool("test_input_required_result_tampered_state", "Asks for a confirmation (its state is checked)."),
            tool("test_input_required_result_capabilities", "Asks a form and the model; without elicitation, the model only."),
            tool("ask_two", "Asks a form (who) and the model (model) in one ask; the answers as JSON."),
            tool("list_roots", "The client's roots as JSON."),
            tool("ask_bad_keys", "An ask with a key used twice."),
            tool("keep_checkpoint", "Checkpoints outside a task: kept, never resumed, capped."),
            tool("side_effect_after_ask", "Logs before asking the user; answers with the name."),
        ]
    }

    fn call_tool(name: String, _arguments: String) -> CallResult {
        match name.as_str() {
            "test_input_required_result_elicitation" => {
                ask_or_fail(vec![form("user_name", "What is your name?", "name", "string")], |a| ok(&format!("Hello, {}!", field(a, "user_name", "name"))))
            }
            "test_input_required_result_sampling" => {
                ask_or_fail(vec![sample("capital_question", "What is the capital of France?", 100)], |a| ok(&model_text(a, "capital_question")))
            }
            "test_input_required_result_list_roots" => ask_or_fail(vec![roots("client_roots")], |a| ok(&format!("Roots: {}", answers_json(a)["client_roots"]))),
            "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
                ask_or_fail(vec![form("confirm", "Please confirm", "ok", "boolean")], |a| ok(&format!("state-ok: ok={}", field(a, "confirm", "ok"))))
            }
            "test_input_required_result_multiple_inputs" => ask_or_fail(
                vec![form("user_name", "What is your name?", "name", "string"), sample("greeting", "Generate a greeting", 50), roots("client_roots")],
                |a| ok(&format!("All inputs: {}", answers_json(a))),
            ),
            "test_input_required_result_multi_round" => {
                let name = match input::ask(&[form("step1", "Step 1: What is your name?", "name", "string")]) {
                    Ok(a) => field(&a, "step1", "name"),
                    Err(e) => return failed(&error_json(&e).to_string()),
                };
                ask_or_fail(vec![form("step2", "Step 2: What is your favorite color?", "color", "string")], |a| {
                    ok(&format!("{name} likes {}", field(a, "step2", "color")))
                })
            }
            "test_input_required_result_capabilities" => {
                let both = vec![form("preferences", "What do you prefer?", "choice", "string"), sample("summary", "Summarise the preferences", 50)];
                match input::ask(&both) {
                    Ok(a) => ok(&format!("Both: {}", answers_json(&a))),
                    // Not every client can fill in forms: the model alone will do.
                    Err(RequestError::Unsupported(_)) => {
                        ask_or_fail(vec![sample("summary", "Summarise the preferences", 50)], |a| ok(&format!("Model only: {}", model_text(a, "summary"))))
                    }
                    Err(e) => failed(&error_json(&e).to_string()),
                }
            }
            "ask_two" => ask_or_fail(vec![form("who", "Who are you?", "name", "string"), sample("model", "Say hi", 20)], |a| ok(&answers_json(a).to_string())),
            "list_roots" => match input::roots() {
                Ok(roots) => ok(&answer_json(&InputResponse::Roots(roots)).to_string()),
                Err(e) => failed(&error_json(&e).to_string()),
            },
            "ask_bad_keys" => ask_or_fail(vec![roots("same"), roots("same")], |a| ok(&answers_json(a).to_string())),
            "keep_checkpoint" => {
                let kept = checkpoints::checkpoint(b"step 1");
                let resumed = checkpoints::resume();
                let too_big = checkpoints::checkpoint(&vec![0u8; (1 << 20) + 1]);
                ok(&json!({"kept": kept.is_ok(), "resume": resumed.map(|b| String::from_utf8_lossy(&b).into_owned()), "too_big": too_big.err()}).to_string())
            }
            "side_effect_after_ask" => {
                host::log(LogLevel::Info, "before ask");
                ask_or_fail(vec![form("who", "Who are you?", "name", "string")], |a| ok(&format!("Hello, {}!", field(a, "who", "name"))))
            }
            other => failed(&format!("unknown tool {other}")),
        }
    }
}

impl resources::Guest for Fixture {
    fn list_resources() -> Vec<Resource> {
        vec![]
    }

    fn list_resource_templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "mrtr://ask/{topic}".into(),
            name: "asked".into(),
            title: None,
            description: Some("A read that asks the user for the text first".into()),
            mime_type: Some("text/plain".into()),
        }]
    }

    fn read_resource(uri: String) -> Result<Vec<Contents>, ReadError> {
        let topic = uri.strip_prefix("mrtr://ask/").ok_or(ReadError::NotFound)?.to_owned();
        match input::ask(&[form("text", &format!("What should {topic} say?"), "text", "string")]) {
            Ok(a) => Ok(vec![Contents { uri, mime_type: Some("text/plain".into()), body: ResourceBody::Text(field(&a, "text", "text")) }]),
            Err(e) => Err(ReadError::Failed(error_json(&e).to_string())),
        }
    }
}

impl prompts::Guest for Fixture {
    fn list_prompts() -> Vec<Prompt> {
        vec![Prompt {
            name: "test_input_required_result_prompt".into(),
            title: None,
            description: Some("Asks the user for the prompt's context first".into()),
            arguments: vec![],
        }]
    }

    fn get_prompt(name: String, _arguments: Vec<(String, String)>) -> Result<PromptResult, PromptError> {
        if name != "test_input_required_result_prompt" {
            return Err(PromptError::Failed(format!("unknown prompt {name}")));
        }
        match input::ask(&[form("user_context", "What context should the prompt use?", "context", "string")]) {
            Ok(a) => Ok(PromptResult {
                description: None,
                messages: vec![Message { role: Role::User, content: text(&format!("Context: {}", field(&a, "user_context", "context"))) }],
            }),
            Err(e) => Err(PromptError::Failed(error_json(&e).to_string())),
        }
    }
}

impl completions::Guest for Fixture {
    fn complete(_reference: Reference, _argument: String, _value: String, _context: Vec<(String, String)>) -> Completion {
        Completion { values: vec![], total: None, has_more: false }
    }
}

export!(Fixture);
