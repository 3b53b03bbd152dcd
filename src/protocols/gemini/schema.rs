//! Google's schema subset (the OpenAPI 3.0 `Schema` object the Gemini API's `parameters` and
//! `responseSchema` take: upper-case `type` names, `nullable`, `propertyOrdering`) → JSON Schema,
//! what a Chat Completions upstream reads. A schema already in JSON Schema (lower-case types)
//! passes unchanged, so converting twice changes nothing.
//!
//! Must not validate: a keyword it does not know is kept as it came.

use serde_json::{Map, Value};

/// `schema` in JSON Schema's words.
pub fn to_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => Value::Object(convert_object(object)),
        Value::Array(items) => Value::Array(items.iter().map(to_json_schema).collect()),
        other => other.clone(),
    }
}

fn convert_object(object: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::with_capacity(object.len());
    let nullable = object.get("nullable").and_then(Value::as_bool) == Some(true);
    for (key, value) in object {
        match key.as_str() {
            "type" => {
                if let Some(kind) = type_name(value) {
                    let kind = Value::String(kind);
                    let typed = if nullable {
                        Value::Array(vec![kind, Value::String("null".into())])
                    } else {
                        kind
                    };
                    out.insert(key.clone(), typed);
                }
            }
            // Google-only: the order properties are generated in, and `nullable` (folded into
            // `type` above).
            "nullable" | "propertyOrdering" => {}
            "properties" | "$defs" | "definitions" => {
                let converted = value.as_object().map_or_else(
                    || value.clone(),
                    |props| {
                        Value::Object(
                            props
                                .iter()
                                .map(|(name, schema)| (name.clone(), to_json_schema(schema)))
                                .collect(),
                        )
                    },
                );
                out.insert(key.clone(), converted);
            }
            "items" | "anyOf" | "oneOf" | "allOf" | "not" | "additionalProperties" => {
                out.insert(key.clone(), to_json_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// `STRING` → `string`; `TYPE_UNSPECIFIED` (no type) → none; a JSON Schema type as it is.
fn type_name(value: &Value) -> Option<String> {
    let name = value.as_str()?;
    if name.eq_ignore_ascii_case("TYPE_UNSPECIFIED") {
        return None;
    }
    Some(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upper_case_types_nullable_and_ordering_become_json_schema() {
        let google = json!({
            "type": "OBJECT",
            "properties": {
                "path": {"type": "STRING", "description": "where"},
                "lines": {"type": "ARRAY", "items": {"type": "INTEGER"}, "nullable": true},
                "mode": {"type": "STRING", "enum": ["a", "b"], "format": "enum"}
            },
            "required": ["path"],
            "propertyOrdering": ["path", "lines", "mode"]
        });
        assert_eq!(
            to_json_schema(&google),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "where"},
                    "lines": {"type": ["array", "null"], "items": {"type": "integer"}},
                    "mode": {"type": "string", "enum": ["a", "b"], "format": "enum"}
                },
                "required": ["path"]
            })
        );
    }

    #[test]
    fn json_schema_passes_unchanged() {
        let schema = json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}},
            "additionalProperties": false});
        assert_eq!(to_json_schema(&schema), schema);
        assert_eq!(to_json_schema(&to_json_schema(&schema)), schema);
    }
}
