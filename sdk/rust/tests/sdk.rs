//! The SDK on the host target: schemas from types, results from outputs, errors as `isError`.

use corral_plugin::{testing, Json, LogLevel, NoArgs, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Add {
    /// The first term.
    a: i64,
    /// The second term.
    #[serde(default)]
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

fn add(args: Add) -> Result<Json<Sum>, String> {
    args.a.checked_add(args.b).map(|sum| Json(Sum { sum })).ok_or_else(|| "the sum overflows".to_string())
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("add", "Adds two integers.", add).title("Add").read_only(true).idempotent(true),
        Tool::new("hello", "Says hello.", |_: NoArgs| Ok::<_, String>("hello".to_string())).task_support(TaskSupport::Optional),
        Tool::new("count", "Counts to three, logging and reporting progress.", count),
    ]
}

fn count(_: NoArgs) -> Result<String, String> {
    for i in 1..=3 {
        if corral_plugin::cancelled() {
            return Err(format!("cancelled at {i}"));
        }
        corral_plugin::progress(i as f64, Some(3.0), Some(&format!("{i}/3")));
    }
    corral_plugin::log(LogLevel::Info, "counted");
    Ok("3".into())
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Sizes {
    count: u64,
    small: u8,
    ratio: f64,
    at: Option<u32>,
    /// A property that happens to be called `format`.
    format: String,
}

#[test]
fn schemas_carry_only_formats_json_schema_defines() {
    let tool = Tool::new("sizes", "Sizes.", |_: Sizes| Ok::<_, String>(String::new()));
    let text = tool.input_schema().to_string();
    for made_up in ["uint64", "uint8", "double", "uint32", "uint"] {
        assert!(!text.contains(&format!("\"{made_up}\"")), "{made_up} in {text}");
    }
    let schema = tool.input_schema();
    assert_eq!(schema["properties"]["count"]["minimum"], 0, "the bound stays: {schema}");
    assert_eq!(schema["properties"]["format"]["type"], "string", "{schema}");
}

#[test]
fn the_tools_pass_the_hosts_checks() {
    testing::check(&tools());
}

#[test]
fn the_input_schema_comes_from_the_argument_type() {
    let schema = tools()[0].input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["properties"]["a"]["description"], "The first term.");
    assert_eq!(schema["required"], json!(["a"]), "a defaulted field is optional: {schema}");
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("title").is_none(), "the root title (the Rust type's name) is dropped: {schema}");
    assert_eq!(tools()[1].input_schema()["type"], "object", "NoArgs is an empty object");
}

#[test]
fn the_builder_sets_title_annotations_and_task_policy() {
    let add = tools()[0].describe();
    assert_eq!((add.name.as_str(), add.title.as_deref(), add.description.as_str()), ("add", Some("Add"), "Adds two integers."));
    assert_eq!((add.annotations.read_only, add.annotations.idempotent, add.annotations.destructive), (Some(true), Some(true), None));
    assert_eq!(add.task_support, TaskSupport::Forbidden);
    assert_eq!(tools()[1].describe().task_support, TaskSupport::Optional);
}

#[test]
fn structured_output_declares_a_schema_and_mirrors_its_json_as_text() {
    assert_eq!(tools()[0].output_schema().unwrap()["properties"]["sum"]["type"], "integer");
    assert!(tools()[1].output_schema().is_none(), "text output has no schema");
    let result = testing::call(&tools(), "add", json!({"a": 2, "b": 3}));
    assert!(!result.is_error);
    assert_eq!(result.structured_value(), Some(json!({"sum": 5})));
    assert_eq!(result.text_content(), r#"{"sum":5}"#);
}

#[test]
fn an_error_becomes_an_is_error_result_with_its_text() {
    let result = testing::call(&tools(), "add", json!({"a": i64::MAX, "b": 1}));
    assert!(result.is_error);
    assert_eq!(result.text_content(), "the sum overflows");
    assert_eq!(result.structured, None);
}

#[test]
fn bad_arguments_and_unknown_tools_are_is_error_results_that_say_so() {
    let result = testing::call(&tools(), "add", json!({"a": "two"}));
    assert!(result.is_error);
    assert!(result.text_content().starts_with("invalid arguments for `add`:"), "{}", result.text_content());
    let result = testing::call(&tools(), "nope", json!({}));
    assert!(result.is_error);
    assert_eq!(result.text_content(), "unknown tool `nope`; this plugin has `add`, `hello`, `count`");
}

#[test]
fn progress_logs_and_cancellation_are_observable_in_tests() {
    testing::reset();
    assert_eq!(testing::call(&tools(), "count", json!({})).text_content(), "3");
    let reports = testing::progress_reports();
    assert_eq!(reports.len(), 3);
    assert_eq!(reports[2], (3.0, Some(3.0), Some("3/3".to_string())));
    assert_eq!(testing::logs(), vec![(LogLevel::Info, "counted".to_string())]);

    testing::cancel_after(1);
    let result = testing::call(&tools(), "count", json!({}));
    assert!(result.is_error);
    assert_eq!(result.text_content(), "cancelled at 2");
}

#[test]
#[should_panic(expected = "used twice")]
fn check_refuses_a_duplicate_name() {
    let mut both = tools();
    both.extend(tools());
    testing::check(&both);
}
