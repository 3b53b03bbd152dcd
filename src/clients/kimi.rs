//! Kimi's structural converters (Kimi CLI and Kimi Code; `profiles/kimi-cli.toml` and
//! `kimi-code.toml` hold their renames): `StrReplaceFile {path, edit: {old, new, replace_all}}`
//! nests its replacement, and the todo lists hold `{title, status}` with `done` for finished.
//! Pure.
//!
//! Owns: Kimi's shapes. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;
use super::gemini_cli::status_in;

/// `StrReplaceFile {path, edit: {old, new, replace_all?}}` → the neutral edit (a list of edits,
/// which Kimi CLI also takes, converts when it holds one).
pub(crate) fn str_replace_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let edit = match args.get("edit")? {
        Value::Array(edits) => match edits.as_slice() {
            [one] => one,
            _ => return None,
        },
        edit => edit,
    };
    let mut out = json!({"filePath": args.get("path")?.clone(),
        "oldString": edit.get("old")?.clone(), "newString": edit.get("new")?.clone()});
    if let Some(all) = edit.get("replace_all").filter(|a| a.is_boolean()) {
        out["replaceAll"] = all.clone();
    }
    one(Capability::Edit, Some(out))
}

/// The neutral edit → `StrReplaceFile`.
pub(crate) fn neutral_to_str_replace(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    let mut edit =
        json!({"old": args.get("oldString")?.clone(), "new": args.get("newString")?.clone()});
    if let Some(all) = args.get("replaceAll").filter(|a| a.is_boolean()) {
        edit["replace_all"] = all.clone();
    }
    Some(json!({"path": args.get("filePath")?.clone(), "edit": edit}))
}

/// Kimi's todo lists (`SetTodoList`, Kimi Code's `TodoList`): `{todos: [{title, status}]}`, its
/// statuses `pending`, `in_progress`, `done` → the neutral todo list.
pub(crate) fn titled_todos_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|todo| {
            let status = match todo.get("status")?.as_str()? {
                "done" => "completed",
                other => other,
            };
            Some(
                json!({"content": todo.get("title")?.clone(), "status": status,
                "priority": "medium"}),
            )
        })
        .collect::<Option<_>>()?;
    one(Capability::Todo, Some(json!({ "todos": todos })))
}

/// The neutral todo list → Kimi's: `completed` and `cancelled` are `done`.
pub(crate) fn neutral_to_titled_todos(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|todo| {
            let status = match status_in(todo, &["pending", "in_progress", "completed"]).as_str() {
                Some("completed") => "done",
                Some(other) => other,
                None => "pending",
            }
            .to_owned();
            Some(json!({"title": todo.get("content")?.clone(), "status": status}))
        })
        .collect::<Option<_>>()?;
    Some(json!({ "todos": todos }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_str_replace_and_a_neutral_edit_convert_both_ways() {
        let kimi =
            object(json!({"path": "a.txt", "edit": {"old": "x", "new": "y", "replace_all": true}}));
        let neutral = str_replace_to_neutral(Capability::Edit, &kimi).expect("converts");
        assert_eq!(
            neutral,
            vec![(
                Capability::Edit,
                json!({"filePath": "a.txt", "oldString": "x", "newString": "y", "replaceAll": true})
            )]
        );
        let back = neutral_to_str_replace(Capability::Edit, &object(neutral[0].1.clone()));
        assert_eq!(back, Some(Value::Object(kimi)));
    }

    #[test]
    fn kimi_todos_say_done_for_finished() {
        let kimi = object(
            json!({"todos": [{"title": "a", "status": "done"}, {"title": "b", "status": "pending"}]}),
        );
        let neutral = titled_todos_to_neutral(Capability::Todo, &kimi).expect("converts");
        assert_eq!(neutral[0].1["todos"][0]["status"], "completed");
        let back =
            neutral_to_titled_todos(Capability::Todo, &object(neutral[0].1.clone())).expect("back");
        assert_eq!(back, Value::Object(kimi));
    }
}
