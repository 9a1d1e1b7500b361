//! `{{name}}`: a corral plugin. Each tool is a plain function; `tools()` lists them.
//!
//! - `cargo test` runs the tests below on your machine, no wasm needed.
//! - `./build.sh` builds `dist/{{name}}.wasm`; `corral serve --plugins dist --watch` serves it
//!   and reloads it after every build.

use corral_plugin::{export, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments: their JSON Schema is the tool's input schema, and the doc comments become
/// the descriptions the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// An `Err` becomes an `isError` result: the model reads the text and can try again.
fn greet(args: GreetArgs) -> Result<String, String> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err("`name` is empty: say who to greet".into());
    }
    Ok(format!("Hello, {name}!"))
}

fn tools() -> Vec<Tool> {
    vec![Tool::new("{{tool}}", "Greets someone by name.", greet).title("Greet").read_only(true).open_world(false)]
}

export!(tools);

#[cfg(test)]
mod tests {
    use corral_plugin::testing;
    use serde_json::json;

    #[test]
    fn the_host_would_accept_the_tools() {
        testing::check(&super::tools());
    }

    #[test]
    fn greets_by_name() {
        let result = testing::call(&super::tools(), "{{tool}}", json!({"name": "Ada"}));
        assert_eq!(result.text_content(), "Hello, Ada!");
    }

    #[test]
    fn an_empty_name_is_an_error_the_model_can_read() {
        let result = testing::call(&super::tools(), "{{tool}}", json!({"name": " "}));
        assert!(result.is_error);
        assert!(result.text_content().contains("say who to greet"));
    }
}
