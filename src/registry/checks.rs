//! The checks a tool declaration must pass before the host serves it.

use serde_json::Value;

/// A tool or prompt name that breaks the contract's naming rules. `what` says which, so one
/// check serves both without rewriting its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadName {
    /// `tool` or `prompt`.
    pub what: &'static str,
    /// The name as the plugin declared it.
    pub name: String,
}

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} name {:?} must be 1-64 characters of A-Z, a-z, 0-9, `_` and `-`", self.what, self.name)
    }
}

impl std::error::Error for BadName {}

/// MCP allows up to 128 characters and dots; the contract is stricter so names stay portable.
pub fn check_name(name: &str) -> Result<(), BadName> {
    check_name_of("tool", name)
}

fn check_name_of(what: &'static str, name: &str) -> Result<(), BadName> {
    let ok_len = (1..=64).contains(&name.len());
    let ok_chars = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok_len && ok_chars {
        Ok(())
    } else {
        Err(BadName { what, name: name.to_owned() })
    }
}

/// A prompt's name follows the tool-name rules; its arguments have distinct, non-empty names.
pub fn check_prompt(prompt: &crate::runtime::Prompt) -> Result<(), String> {
    check_name_of("prompt", &prompt.name).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    for argument in &prompt.arguments {
        if argument.name.is_empty() {
            return Err("an argument has an empty name".into());
        }
        if !seen.insert(argument.name.as_str()) {
            return Err(format!("argument `{}` is listed twice", argument.name));
        }
    }
    Ok(())
}

/// Builds the JSON Schema 2020-12 meta-schema's validator on a thread of its own, once per
/// process, for [`compile_schema`] to find ready.
///
/// Every schema is checked against the meta-schema, and the first check builds its validator:
/// about 3 ms, longer than the rest of a warm plugin's load. Built beside the compiles, it is off
/// the path to the first plugin being served (BENCHMARKS.md, section 17).
pub fn prepare_schema_checks() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let build = || jsonschema::meta::is_valid(&serde_json::json!({ "type": "object" }));
        if let Err(e) = std::thread::Builder::new().name("corral-schemas".into()).spawn(build) {
            tracing::debug!("the meta-schema is built by the first check instead: no thread ({e})");
        }
    });
}

/// Parses a schema the plugin sent as text and compiles it. `which` says "input" or "output".
pub fn compile_schema(text: &str, which: &str) -> Result<(Value, jsonschema::Validator), String> {
    let schema: Value = serde_json::from_str(text).map_err(|e| format!("{which} schema is not JSON: {e}"))?;
    if schema.get("type") != Some(&Value::String("object".into())) {
        return Err(format!("{which} schema must be an object schema (`\"type\": \"object\"` at its root)"));
    }
    jsonschema::meta::validate(&schema).map_err(|e| format!("{which} schema is not valid JSON Schema: {e}"))?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| format!("{which} schema cannot be compiled: {e}"))?;
    Ok((schema, validator))
}

/// Every way `instance` breaks `validator`, as (JSON pointer, message) pairs.
pub fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<(String, String)> {
    validator.iter_errors(instance).map(|e| (e.instance_path().to_string(), e.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_contract() {
        assert!(check_name("word_count-2").is_ok());
        for bad in ["", "a b", "dot.ted", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_bad_name_says_whose_name_it_is() {
        let e = check_name("a b").unwrap_err();
        assert_eq!(e, BadName { what: "tool", name: "a b".into() });
        assert_eq!(e.to_string(), "tool name \"a b\" must be 1-64 characters of A-Z, a-z, 0-9, `_` and `-`");
        let prompt = crate::runtime::Prompt { name: "dot.ted".into(), title: None, description: None, arguments: Vec::new() };
        assert!(check_prompt(&prompt).unwrap_err().starts_with("prompt name \"dot.ted\" must be"));
    }

    #[test]
    fn schemas_must_be_valid_object_schemas() {
        assert!(compile_schema(r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#, "input").is_ok());
        assert!(compile_schema("{", "input").unwrap_err().contains("not JSON"));
        assert!(compile_schema(r#"{"type":"string"}"#, "input").unwrap_err().contains("object schema"));
        assert!(compile_schema(r#"{"type":"object","properties":{"n":{"type":12}}}"#, "output").unwrap_err().contains("output schema"));
    }

    #[test]
    fn violations_name_the_path() {
        let (_, v) = compile_schema(r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#, "input").unwrap();
        assert!(violations(&v, &serde_json::json!({"n": 1})).is_empty());
        let found = violations(&v, &serde_json::json!({"n": "x"}));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "/n");
    }
}
