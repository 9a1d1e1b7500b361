//! A component's tool list, and for a 0.2.0 plugin its resources, resource templates and
//! prompts, kept beside its compiled code in the compile cache, so that a warm start
//! instantiates nothing to list them.
//!
//! The entry is `<key>.tools.json` next to `<key>.cwasm`: the same key (the SHA-256 of the
//! component) in the same engine directory, so a changed component or engine never finds an
//! old list. An entry that does not parse as a whole (truncated, corrupt, another format) is
//! ignored and rewritten; it is written to a temporary file and renamed, like the artifacts.

use std::path::Path;

use serde_json::{json, Value};

use super::{Annotations, Prompt, PromptArgument, Resource, ResourceTemplate, TaskSupport, Tool};

/// Bumped when the entry's layout changes (v1 held the tools only).
const FORMAT: &str = "corral-lists-v2";

/// What a plugin's `list-*` exports answered (empty for the ones it does not export).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lists {
    /// `list-tools`.
    pub tools: Vec<Tool>,
    /// `list-resources`.
    pub resources: Vec<Resource>,
    /// `list-resource-templates`.
    pub templates: Vec<ResourceTemplate>,
    /// `list-prompts`.
    pub prompts: Vec<Prompt>,
}

/// The cached lists of the component with `key`, if there is a sound entry.
pub fn read(dir: &Path, key: &str) -> Option<Lists> {
    let text = std::fs::read_to_string(dir.join(format!("{key}.tools.json"))).ok()?;
    let entry: Value = serde_json::from_str(&text).ok()?;
    if entry["format"] != FORMAT || entry["key"] != key {
        return None;
    }
    Some(Lists {
        tools: entry["tools"].as_array()?.iter().map(tool_from_json).collect::<Option<_>>()?,
        resources: entry["resources"].as_array()?.iter().map(resource_from_json).collect::<Option<_>>()?,
        templates: entry["templates"].as_array()?.iter().map(template_from_json).collect::<Option<_>>()?,
        prompts: entry["prompts"].as_array()?.iter().map(prompt_from_json).collect::<Option<_>>()?,
    })
}

/// Stores the lists of the component with `key`.
pub fn write(dir: &Path, key: &str, lists: &Lists) -> std::io::Result<()> {
    let entry = json!({
        "format": FORMAT,
        "key": key,
        "tools": lists.tools.iter().map(tool_json).collect::<Vec<_>>(),
        "resources": lists.resources.iter().map(resource_json).collect::<Vec<_>>(),
        "templates": lists.templates.iter().map(template_json).collect::<Vec<_>>(),
        "prompts": lists.prompts.iter().map(prompt_json).collect::<Vec<_>>(),
    });
    super::cache::write_atomically(dir, &dir.join(format!("{key}.tools.json")), entry.to_string().as_bytes())
}

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// `null` is `None`; anything else must be a string, or the whole entry is unsound.
fn optional_string(v: &Value) -> Option<Option<String>> {
    if v.is_null() {
        Some(None)
    } else {
        string(v).map(Some)
    }
}

fn resource_json(r: &Resource) -> Value {
    json!({ "uri": r.uri, "name": r.name, "title": r.title, "description": r.description, "mime_type": r.mime_type, "size": r.size })
}

fn resource_from_json(v: &Value) -> Option<Resource> {
    let size = &v["size"];
    Some(Resource {
        uri: string(&v["uri"])?,
        name: string(&v["name"])?,
        title: optional_string(&v["title"])?,
        description: optional_string(&v["description"])?,
        mime_type: optional_string(&v["mime_type"])?,
        size: if size.is_null() { None } else { Some(size.as_u64()?) },
    })
}

fn template_json(t: &ResourceTemplate) -> Value {
    json!({ "uri_template": t.uri_template, "name": t.name, "title": t.title, "description": t.description, "mime_type": t.mime_type })
}

fn template_from_json(v: &Value) -> Option<ResourceTemplate> {
    Some(ResourceTemplate {
        uri_template: string(&v["uri_template"])?,
        name: string(&v["name"])?,
        title: optional_string(&v["title"])?,
        description: optional_string(&v["description"])?,
        mime_type: optional_string(&v["mime_type"])?,
    })
}

fn prompt_json(p: &Prompt) -> Value {
    let arguments: Vec<Value> =
        p.arguments.iter().map(|a| json!({ "name": a.name, "title": a.title, "description": a.description, "required": a.required })).collect();
    json!({ "name": p.name, "title": p.title, "description": p.description, "arguments": arguments })
}

fn prompt_from_json(v: &Value) -> Option<Prompt> {
    let argument = |a: &Value| {
        Some(PromptArgument {
            name: string(&a["name"])?,
            title: optional_string(&a["title"])?,
            description: optional_string(&a["description"])?,
            required: a["required"].as_bool()?,
        })
    };
    Some(Prompt {
        name: string(&v["name"])?,
        title: optional_string(&v["title"])?,
        description: optional_string(&v["description"])?,
        arguments: v["arguments"].as_array()?.iter().map(argument).collect::<Option<_>>()?,
    })
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
    // `null` is `None`; anything else must be the right type, or the whole entry is unsound.
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

    fn tools(tools: Vec<Tool>) -> Lists {
        Lists { tools, ..Lists::default() }
    }

    #[test]
    fn a_list_comes_back_as_written_and_only_under_its_own_key() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "abc", &tools(vec![tool("one"), tool("two")])).unwrap();
        assert_eq!(read(dir.path(), "abc"), Some(tools(vec![tool("one"), tool("two")])));
        assert_eq!(read(dir.path(), "abd"), None);
    }

    #[test]
    fn resources_templates_and_prompts_come_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let lists = Lists {
            tools: vec![tool("one")],
            resources: vec![
                Resource {
                    uri: "notes://a".into(),
                    name: "a".into(),
                    title: None,
                    description: Some("d".into()),
                    mime_type: Some("text/plain".into()),
                    size: Some(7),
                },
                Resource { uri: "notes://b".into(), name: "b".into(), title: Some("B".into()), description: None, mime_type: None, size: None },
            ],
            templates: vec![ResourceTemplate {
                uri_template: "notes://{id}".into(),
                name: "note".into(),
                title: None,
                description: None,
                mime_type: Some("text/plain".into()),
            }],
            prompts: vec![Prompt {
                name: "greet".into(),
                title: Some("Greet".into()),
                description: None,
                arguments: vec![PromptArgument { name: "who".into(), title: None, description: Some("whom".into()), required: true }],
            }],
        };
        write(dir.path(), "abc", &lists).unwrap();
        assert_eq!(read(dir.path(), "abc"), Some(lists));
        // A v1 entry (tools only) is another format: never read as "no resources".
        std::fs::write(dir.path().join("abc.tools.json"), r#"{"format":"corral-tools-v1","key":"abc","tools":[]}"#).unwrap();
        assert_eq!(read(dir.path(), "abc"), None);
    }

    #[test]
    fn an_entry_that_is_not_whole_is_never_used() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "abc", &tools(vec![tool("one")])).unwrap();
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
