//! Schemas a mainstream client would complain about. The TypeScript SDK validates with ajv in
//! strict mode, which warns once per `format` it does not know (on every `tools/list`): a
//! plugin author hears of it from `corral dev` and `corral test` instead of from users.

use serde_json::Value;

use crate::registry::Catalog;

/// The `format`s JSON Schema 2020-12 defines (ajv-formats knows them all).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A warning for each schema of `plugin`'s tools with a format clients do not know.
pub fn warnings(catalog: &Catalog, plugin: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    for tool in catalog.tools.values().filter(|t| t.plugin.name == plugin) {
        let Ok(listed) = serde_json::to_value(crate::server::list_entry(tool)) else { continue };
        for key in ["inputSchema", "outputSchema"] {
            let mut found = Vec::new();
            unknown_formats(&listed[key], "", &mut found);
            for (at, format) in found {
                warnings.push(format!(
                    "tool {}: {key} {} has format {format:?}, which JSON Schema does not define: the TypeScript SDK (ajv, strict) warns about it on every tools/list",
                    tool.name,
                    if at.is_empty() { "/" } else { &at }
                ));
            }
        }
    }
    warnings
}

/// Each place in `schema` (a JSON pointer) whose `format` is not a standard one.
fn unknown_formats(schema: &Value, at: &str, found: &mut Vec<(String, String)>) {
    match schema {
        Value::Object(map) => {
            if let Some(format) = map.get("format").and_then(Value::as_str).filter(|f| !STANDARD_FORMATS.contains(f)) {
                found.push((at.to_owned(), format.to_owned()));
            }
            for (key, value) in map {
                unknown_formats(value, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| unknown_formats(v, &format!("{at}/{i}"), found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn made_up_formats_are_found_where_they_are() {
        let schema = json!({ "type": "object", "properties": {
            "n": { "type": "integer", "format": "uint64" },
            "at": { "type": "string", "format": "date-time" },
            "format": { "type": "string" },
            "list": { "items": { "format": "double" } },
        } });
        let mut found = Vec::new();
        unknown_formats(&schema, "", &mut found);
        found.sort();
        assert_eq!(found, [("/properties/list/items".to_owned(), "double".to_owned()), ("/properties/n".to_owned(), "uint64".to_owned())]);
    }
}
