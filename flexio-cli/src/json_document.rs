//! One JSON shape per kind of result: every `--json` document carries
//! `kind` (which result it is: `flow`, `tree`, `get`, `get-mirrored`, `get-tree`, `put`,
//! `put-tree`, `plan`, `mechanisms`, `cache-sim`) and `schema_version`
//! (the version of that kind's fields), so a reader can tell a tree copy's
//! report from a single file's without guessing from its fields. Each
//! kind's JSON Schema is `docs/schemas/KIND.schema.json`.

use serde::Serialize;
use serde_json::Value;

/// `result` as a JSON document of `kind`, pretty-printed, with a newline.
/// A result that has no `schema_version` of its own is version 1.
pub(crate) fn document(kind: &str, result: &impl Serialize) -> String {
    let mut value = serde_json::to_value(result).expect("a report serializes");
    if let Value::Object(fields) = &mut value {
        fields.insert("kind".into(), Value::from(kind));
        fields
            .entry("schema_version")
            .or_insert_with(|| Value::from(1));
    }
    serde_json::to_string_pretty(&value).expect("a value serializes") + "\n"
}
