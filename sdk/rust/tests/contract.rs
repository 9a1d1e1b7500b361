//! Everything else contract 0.3.0 offers, on the host target through `testing`'s doubles:
//! typed forms, sampling, roots and `ask` with queued answers; resources, templates, prompts
//! and completions of a `Surface`.

use std::collections::BTreeMap;

use corral_plugin::testing::{self, Asked};
use corral_plugin::{
    ask, elicit, roots, sample, Body, Elicited, Message, NoArgs, Prompt, PromptError, Question, ReadError, Reference, RequestError, Resource, ResourceTemplate,
    Role, Sampling, Surface, Tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

/// The form a tool asks for.
#[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
struct Order {
    /// What to call the order.
    name: String,
    /// How big.
    size: Size,
    /// Anything else.
    note: Option<String>,
}

fn order(_: NoArgs) -> Result<String, String> {
    match elicit::<Order>("What would you like?").map_err(|e| e.to_string())? {
        Elicited::Accepted(order) => {
            let summary = sample(&Sampling::new(format!("Say thanks for {}", order.name), 50)).map_err(|e| e.to_string())?;
            Ok(format!("{} ({:?}): {}", order.name, order.size, summary.text()))
        }
        Elicited::Declined => Ok("no order".into()),
        Elicited::Cancelled => Ok("dismissed".into()),
    }
}

fn tools() -> Vec<Tool> {
    vec![Tool::new("order", "Takes an order.", order)]
}

#[test]
fn a_typed_form_asks_the_structs_schema_and_gets_the_struct_back() {
    testing::reset();
    testing::answer_elicit(Order { name: "tea".into(), size: Size::Large, note: None });
    testing::answer_sample("Thank you!");
    let result = testing::call(&tools(), "order", json!({}));
    assert_eq!(result.text_content(), "tea (Large): Thank you!");
    let asked = testing::questions();
    let Asked::Elicit { message, schema } = &asked[0] else { panic!("{asked:?}") };
    assert_eq!(message, "What would you like?");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["name", "size"]), "an Option is optional: {schema}");
    assert_eq!(schema["properties"]["size"]["enum"], json!(["small", "large"]), "enums are inlined: {schema}");
    assert_eq!(schema["properties"]["note"]["type"], "string", "no null union for form clients: {schema}");
    assert_eq!(schema["properties"]["name"]["description"], "What to call the order.");
    assert!(schema.get("$schema").is_none() && schema.get("$defs").is_none(), "{schema}");
    let Asked::Sample(request) = &asked[1] else { panic!("{asked:?}") };
    assert_eq!((request.messages[0].text(), request.max_tokens), (Some("Say thanks for tea"), 50));
}

#[test]
fn declines_and_refusals_reach_the_tool() {
    testing::reset();
    testing::decline_elicit();
    assert_eq!(testing::call(&tools(), "order", json!({})).text_content(), "no order");
    testing::refuse_next(RequestError::Unsupported("the client did not declare the `elicitation` capability, so it was not asked".into()));
    let result = testing::call(&tools(), "order", json!({}));
    assert!(result.is_error);
    assert_eq!(result.text_content(), "the client did not declare the `elicitation` capability, so it was not asked (unsupported)");
}

#[test]
fn an_answer_that_does_not_fit_the_form_is_refused() {
    testing::reset();
    testing::answer_elicit(json!({"name": "tea", "size": "huge"}));
    let err = elicit::<Order>("What?").unwrap_err();
    assert_eq!(err.kind(), "refused");
    assert!(err.message().contains("does not fit the form's type"), "{err}");
}

#[test]
#[should_panic(expected = "the tool asked the client (elicit \"What would you like?\") but no answer is queued")]
fn a_question_with_no_queued_answer_fails_naming_it() {
    testing::reset();
    testing::call(&tools(), "order", json!({}));
}

#[test]
#[should_panic(expected = "but the next queued answer is for `sample`")]
fn a_queued_answer_of_another_kind_fails_naming_both() {
    testing::reset();
    testing::answer_sample("hi");
    let _ = roots();
}

#[test]
fn ask_answers_each_question_under_its_key_and_refuses_a_key_used_twice() {
    testing::reset();
    testing::answer_elicit(json!({"name": "Ada", "size": "small"}));
    testing::answer_roots(&["file:///work"]);
    let answers = ask(vec![("who", Question::elicit::<Order>("Who?")), ("where", Question::Roots)]).unwrap();
    assert_eq!(answers.elicited::<Order>("who").unwrap(), Elicited::Accepted(Order { name: "Ada".into(), size: Size::Small, note: None }));
    assert_eq!(answers.roots("where").unwrap()[0].uri, "file:///work");
    assert_eq!(answers.sampled("who").unwrap_err().kind(), "invalid", "a form is no sampling answer");
    let twice = ask(vec![("same", Question::Roots), ("same", Question::Roots)]).unwrap_err();
    assert_eq!(twice, RequestError::Invalid("input key \"same\" is used twice in one `ask`".into()));
}

/// Arguments of the prompt.
#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// The note to summarise.
    id: String,
    /// How long the summary may be.
    length: Option<String>,
}

fn notes() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([("alpha", "first note"), ("beta", "second note")])
}

fn surface() -> Surface {
    Surface::new()
        .with_resource(
            Resource::new("notes://index", "index", || Ok::<_, ReadError>(notes().keys().copied().collect::<Vec<_>>().join("\n"))).mime_type("text/plain"),
        )
        .with_template(
            ResourceTemplate::new("notes://{id}", "note", |vars| notes().get(vars["id"].as_str()).map(|t| t.to_string()).ok_or(ReadError::NotFound))
                .complete("id", |typed, _| notes().keys().filter(|k| k.starts_with(typed)).map(|k| k.to_string()).collect()),
        )
        .with_prompt(
            Prompt::new("summarize", "Summarises a note.", |args: Summarize| {
                let text = notes().get(args.id.as_str()).copied().ok_or_else(|| PromptError::invalid(format!("no note `{}`", args.id)))?;
                Ok(vec![Message::user(format!("Summarise in {} words: {text}", args.length.as_deref().unwrap_or("ten")))])
            })
            .complete("id", |typed, _| notes().keys().filter(|k| k.starts_with(typed)).map(|k| k.to_string()).collect()),
        )
}

#[test]
fn resources_and_templates_read_by_uri() {
    let s = surface();
    assert_eq!(s.resources()[0].uri, "notes://index");
    assert_eq!(s.templates()[0].uri, "notes://{id}");
    let index = testing::read(&s, "notes://index").unwrap();
    assert_eq!((index[0].body.clone(), index[0].mime_type.as_deref()), (Body::Text("alpha\nbeta".into()), Some("text/plain")));
    assert_eq!(testing::read(&s, "notes://beta").unwrap()[0].body, Body::Text("second note".into()));
    assert_eq!(testing::read(&s, "notes://gamma").unwrap_err(), ReadError::NotFound);
    assert_eq!(testing::read(&s, "other://beta").unwrap_err(), ReadError::NotFound);
}

#[test]
fn prompts_declare_their_arguments_from_the_type_and_render_typed() {
    let s = surface();
    let info = &s.prompts()[0];
    let args: Vec<(&str, bool, Option<&str>)> = info.arguments.iter().map(|a| (a.name.as_str(), a.required, a.description.as_deref())).collect();
    assert_eq!(args, vec![("id", true, Some("The note to summarise.")), ("length", false, Some("How long the summary may be."))]);
    let messages = testing::get_prompt(&s, "summarize", &[("id", "alpha"), ("length", "five")]).unwrap();
    assert_eq!((messages[0].role, messages[0].text()), (Role::User, Some("Summarise in five words: first note")));
    assert_eq!(testing::get_prompt(&s, "summarize", &[("id", "zeta")]).unwrap_err(), PromptError::InvalidArguments("no note `zeta`".into()));
    let missing = testing::get_prompt(&s, "summarize", &[]).unwrap_err();
    assert!(matches!(&missing, PromptError::InvalidArguments(m) if m.contains("missing field `id`")), "{missing:?}");
    assert!(matches!(testing::get_prompt(&s, "nope", &[]), Err(PromptError::InvalidArguments(m)) if m == "unknown prompt `nope`; this plugin has `summarize`"));
}

#[test]
fn completions_go_to_the_prompt_or_template_named() {
    let s = surface();
    assert_eq!(testing::complete(&s, Reference::Prompt("summarize".into()), "id", "al").values, vec!["alpha"]);
    assert_eq!(testing::complete(&s, Reference::Template("notes://{id}".into()), "id", "").values, vec!["alpha", "beta"]);
    assert!(testing::complete(&s, Reference::Prompt("summarize".into()), "length", "").values.is_empty());
    assert!(testing::complete(&s, Reference::Template("other://{x}".into()), "x", "").values.is_empty());
}

#[test]
fn resource_updates_are_recorded() {
    testing::reset();
    corral_plugin::resource_updated("notes://alpha");
    assert_eq!(testing::resource_updates(), vec!["notes://alpha"]);
}

#[derive(Debug, PartialEq, Deserialize, Serialize)]
struct Step {
    done: u32,
}

fn steps(_: NoArgs) -> Result<String, String> {
    let mut at = corral_plugin::resume::<Step>().unwrap_or(Step { done: 0 });
    while at.done < 5 {
        at.done += 1;
        corral_plugin::progress(at.done as f64, Some(5.0), None);
        corral_plugin::checkpoint(&at)?;
    }
    Ok(format!("{} steps", at.done))
}

#[test]
fn a_crash_at_a_checkpoint_resumes_from_it_with_the_typed_state() {
    testing::reset();
    let tools = vec![Tool::new("steps", "Five steps.", steps)];
    testing::crash_after(3);
    assert!(testing::run_until_crash(|| testing::call(&tools, "steps", json!({}))).is_none());
    assert_eq!(testing::checkpoints().last().map(|c| c.as_slice()), Some(br#"{"done":3}"#.as_slice()));
    testing::progress_reports();
    assert_eq!(testing::call(&tools, "steps", json!({})).text_content(), "5 steps");
    assert_eq!(testing::progress_reports().len(), 2, "steps 4 and 5 only");
    testing::resume_with(None);
    assert_eq!(testing::call(&tools, "steps", json!({})).text_content(), "5 steps");
    assert_eq!(testing::checkpoints().len(), 5 + 2, "a first run again: five more checkpoints");
}
