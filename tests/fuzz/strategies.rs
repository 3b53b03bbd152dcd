//! Input generators: byte soups from a protocol's own tokens, chat requests with any subtree
//! replaced by arbitrary JSON, and byte-level mutation of corpus inputs.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

/// Bytes built from SSE's own tokens and noise, so line and event boundaries are frequent.
pub fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data".to_vec()),
        Just(b"event: x".to_vec()),
        Just(b": comment".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"[DONE]".to_vec()),
        Just(br#"{"choices":[{"delta":{"content":"x"}}]}"#.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(token, 0..64).prop_map(|parts| parts.concat())
}

/// Where to split a byte string into chunks (cut points as fractions of its length).
pub fn splits() -> impl Strategy<Value = Vec<Index>> {
    proptest::collection::vec(any::<Index>(), 0..12)
}

/// Any JSON value, small.
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Strings that hit the rewrite's special cases: quoting, contextual blocks, tags, unicode.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z \\n\"'<>/{}:]{0,40}",
        Just("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>".to_owned()),
        Just("<think>x</think>".to_owned()),
        Just("{\"command\":[\"bash\",\"-lc\",\"ls\"]}".to_owned()),
        Just(String::new()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("role".to_owned()),
        Just("content".to_owned()),
        Just("type".to_owned()),
        Just("text".to_owned()),
        Just("name".to_owned()),
        Just("arguments".to_owned()),
        Just("tool_calls".to_owned()),
        Just("function".to_owned()),
        "[a-z_]{1,8}",
    ]
}

fn role() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("system")),
        Just(json!("developer")),
        Just(json!("user")),
        Just(json!("assistant")),
        Just(json!("tool")),
        any_json(),
    ]
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(Value::String),
        proptest::collection::vec(
            text().prop_map(|t| json!({"type": "text", "text": t})),
            0..3
        )
        .prop_map(Value::Array),
        Just(Value::Null),
        any_json(),
    ]
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("bash".to_owned()),
        Just("shell".to_owned()),
        Just("shell_command".to_owned()),
        Just("read".to_owned()),
        Just("edit".to_owned()),
        Just("write".to_owned()),
        Just("todowrite".to_owned()),
        Just("task".to_owned()),
        Just("apply_patch".to_owned()),
        Just("request_user_input".to_owned()),
        "[a-z_]{1,10}",
    ]
}

fn message() -> impl Strategy<Value = Value> {
    (
        role(),
        content(),
        proptest::option::of(proptest::collection::vec(
            (tool_name(), arguments(), "[a-z0-9_]{0,6}"),
            0..3,
        )),
        proptest::option::of("[a-z0-9_]{0,6}"),
    )
        .prop_map(|(role, content, calls, call_id)| {
            let mut message = json!({"role": role, "content": content});
            if let Some(calls) = calls {
                message["tool_calls"] = calls
                    .into_iter()
                    .map(|(name, args, id)| {
                        json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": args}})
                    })
                    .collect();
            }
            if let Some(id) = call_id {
                message["tool_call_id"] = json!(id);
            }
            message
        })
}

/// Tool-call arguments: usually JSON text with the tools' own field names, sometimes not JSON.
pub fn arguments() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("command".to_owned()),
        Just("description".to_owned()),
        Just("filePath".to_owned()),
        Just("oldString".to_owned()),
        Just("newString".to_owned()),
        Just("content".to_owned()),
        Just("todos".to_owned()),
        Just("pattern".to_owned()),
        Just("path".to_owned()),
        Just("include".to_owned()),
        Just("offset".to_owned()),
        Just("limit".to_owned()),
        Just("prompt".to_owned()),
        Just("subagent_type".to_owned()),
        Just("workdir".to_owned()),
        Just("timeout".to_owned()),
        key(),
    ];
    prop_oneof![
        4 => proptest::collection::vec((field, any_json()), 0..6).prop_map(|pairs| {
            Value::Object(pairs.into_iter().collect::<Map<_, _>>()).to_string()
        }),
        1 => any_json().prop_map(|v| v.to_string()),
        1 => text(),
    ]
}

fn tool_def() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => tool_name().prop_map(|name| json!({"type": "function",
            "function": {"name": name, "parameters": {"type": "object"}}})),
        1 => any_json(),
    ]
}

/// A Chat Completions request, well-formed or nearly so, as JSON bytes.
pub fn chat_request() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::option::of(any::<bool>()),
        proptest::collection::vec(message(), 0..8),
        proptest::option::of(proptest::collection::vec(tool_def(), 0..5)),
        proptest::option::of((key(), any_json())),
    )
        .prop_map(|(stream, messages, tools, extra)| {
            let mut body = json!({"model": "m", "messages": messages});
            if let Some(stream) = stream {
                body["stream"] = json!(stream);
            }
            if let Some(tools) = tools {
                body["tools"] = json!(tools);
            }
            if let Some((k, v)) = extra {
                body[k] = v;
            }
            serde_json::to_vec(&body).unwrap()
        })
}

/// Headers that pick client profiles, modes and environment: (name, value) pairs.
pub fn headers() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let pair = prop_oneof![
        prop_oneof![
            Just("codex_exec/0.94.0 (Linux)".to_owned()),
            Just("opencode/1.0".to_owned()),
            "[ -~]{0,12}",
        ]
        .prop_map(|v| ("user-agent", v)),
        prop_oneof![Just("codex".to_owned()), Just("opencode".to_owned())]
            .prop_map(|v| ("x-harness-client", v)),
        prop_oneof![
            Just("plan".to_owned()),
            Just("default".to_owned()),
            "[a-z]{0,6}"
        ]
        .prop_map(|v| ("x-collaboration-mode", v)),
        "[ -~]{0,16}".prop_map(|v| ("x-harness-cwd", v)),
        prop_oneof![
            Just("linux".to_owned()),
            Just("darwin".to_owned()),
            Just("win32".to_owned())
        ]
        .prop_map(|v| ("x-harness-platform", v)),
    ];
    proptest::collection::vec(pair, 0..4)
}

/// A corpus input with a few byte-level edits: flip, insert, delete, or splice in another input.
pub fn mutated(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let edits =
        proptest::collection::vec((0u8..4, any::<Index>(), any::<u8>(), any::<Index>()), 0..6);
    (any::<Index>(), edits).prop_map(move |(pick, edits)| {
        let mut bytes = corpus[pick.index(corpus.len())].clone();
        for (op, at, byte, other) in edits {
            let at = at.index(bytes.len() + 1);
            match op {
                0 if at < bytes.len() => bytes[at] ^= byte | 1,
                1 => bytes.insert(at, byte),
                2 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => {
                    let donor = &corpus[other.index(corpus.len())];
                    let from = other.index(donor.len() + 1);
                    bytes.splice(at..at, donor[from..].iter().take(64).copied());
                }
            }
        }
        bytes
    })
}

/// Model answers of the text-protocol harnesses: their own tokens (tags, fences, JSON pieces,
/// editor lines, keys) and noise, so every extraction rule's edges come up.
pub fn action_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("<tool_invoke>".to_owned()),
        Just("</tool_invoke>".to_owned()),
        Just("<name>execute_bash</name>".to_owned()),
        Just("<code>".to_owned()),
        Just("</code>".to_owned()),
        Just("<invoke name=\"bash\">".to_owned()),
        Just("</invoke>".to_owned()),
        Just("<parameter name=\"command\">".to_owned()),
        Just("<parameter>".to_owned()),
        Just("</parameter>".to_owned()),
        Just("<execute_bash>".to_owned()),
        Just("</execute_bash>".to_owned()),
        Just("```".to_owned()),
        Just("bash\n".to_owned()),
        Just("str_replace_editor ".to_owned()),
        Just("view /a --view_range 1 -1".to_owned()),
        Just("create /a --file_text 'x\ny'".to_owned()),
        Just("insert /a --insert_line 3 --new_str \"z\"".to_owned()),
        Just("str_replace /a --old_str 'a' --new_str 'b'".to_owned()),
        Just("submit".to_owned()),
        Just("&amp;&lt;&gt;".to_owned()),
        Just("{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[".to_owned()),
        Just("{\"keystrokes\":\"ls\\n\",\"duration\":0.1}".to_owned()),
        Just("{\"keystrokes\":\"C-c\"}".to_owned()),
        Just("{\"keystrokes\":\"\",\"duration\":1e308}".to_owned()),
        Just("],\"task_complete\":true}".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\n".to_owned()),
        Just("'".to_owned()),
        text(),
    ];
    proptest::collection::vec(token, 0..48).prop_map(|parts| parts.concat())
}
