//! The `pi` profile's structural converter (pi 0.73, `profiles/pi.toml` holds its renames): pi's
//! `edit {path, edits: [{oldText, newText}]}` carries several replacements in one call, the
//! neutral edit one. A pi call becomes one neutral edit per replacement; a neutral edit goes to pi
//! as a call with one. Pure.
//!
//! Owns: pi's edit shape. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

use super::capability::Capability;

/// pi's `edit` → one neutral edit per entry of `edits` (none for an empty list: the call stays
/// as it came).
pub(crate) fn edit_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let path = args.get("path")?.as_str()?;
    let edits = args.get("edits")?.as_array()?;
    let out: Vec<(Capability, Value)> = edits
        .iter()
        .map(|edit| {
            Some((
                Capability::Edit,
                json!({"filePath": path, "oldString": edit.get("oldText")?.as_str()?,
                "newString": edit.get("newText")?.as_str()?}),
            ))
        })
        .collect::<Option<_>>()?;
    (!out.is_empty()).then_some(out)
}

/// A neutral edit → pi's, with one replacement.
pub(crate) fn neutral_to_edit(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    // pi replaces the one occurrence its text names: a replace-all has no pi form.
    if args.get("replaceAll").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    Some(json!({"path": args.get("filePath")?.as_str()?, "edits": [{
        "oldText": args.get("oldString")?.as_str()?,
        "newText": args.get("newString")?.as_str()?}]}))
}
