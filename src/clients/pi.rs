//! The `pi` profile's structural converter (pi 0.73, `profiles/pi.toml` holds its renames): pi's
//! `edit {path, edits: [{oldText, newText}]}` carries several replacements in one call, opencode's
//! `edit` one. A pi call in the history becomes one opencode `edit` per replacement; an opencode
//! call goes back as a pi call with one. Pure.
//!
//! Owns: pi's edit shape. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

/// pi's `edit` → one opencode `edit` per entry of `edits` (none for an empty list: the call
/// stays as it came).
pub(crate) fn edit_to_opencode(args: &Map<String, Value>) -> Option<Vec<Value>> {
    let path = args.get("path")?.as_str()?;
    let edits = args.get("edits")?.as_array()?;
    let out: Vec<Value> = edits
        .iter()
        .map(|edit| {
            Some(
                json!({"filePath": path, "oldString": edit.get("oldText")?.as_str()?,
                "newString": edit.get("newText")?.as_str()?}),
            )
        })
        .collect::<Option<_>>()?;
    (!out.is_empty()).then_some(out)
}

/// opencode's `edit` → pi's, with one replacement (`replaceAll` has no pi counterpart: pi
/// replaces the one occurrence its text names).
pub(crate) fn edit_to_client(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"path": args.get("filePath")?.as_str()?, "edits": [{
        "oldText": args.get("oldString")?.as_str()?,
        "newText": args.get("newString")?.as_str()?}]}))
}
