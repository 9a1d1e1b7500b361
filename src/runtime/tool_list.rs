//! A component's tool list, kept beside its compiled code in the compile cache, so that a warm
//! start instantiates nothing to list tools.
//!
//! The entry is `<key>.tools.json` next to `<key>.cwasm`: the same key (the SHA-256 of the
//! component) in the same engine directory, so a changed component or engine never finds an
//! old list. An entry that does not parse as a whole (truncated, corrupt, another format) is
//! ignored and rewritten; it is written to a temporary file and renamed, like the artifacts.

use std::path::Path;

use serde_json::{json, Value};

use super::{Annotations, TaskSupport, Tool};

/// Bumped when the entry's layout changes.
const FORMAT: &str = "corral-tools-v1";

/// The cached tool list of the component with `key`, if there is a sound one.
pub fn read(dir: &Path, key: &str) -> Option<Vec<Tool>> {
    let text = std::fs::read_to_string(dir.join(format!("{key}.tools.json"))).ok()?;
    let entry: Value = serde_json::from_str(&text).ok()?;
    if entry["format"] != FORMAT || entry["key"] != key {
        return None;
    }
    entry["tools"].as_array()?.iter().map(tool_from_json).collect()
}

/// Stores the tool list of the component with `key`.
pub fn write(dir: &Path, key: &str, tools: &[Tool]) -> std::io::Result<()> {
    let entry = json!({ "format": FORMAT, "key": key, "tools": tools.iter().map(tool_json).collect::<Vec<_>>() });
    super::cache::write_atomically(dir, &dir.join(format!("{key}.tools.json")), entry.to_string().as_bytes())
}

fn tool_json(tool: &Tool) -> Value {
    let a = &tool.annotations;
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": {
            "title": a.title, "read_only": a.read_only, "destructive": a.destructive, "idempotent": a.idempotent, "open_world": a.open_world,
        },
        "task_support": match tool.task_support {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        },
    })
}

fn tool_from_json(v: &Value) -> Option<Tool> {
    let string = |v: &Value| v.as_str().map(str::to_owned);
    // `null` is `None`; anything else must be the right type, or the whole entry is unsound.
    let optional_string = |v: &Value| if v.is_null() { Some(None) } else { string(v).map(Some) };
    let optional_bool = |v: &Value| if v.is_null() { Some(None) } else { v.as_bool().map(Some) };
    let a = &v["annotations"];
    Some(Tool {
        name: string(&v["name"])?,
        title: optional_string(&v["title"])?,
        description: string(&v["description"])?,
        input_schema: string(&v["input_schema"])?,
        output_schema: optional_string(&v["output_schema"])?,
        annotations: Annotations {
            title: optional_string(&a["title"])?,
            read_only: optional_bool(&a["read_only"])?,
            destructive: optional_bool(&a["destructive"])?,
            idempotent: optional_bool(&a["idempotent"])?,
            open_world: optional_bool(&a["open_world"])?,
        },
        task_support: match v["task_support"].as_str()? {
            "forbidden" => TaskSupport::Forbidden,
            "optional" => TaskSupport::Optional,
            "required" => TaskSupport::Required,
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            title: Some("T".into()),
            description: "d".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            annotations: Annotations { title: None, read_only: Some(true), destructive: None, idempotent: Some(false), open_world: None },
            task_support: TaskSupport::Optional,
        }
    }

    #[test]
    fn a_list_comes_back_as_written_and_only_under_its_own_key() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "abc", &[tool("one"), tool("two")]).unwrap();
        assert_eq!(read(dir.path(), "abc"), Some(vec![tool("one"), tool("two")]));
        assert_eq!(read(dir.path(), "abd"), None);
    }

    #[test]
    fn an_entry_that_is_not_whole_is_never_used() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "abc", &[tool("one")]).unwrap();
        let path = dir.path().join("abc.tools.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 3]).unwrap();
        assert_eq!(read(dir.path(), "abc"), None, "truncated");
        std::fs::write(&path, text.replace("\"optional\"", "\"sometimes\"")).unwrap();
        assert_eq!(read(dir.path(), "abc"), None, "unknown task support");
        // An entry copied under another key is not that key's.
        std::fs::write(dir.path().join("xyz.tools.json"), &text).unwrap();
        assert_eq!(read(dir.path(), "xyz"), None);
    }
}
