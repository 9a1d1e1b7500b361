//! JSON Schemas (draft 2020-12) from Rust types, in the shapes corral and MCP expect.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// The input schema of argument type `A`.
pub(crate) fn input<A: JsonSchema>() -> Value {
    of::<A>()
}

/// The output schema of structured output type `T`.
pub(crate) fn output<T: JsonSchema>() -> Value {
    of::<T>()
}

/// `T`'s schema without the root `title`, which would only repeat the Rust type's name (the
/// tool has a title of its own).
pub(crate) fn of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    standard_formats_only(&mut schema);
    schema
}

/// The `format`s JSON Schema 2020-12 defines; ajv (what the TypeScript SDK validates with)
/// knows these through ajv-formats, and in strict mode warns about any other.
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

/// Drops the `format`s schemars adds for Rust's number types (`uint64`, `uint`, `int32`,
/// `double`, ...): no validator knows them, and clients print a warning for each. The bounds
/// they stand for stay (`minimum: 0` for an unsigned type).
fn standard_formats_only(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                map.remove("format");
            }
            map.values_mut().for_each(standard_formats_only);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats_only),
        _ => {}
    }
}

/// `T`'s schema as an MCP elicitation form wants it: flat (enums inlined, no `$ref`/`$defs`),
/// no `$schema`, and an `Option` field is a plain property left out of `required` instead of a
/// `["string", "null"]` union that form-rendering clients do not know.
pub(crate) fn elicitation<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(root) = schema.as_object_mut() {
        for key in ["$schema", "title", "$defs"] {
            root.remove(key);
        }
        if let Some(Value::Object(properties)) = root.get_mut("properties") {
            properties.values_mut().for_each(drop_null);
        }
    }
    standard_formats_only(&mut schema);
    schema
}

/// `{"type": [X, "null"]}` → `{"type": X}`; `{"anyOf": [S, {"type": "null"}]}` → `S`.
fn drop_null(property: &mut Value) {
    if let Some(Value::Array(types)) = property.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            property["type"] = kept[0].clone();
        }
    }
    let inner = match property.get("anyOf").and_then(Value::as_array) {
        Some(any) if any.len() == 2 => any.iter().find(|s| s.get("type") != Some(&Value::from("null"))).cloned(),
        _ => None,
    };
    if let (Some(Value::Object(inner)), Some(outer)) = (inner, property.as_object_mut()) {
        outer.remove("anyOf");
        for (key, value) in inner {
            outer.entry(key).or_insert(value);
        }
    }
}
