//! Fixture calls: a project's `fixtures.toml`, the calls it makes and what each must return.
//!
//! One file per project, next to its manifest, so that the calls a plugin is tried with travel
//! with its sources. Each `[[fixture]]` names a tool and its arguments and holds exactly one
//! expectation: `text` (the result's text content, exactly), `result` (the whole
//! `CallToolResult`, exactly), `subset` (the result contains these members: objects by key,
//! arrays element by element) or `schema` (a JSON Schema the result must satisfy). `task = true`
//! calls it as an MCP task (and reads `tasks/result`); `answers` are the client's replies to the
//! `elicitation/create` requests the call makes, in order.
//!
//! ```toml
//! [[fixture]]
//! name = "greets by name"
//! tool = "hello"
//! arguments = { name = "Ada" }
//! expect.text = "Hello, Ada!"
//! ```

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// The file a project keeps its fixtures in.
pub const FILE: &str = "fixtures.toml";

/// How long a fixture call may take when its file does not say.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One fixture call.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// The fixture's name, unique in its file.
    pub name: String,
    /// The tool called, by the name it is served under.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// Called as an MCP task.
    pub task: bool,
    /// The client's replies to the call's elicitation requests, in order (each an
    /// `ElicitResult`: `{ action = "accept", content = {...} }`).
    pub answers: Vec<Value>,
    /// What the result must be.
    pub expect: Expect,
    /// How long the call (and, as a task, its result) may take.
    pub timeout: Duration,
}

/// What a fixture's result must be.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// The text content, joined.
    Text(String),
    /// The whole result.
    Result(Value),
    /// Members the result must have.
    Subset(Value),
    /// A JSON Schema the result must satisfy.
    Schema(Value),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    #[serde(default)]
    fixture: Vec<FixtureFormat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureFormat {
    name: String,
    tool: String,
    #[serde(default)]
    arguments: Option<toml::Table>,
    #[serde(default)]
    task: bool,
    #[serde(default)]
    answers: Vec<toml::Table>,
    expect: ExpectFormat,
    timeout: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFormat {
    text: Option<String>,
    result: Option<toml::Value>,
    subset: Option<toml::Value>,
    schema: Option<toml::Value>,
}

/// The fixtures of the project in `dir`: none when it has no fixture file; an error names the
/// file, the fixture and what is wrong.
pub fn read(dir: &Path) -> anyhow::Result<Vec<Fixture>> {
    let path = dir.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => anyhow::bail!("{}: cannot read: {e}", path.display()),
    };
    parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Vec<Fixture>, String> {
    let file: FileFormat = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => format!("line {}: {}", text[..span.start].matches('\n').count() + 1, e.message()),
        None => e.message().to_owned(),
    })?;
    let mut fixtures: Vec<Fixture> = Vec::new();
    for f in file.fixture {
        let named = |message: String| format!("fixture {:?}: {message}", f.name);
        if fixtures.iter().any(|other| other.name == f.name) {
            return Err(named("the name is used twice".into()));
        }
        let json = |v: toml::Value| serde_json::to_value(v).map_err(|e| named(e.to_string()));
        let expect = match (f.expect.text, f.expect.result, f.expect.subset, f.expect.schema) {
            (Some(text), None, None, None) => Expect::Text(text),
            (None, Some(result), None, None) => Expect::Result(json(result)?),
            (None, None, Some(subset), None) => Expect::Subset(json(subset)?),
            (None, None, None, Some(schema)) => {
                let schema = json(schema)?;
                jsonschema::validator_for(&schema).map_err(|e| named(format!("expect.schema is not a valid JSON Schema: {e}")))?;
                Expect::Schema(schema)
            }
            _ => return Err(named("`expect` needs exactly one of text, result, subset or schema".into())),
        };
        let timeout = match &f.timeout {
            Some(t) => crate::config::parse_duration(t).map_err(|e| named(format!("timeout: {e}")))?,
            None => DEFAULT_TIMEOUT,
        };
        let arguments = serde_json::to_value(f.arguments.unwrap_or_default()).map_err(|e| named(e.to_string()))?;
        let answers = f.answers.into_iter().map(|a| serde_json::to_value(a).map_err(|e| named(e.to_string()))).collect::<Result<_, _>>()?;
        fixtures.push(Fixture { name: f.name, tool: f.tool, arguments, task: f.task, answers, expect, timeout });
    }
    Ok(fixtures)
}

impl Expect {
    /// `None` when `result` meets the expectation, otherwise what differs.
    pub fn mismatch(&self, result: &Value) -> Option<String> {
        match self {
            Expect::Text(want) => {
                let got = text_of(result);
                (got != *want).then(|| format!("expected the text {want:?}, got {got:?}"))
            }
            Expect::Result(want) => (result != want).then(|| format!("expected the result {want}, got {result}")),
            Expect::Subset(want) => missing(want, result, "").map(|at| format!("the result lacks {at} of {want}: got {result}")),
            Expect::Schema(schema) => {
                let validator = jsonschema::validator_for(schema).ok()?;
                let errors: Vec<String> = validator.iter_errors(result).map(|e| format!("{} at {}", e, e.instance_path())).collect();
                (!errors.is_empty()).then(|| format!("the result does not match the schema: {}; got {result}", errors.join("; ")))
            }
        }
    }
}

/// The text content of a `CallToolResult`, joined.
pub fn text_of(result: &Value) -> String {
    let blocks = result["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
}

/// The first place (a JSON pointer) where `got` lacks what `want` has, if any.
fn missing(want: &Value, got: &Value, at: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => want.iter().find_map(|(k, w)| match got.get(k) {
            Some(g) => missing(w, g, &format!("{at}/{k}")),
            None => Some(format!("{at}/{k}")),
        }),
        (Value::Array(want), Value::Array(got)) if want.len() <= got.len() => {
            want.iter().zip(got).enumerate().find_map(|(i, (w, g))| missing(w, g, &format!("{at}/{i}")))
        }
        _ if want == got => None,
        _ => Some(if at.is_empty() { "/".into() } else { at.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_of_expectation_passes_and_fails() {
        let result = json!({ "content": [{ "type": "text", "text": "Hello, Ada!" }], "structuredContent": { "n": 3, "tags": ["a", "b"] } });
        assert_eq!(Expect::Text("Hello, Ada!".into()).mismatch(&result), None);
        assert!(Expect::Text("Hi".into()).mismatch(&result).unwrap().contains("\"Hello, Ada!\""));
        assert_eq!(Expect::Result(result.clone()).mismatch(&result), None);
        assert!(Expect::Result(json!({})).mismatch(&result).is_some());
        assert_eq!(Expect::Subset(json!({ "structuredContent": { "tags": ["a"] } })).mismatch(&result), None);
        let lacks = Expect::Subset(json!({ "structuredContent": { "n": 4 } })).mismatch(&result).unwrap();
        assert!(lacks.contains("/structuredContent/n"), "{lacks}");
        let schema =
            json!({ "type": "object", "required": ["structuredContent"], "properties": { "structuredContent": { "properties": { "n": { "maximum": 2 } } } } });
        let wrong = Expect::Schema(schema).mismatch(&result).unwrap();
        assert!(wrong.contains("/structuredContent/n"), "{wrong}");
    }

    #[test]
    fn a_fixture_file_parses_and_its_mistakes_are_named() {
        let fixtures = parse(
            "[[fixture]]\nname = \"a\"\ntool = \"t\"\narguments = { x = 1 }\nexpect.text = \"ok\"\n\n\
             [[fixture]]\nname = \"b\"\ntool = \"t\"\ntask = true\ntimeout = \"5s\"\nanswers = [{ action = \"accept\", content = { ok = true } }]\nexpect.subset = { isError = false }\n",
        )
        .unwrap();
        assert_eq!(fixtures.len(), 2);
        assert_eq!(fixtures[0].arguments, json!({ "x": 1 }));
        assert!(fixtures[1].task && fixtures[1].timeout == Duration::from_secs(5));
        assert_eq!(fixtures[1].answers, vec![json!({ "action": "accept", "content": { "ok": true } })]);

        let two = parse("[[fixture]]\nname = \"a\"\ntool = \"t\"\nexpect = { text = \"x\", subset = {} }\n").unwrap_err();
        assert!(two.contains("fixture \"a\": `expect` needs exactly one"), "{two}");
        let typo = parse("[[fixture]]\nname = \"a\"\ntool = \"t\"\nexpect.txt = \"x\"\n").unwrap_err();
        assert!(typo.starts_with("line "), "{typo}");
        let schema = parse("[[fixture]]\nname = \"a\"\ntool = \"t\"\nexpect.schema = { type = 3 }\n").unwrap_err();
        assert!(schema.contains("not a valid JSON Schema"), "{schema}");
    }
}
