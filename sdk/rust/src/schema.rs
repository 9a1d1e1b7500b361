//! JSON Schemas (draft 2020-12) from Rust types, in the shape corral expects.

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
fn of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    schema
}
