//! Re-serialisation of replayed tool-call arguments (docs/wire.md §1 "Tool-call arguments"):
//! opencode rebuilds the arguments of every function call in the history from the fields its tool
//! knows, in its own key order, and sends them as compact JSON.
//!
//! Owns only the `(tool name, arguments text) → arguments text` mapping. It never fails: text
//! that is not JSON is replayed verbatim, and JSON that does not fit its tool is replayed
//! compactly with its own key order (`serde_json`'s `preserve_order` keeps it).

use serde_json::{Map, Value};

use crate::conversation::json_text;

type Object = Map<String, Value>;

/// Rebuilds the `arguments` of a replayed call to `tool` as opencode sends them upstream.
#[must_use]
pub fn reserialize_arguments(tool: &str, arguments: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_owned();
    };
    let rebuilt = value.as_object().and_then(|object| match tool {
        "todowrite" => todowrite(object),
        "write" => write(object),
        "edit" => edit(object),
        "bash" => bash(object, arguments),
        "grep" => grep(object),
        "glob" => glob(object),
        "read" => read(object),
        "task" => task(object, arguments),
        _ => None,
    });
    rebuilt.map_or_else(
        || json_text(&value),
        |object| json_text(&Value::Object(object)),
    )
}

/// `{"todos":[…]}` with every item reduced to `content`, `status` and `priority`.
fn todowrite(object: &Object) -> Option<Object> {
    let todos = object.get("todos")?.as_array()?;
    // opencode's key order flips when the whole list is done; reproduced, not explained.
    let all_completed = todos
        .iter()
        .all(|item| item.get("status").and_then(Value::as_str) == Some("completed"));
    let keys = if all_completed {
        ["priority", "content", "status"]
    } else {
        ["content", "status", "priority"]
    };
    let items = todos
        .iter()
        .map(|item| {
            let fields = keys.iter().map(|key| {
                let text = item.get(key).and_then(Value::as_str).unwrap_or_default();
                ((*key).to_owned(), Value::String(text.to_owned()))
            });
            Value::Object(fields.collect())
        })
        .collect();
    Some(Object::from_iter([(
        "todos".to_owned(),
        Value::Array(items),
    )]))
}

fn write(object: &Object) -> Option<Object> {
    let file_path = string_field(object, "filePath")?;
    let content = string_field(object, "content")?;
    Some(strings([("filePath", file_path), ("content", content)]))
}

/// `replaceAll` is dropped: opencode does not replay it.
fn edit(object: &Object) -> Option<Object> {
    let file_path = string_field(object, "filePath")?;
    let old_string = string_field(object, "oldString")?;
    let new_string = string_field(object, "newString")?;
    Some(strings([
        ("filePath", file_path),
        ("oldString", old_string),
        ("newString", new_string),
    ]))
}

fn bash(object: &Object, original: &str) -> Option<Object> {
    let command = string_field(object, "command")?;
    let mut fields = vec![("command", Value::String(command.to_owned()))];
    for key in ["workdir", "description"] {
        if let Some(text) = string_field(object, key) {
            fields.push((key, Value::String(text.to_owned())));
        }
    }
    // Any JSON value, `null` included: presence of the key is what counts.
    if let Some(timeout) = object.get("timeout") {
        fields.push(("timeout", timeout.clone()));
    }
    Some(ordered_by_first_occurrence(fields, original))
}

fn grep(object: &Object) -> Option<Object> {
    let pattern = string_field(object, "pattern")?;
    let mut rebuilt = strings([("pattern", pattern)]);
    insert_strings(&mut rebuilt, object, ["path", "include"]);
    Some(rebuilt)
}

fn glob(object: &Object) -> Option<Object> {
    let pattern = string_field(object, "pattern")?;
    let mut rebuilt = strings([("pattern", pattern)]);
    insert_strings(&mut rebuilt, object, ["path"]);
    Some(rebuilt)
}

fn read(object: &Object) -> Option<Object> {
    let file_path = string_field(object, "filePath")?;
    let mut rebuilt = strings([("filePath", file_path)]);
    // Any JSON value, `null` included: presence of the key is what counts.
    for key in ["offset", "limit"] {
        if let Some(value) = object.get(key) {
            rebuilt.insert(key.to_owned(), value.clone());
        }
    }
    Some(rebuilt)
}

fn task(object: &Object, original: &str) -> Option<Object> {
    let mut fields = Vec::with_capacity(5);
    for key in ["description", "subagent_type", "prompt"] {
        fields.push((key, Value::String(string_field(object, key)?.to_owned())));
    }
    for key in ["task_id", "command"] {
        if let Some(text) = string_field(object, key) {
            fields.push((key, Value::String(text.to_owned())));
        }
    }
    Some(ordered_by_first_occurrence(fields, original))
}

/// The field if it is present and a JSON string.
fn string_field<'a>(object: &'a Object, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn strings<const N: usize>(fields: [(&str, &str); N]) -> Object {
    fields
        .into_iter()
        .map(|(key, text)| (key.to_owned(), Value::String(text.to_owned())))
        .collect()
}

/// Appends, in the given order, each of `keys` whose value in `object` is a string.
fn insert_strings<const N: usize>(rebuilt: &mut Object, object: &Object, keys: [&str; N]) {
    for key in keys {
        if let Some(text) = string_field(object, key) {
            rebuilt.insert(key.to_owned(), Value::String(text.to_owned()));
        }
    }
}

/// Orders `fields` by where `"<key>"` first occurs in the original text, which is how
/// opencode recovers the model's own key order. The search is textual, so it can hit a string
/// value spelled like a key; a key not found (written with escapes) goes last, and the sort is
/// stable so such keys keep the order they were listed in.
fn ordered_by_first_occurrence(mut fields: Vec<(&str, Value)>, original: &str) -> Object {
    fields
        .sort_by_cached_key(|(key, _)| original.find(&format!("\"{key}\"")).unwrap_or(usize::MAX));
    fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::reserialize_arguments;

    fn check(tool: &str, arguments: &str, expected: &str) {
        assert_eq!(
            reserialize_arguments(tool, arguments),
            expected,
            "tool {tool}, arguments {arguments}"
        );
    }

    // Fallbacks

    #[test]
    fn invalid_json_is_replayed_verbatim() {
        check("bash", r#"{"command": "ls""#, r#"{"command": "ls""#);
        check("unknown", "not json at all", "not json at all");
        check("write", "", "");
    }

    #[test]
    fn unknown_tool_is_compacted_with_its_key_order() {
        check(
            "webfetch",
            r#"{ "url" : "https://x", "format" : "text", "a" : [1, 2, {"z": 1, "b": 2}] }"#,
            r#"{"url":"https://x","format":"text","a":[1,2,{"z":1,"b":2}]}"#,
        );
    }

    #[test]
    fn tool_names_are_case_sensitive() {
        check(
            "Write",
            r#"{"content": "x", "filePath": "/a", "extra": 1}"#,
            r#"{"content":"x","filePath":"/a","extra":1}"#,
        );
    }

    #[test]
    fn json_that_is_not_an_object_is_compacted() {
        check("bash", "[1, 2]", "[1,2]");
        check("read", r#" "just a string" "#, r#""just a string""#);
        check("todowrite", "null", "null");
    }

    #[test]
    fn strings_are_re_encoded_with_serde_json_escaping() {
        check(
            "bash",
            r#"{"command": "echo \u00e9 \/ \"q\" \t"}"#,
            r#"{"command":"echo é / \"q\" \t"}"#,
        );
    }

    #[test]
    fn numbers_are_re_encoded_by_serde_json() {
        check(
            "read",
            r#"{"filePath": "/a", "offset": 1e2, "limit": 2.50}"#,
            r#"{"filePath":"/a","offset":100.0,"limit":2.5}"#,
        );
    }

    // todowrite

    #[test]
    fn todowrite_keeps_content_status_priority() {
        check(
            "todowrite",
            concat!(
                r#"{"todos": ["#,
                r#"{"id": "1", "priority": "high", "#,
                r#""status": "in_progress", "content": "Write tests"}, "#,
                r#"{"status": "completed", "content": "Read spec", "priority": "low"}"#,
                r#"], "extra": true}"#,
            ),
            concat!(
                r#"{"todos":["#,
                r#"{"content":"Write tests","status":"in_progress","priority":"high"},"#,
                r#"{"content":"Read spec","status":"completed","priority":"low"}"#,
                r#"]}"#,
            ),
        );
    }

    #[test]
    fn todowrite_puts_priority_first_when_every_item_is_completed() {
        check(
            "todowrite",
            concat!(
                r#"{"todos": ["#,
                r#"{"content": "a", "status": "completed", "priority": "high"}, "#,
                r#"{"status": "completed", "content": "b"}"#,
                r#"]}"#,
            ),
            concat!(
                r#"{"todos":["#,
                r#"{"priority":"high","content":"a","status":"completed"},"#,
                r#"{"priority":"","content":"b","status":"completed"}"#,
                r#"]}"#,
            ),
        );
    }

    #[test]
    fn todowrite_missing_or_non_string_fields_become_empty_strings() {
        check(
            "todowrite",
            r#"{"todos": [{"content": 7, "status": null}, "loose", {}]}"#,
            concat!(
                r#"{"todos":["#,
                r#"{"content":"","status":"","priority":""},"#,
                r#"{"content":"","status":"","priority":""},"#,
                r#"{"content":"","status":"","priority":""}"#,
                r#"]}"#,
            ),
        );
    }

    #[test]
    fn todowrite_with_an_empty_list_is_rebuilt() {
        check("todowrite", r#"{"todos": [], "x": 1}"#, r#"{"todos":[]}"#);
    }

    #[test]
    fn todowrite_without_a_todos_array_falls_back() {
        check(
            "todowrite",
            r#"{"x": 1, "todos": "a, b"}"#,
            r#"{"x":1,"todos":"a, b"}"#,
        );
        check("todowrite", r#"{"x": 1}"#, r#"{"x":1}"#);
    }

    // write

    #[test]
    fn write_keeps_file_path_then_content() {
        check(
            "write",
            r#"{"content": "hi\n", "mode": "0644", "filePath": "/tmp/a.txt"}"#,
            r#"{"filePath":"/tmp/a.txt","content":"hi\n"}"#,
        );
    }

    #[test]
    fn write_with_a_non_string_field_falls_back() {
        check(
            "write",
            r#"{"content": 5, "filePath": "/tmp/a.txt"}"#,
            r#"{"content":5,"filePath":"/tmp/a.txt"}"#,
        );
        check(
            "write",
            r#"{"filePath": "/tmp/a.txt"}"#,
            r#"{"filePath":"/tmp/a.txt"}"#,
        );
    }

    // edit

    #[test]
    fn edit_drops_replace_all() {
        check(
            "edit",
            r#"{"replaceAll": true, "newString": "b", "oldString": "a", "filePath": "/x.rs"}"#,
            r#"{"filePath":"/x.rs","oldString":"a","newString":"b"}"#,
        );
    }

    #[test]
    fn edit_missing_a_string_falls_back_and_keeps_replace_all() {
        check(
            "edit",
            r#"{"replaceAll": true, "oldString": "a", "filePath": "/x.rs"}"#,
            r#"{"replaceAll":true,"oldString":"a","filePath":"/x.rs"}"#,
        );
    }

    // bash

    #[test]
    fn bash_keeps_the_original_key_order() {
        check(
            "bash",
            concat!(
                r#"{"description": "List files", "timeout": 5000, "#,
                r#""command": "ls -la", "workdir": "/tmp", "extra": 1}"#,
            ),
            r#"{"description":"List files","timeout":5000,"command":"ls -la","workdir":"/tmp"}"#,
        );
    }

    #[test]
    fn bash_with_only_a_command() {
        check("bash", r#"{"command": "pwd"}"#, r#"{"command":"pwd"}"#);
    }

    #[test]
    fn bash_drops_non_string_workdir_and_description_but_keeps_any_timeout() {
        check(
            "bash",
            r#"{"workdir": 3, "timeout": {"ms": 1}, "description": null, "command": "ls"}"#,
            r#"{"timeout":{"ms":1},"command":"ls"}"#,
        );
        check(
            "bash",
            r#"{"command": "ls", "timeout": null}"#,
            r#"{"command":"ls","timeout":null}"#,
        );
    }

    #[test]
    fn bash_orders_by_the_first_textual_occurrence_even_inside_a_value() {
        // `"workdir"` first appears as the description's value, before the `command` key.
        check(
            "bash",
            r#"{"description": "workdir", "command": "ls", "workdir": "/w"}"#,
            r#"{"description":"workdir","workdir":"/w","command":"ls"}"#,
        );
    }

    #[test]
    fn bash_keys_not_found_in_the_text_go_last_in_listed_order() {
        check(
            "bash",
            r#"{"time\u006fut": 5, "descripti\u006fn": "d", "workdir": "/w", "command": "ls"}"#,
            r#"{"workdir":"/w","command":"ls","description":"d","timeout":5}"#,
        );
    }

    #[test]
    fn bash_with_an_argv_command_falls_back() {
        check(
            "bash",
            r#"{"command": ["ls", "-la"], "timeout": null}"#,
            r#"{"command":["ls","-la"],"timeout":null}"#,
        );
    }

    // grep

    #[test]
    fn grep_uses_a_fixed_order() {
        check(
            "grep",
            r#"{"include": "*.rs", "path": "src", "pattern": "fn main", "x": 1}"#,
            r#"{"pattern":"fn main","path":"src","include":"*.rs"}"#,
        );
    }

    #[test]
    fn grep_drops_non_string_optionals() {
        check(
            "grep",
            r#"{"include": "*.rs", "path": 1, "pattern": "x"}"#,
            r#"{"pattern":"x","include":"*.rs"}"#,
        );
    }

    #[test]
    fn grep_without_a_string_pattern_falls_back() {
        check(
            "grep",
            r#"{"path": "src", "pattern": 1}"#,
            r#"{"path":"src","pattern":1}"#,
        );
    }

    // glob

    #[test]
    fn glob_keeps_pattern_then_path() {
        check(
            "glob",
            r#"{"path": "src", "pattern": "**/*.rs", "include": "x"}"#,
            r#"{"pattern":"**/*.rs","path":"src"}"#,
        );
        check(
            "glob",
            r#"{"path": false, "pattern": "*.md"}"#,
            r#"{"pattern":"*.md"}"#,
        );
    }

    #[test]
    fn glob_without_a_pattern_falls_back() {
        check("glob", r#"{"path": "src"}"#, r#"{"path":"src"}"#);
    }

    // read

    #[test]
    fn read_keeps_file_path_offset_limit_with_any_values() {
        check(
            "read",
            r#"{"limit": 20, "offset": "10", "filePath": "/a.rs", "x": 1}"#,
            r#"{"filePath":"/a.rs","offset":"10","limit":20}"#,
        );
        check(
            "read",
            r#"{"offset": null, "filePath": "/a.rs"}"#,
            r#"{"filePath":"/a.rs","offset":null}"#,
        );
    }

    #[test]
    fn read_without_a_string_file_path_falls_back() {
        check(
            "read",
            r#"{"limit": 20, "filePath": ["/a.rs"]}"#,
            r#"{"limit":20,"filePath":["/a.rs"]}"#,
        );
    }

    // task

    #[test]
    fn task_keeps_the_original_key_order_and_drops_unknown_fields() {
        check(
            "task",
            concat!(
                r#"{"prompt": "Find the bug", "x": 1, "subagent_type": "general", "#,
                r#""command": "/fix", "description": "Find bug", "task_id": "t1"}"#,
            ),
            concat!(
                r#"{"prompt":"Find the bug","subagent_type":"general","#,
                r#""command":"/fix","description":"Find bug","task_id":"t1"}"#,
            ),
        );
    }

    #[test]
    fn task_drops_non_string_optionals() {
        check(
            "task",
            r#"{"description": "d", "subagent_type": "s", "prompt": "p", "task_id": 4}"#,
            r#"{"description":"d","subagent_type":"s","prompt":"p"}"#,
        );
    }

    #[test]
    fn task_missing_a_required_string_falls_back() {
        check(
            "task",
            r#"{"description": "d", "prompt": "p", "task_id": "t"}"#,
            r#"{"description":"d","prompt":"p","task_id":"t"}"#,
        );
    }
}
