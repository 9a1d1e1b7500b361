//! A `corral:plugin@0.3.0` guest (world `full`) written with the Rust SDK, so the host's suites
//! (`tests/sdk_guest.rs`) serve what the SDK makes of each part of the contract:
//!
//! - resource `notes://index` (the note ids, one a line) and template `notes://{id}`;
//! - prompt `summarize` (arguments `id`, required, and `length`), whose `id` completes, as does
//!   the template's `id`;
//! - tool `order`: a typed form (`Order`), then a sampling request naming the order;
//! - tool `where`: the client's roots;
//! - tool `touch`: `resource_updated` for the note it names.

use std::collections::BTreeMap;

use corral_plugin::{
    elicit, export, resource_updated, roots, sample, Elicited, Message, NoArgs, Prompt, PromptError, ReadError, Resource, ResourceTemplate, Sampling, Surface,
    Tool,
};
use schemars::JsonSchema;
use serde::Deserialize;

fn notes() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([("alpha", "The first note."), ("alpine", "A note about mountains."), ("beta", "The second note.")])
}

fn ids_starting(typed: &str) -> Vec<String> {
    notes().keys().filter(|id| id.starts_with(typed)).map(|id| id.to_string()).collect()
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

/// What the user orders.
#[derive(Deserialize, JsonSchema)]
struct Order {
    /// What to order.
    item: String,
    /// How big.
    size: Size,
    /// Anything else.
    note: Option<String>,
}

fn order(_: NoArgs) -> Result<String, String> {
    let order = match elicit::<Order>("What would you like?").map_err(|e| e.to_string())? {
        Elicited::Accepted(order) => order,
        Elicited::Declined => return Ok("declined".into()),
        Elicited::Cancelled => return Ok("cancelled".into()),
    };
    let size = match order.size {
        Size::Small => "small",
        Size::Large => "large",
    };
    let request = Sampling::new(format!("Thank the user for a {size} {}", order.item), 40).system("Be brief.");
    let thanks = sample(&request).map_err(|e| e.to_string())?;
    Ok(format!("{size} {} ({}) — {} [{}]", order.item, order.note.as_deref().unwrap_or("no note"), thanks.text(), thanks.model))
}

fn where_(_: NoArgs) -> Result<String, String> {
    let roots = roots().map_err(|e| e.to_string())?;
    Ok(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(" "))
}

#[derive(Deserialize, JsonSchema)]
struct Touch {
    /// The note that changed.
    id: String,
}

fn touch(args: Touch) -> Result<String, String> {
    resource_updated(&format!("notes://{}", args.id));
    Ok(format!("touched {}", args.id))
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("order", "Takes an order: asks the user what, then thanks them in the model's words.", order),
        Tool::new("where", "Lists the client's roots.", where_).read_only(true),
        Tool::new("touch", "Says a note changed.", touch),
    ]
}

/// The prompt's arguments.
#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// The note to summarise.
    id: String,
    /// How many words, at most.
    length: Option<String>,
}

fn summarize(args: Summarize) -> Result<Vec<Message>, PromptError> {
    let text = notes().get(args.id.as_str()).copied().ok_or_else(|| PromptError::invalid(format!("there is no note `{}`", args.id)))?;
    let words = args.length.as_deref().unwrap_or("ten");
    Ok(vec![Message::user(format!("Summarise in {words} words: {text}")), Message::assistant("Here is the summary:")])
}

fn surface() -> Surface {
    Surface::new()
        .with_resource(
            Resource::new("notes://index", "index", || Ok::<_, ReadError>(notes().keys().copied().collect::<Vec<_>>().join("\n"))).mime_type("text/plain"),
        )
        .with_template(
            ResourceTemplate::new("notes://{id}", "note", |vars| notes().get(vars["id"].as_str()).map(|t| t.to_string()).ok_or(ReadError::NotFound))
                .title("A note")
                .mime_type("text/plain")
                .complete("id", |typed, _| ids_starting(typed)),
        )
        .with_prompt(
            Prompt::new("summarize", "Asks for a summary of a note.", summarize).title("Summarize a note").complete("id", |typed, _| ids_starting(typed)),
        )
}

export!(tools, surface);
