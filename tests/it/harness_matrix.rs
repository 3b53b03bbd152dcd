//! Every front × each of the reference's chat harnesses, over sockets: the client offers its own
//! shell tool in its own dialect (opencode on Chat, Codex on Responses, Claude Code on Messages,
//! Gemini CLI on the Gemini API), the recording fake upstream calls only **that harness's**
//! shell tool, the client gets the call in its own tool, and its result reaches the upstream's
//! next request as the harness's call and result (issue 31's socket matrix).

use serde_json::{Value, json};

use crate::support::fake_upstream::Step;
use crate::support::sse::DONE;
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// The harnesses, and the shell call their model makes: (tool, arguments). `minimal` has no
/// tools of its own: its model calls the client's.
const HARNESSES: [(&str, Option<(&str, &str)>); 7] = [
    ("pi", Some(("bash", r#"{"command":"echo hi"}"#))),
    (
        "qwen-code",
        Some(("run_shell_command", r#"{"command":"echo hi"}"#)),
    ),
    ("kimi-code", Some(("Bash", r#"{"command":"echo hi"}"#))),
    ("kimi-cli", Some(("Shell", r#"{"command":"echo hi"}"#))),
    (
        "deepseek-tui",
        Some(("exec_shell", r#"{"command":"echo hi"}"#)),
    ),
    ("little-coder", Some(("bash", r#"{"command":"echo hi"}"#))),
    ("minimal", None),
];

#[derive(Debug, Clone, Copy)]
pub(crate) enum Front {
    Chat,
    Responses,
    Messages,
    Gemini,
}

pub(crate) const FRONTS: [Front; 4] = [
    Front::Chat,
    Front::Responses,
    Front::Messages,
    Front::Gemini,
];

impl Front {
    /// The client's shell tool: its name, its call's arguments for `echo hi`.
    pub(crate) fn shell(self) -> (&'static str, Value) {
        match self {
            Front::Chat => ("bash", json!({"command": "echo hi"})),
            Front::Responses => ("exec_command", json!({"cmd": "echo hi"})),
            Front::Messages => ("Bash", json!({"command": "echo hi"})),
            Front::Gemini => ("run_shell_command", json!({"command": "echo hi"})),
        }
    }

    pub(crate) fn headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Front::Chat => vec![("user-agent", "opencode/1.18.33")],
            Front::Responses => vec![
                ("user-agent", "codex_exec/0.171.0 (Linux)"),
                ("originator", "codex_exec"),
            ],
            Front::Messages => vec![
                ("user-agent", "claude-cli/2.1.332 (external, sdk-cli)"),
                ("x-app", "cli"),
            ],
            Front::Gemini => vec![("user-agent", "GeminiCLI/0.61.0/m (linux; x64)")],
        }
    }

    pub(crate) fn path(self, harness: &str) -> String {
        match self {
            Front::Chat => format!("/harness/{harness}/v1/chat/completions"),
            Front::Responses => format!("/harness/{harness}/v1/responses"),
            Front::Messages => format!("/harness/{harness}/v1/messages"),
            Front::Gemini => format!("/harness/{harness}/v1beta/models/m:generateContent"),
        }
    }

    /// The request of a turn: the prompt, then (second turn) the client's call and its result.
    pub(crate) fn request(self, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        match self {
            Front::Chat => {
                let mut messages = vec![json!({"role": "user", "content": "say hi"})];
                if let Some(args) = answered {
                    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}));
                    messages
                        .push(json!({"role": "tool", "tool_call_id": "call_1", "content": "hi\n"}));
                }
                json!({"model": "m", "stream": false, "messages": messages, "tools": [{"type": "function", "function": {"name": tool, "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "workdir": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}}}]})
            }
            Front::Responses => {
                let mut input = vec![
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}),
                ];
                if let Some(args) = answered {
                    input.push(json!({"type": "function_call", "call_id": "call_1", "name": tool, "arguments": args.to_string()}));
                    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "Process exited with code 0\nOutput:\nhi\n"}));
                }
                json!({"model": "m", "stream": false, "input": input, "tools": [{"type": "function", "name": tool, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}}, "required": ["cmd"]}}]})
            }
            Front::Messages => {
                let mut messages = vec![json!({"role": "user", "content": "say hi"})];
                if let Some(args) = answered {
                    messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": args}]}));
                    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi\n"}]}));
                }
                json!({"model": "m", "max_tokens": 100, "messages": messages, "tools": [{"name": tool, "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}]})
            }
            Front::Gemini => {
                let mut contents = vec![json!({"role": "user", "parts": [{"text": "say hi"}]})];
                if let Some(args) = answered {
                    contents.push(json!({"role": "model", "parts": [{"functionCall": {"id": "call_1", "name": tool, "args": args}}]}));
                    contents.push(json!({"role": "user", "parts": [{"functionResponse": {"id": "call_1", "name": tool, "response": {"output": "hi\n"}}}]}));
                }
                json!({"contents": contents, "tools": [{"functionDeclarations": [{"name": tool, "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}, "dir_path": {"type": "string"}}, "required": ["command"]}}]}]})
            }
        }
    }

    /// The one call of a (non-streamed) answer: (name, arguments).
    pub(crate) fn call(self, answer: &Value) -> Option<(String, Value)> {
        match self {
            Front::Chat => {
                let call = &answer["choices"][0]["message"]["tool_calls"][0]["function"];
                Some((
                    call["name"].as_str()?.to_owned(),
                    serde_json::from_str(call["arguments"].as_str()?).ok()?,
                ))
            }
            Front::Responses => {
                let call = answer["output"]
                    .as_array()?
                    .iter()
                    .find(|i| i["type"] == "function_call")?;
                Some((
                    call["name"].as_str()?.to_owned(),
                    serde_json::from_str(call["arguments"].as_str()?).ok()?,
                ))
            }
            Front::Messages => {
                let call = answer["content"]
                    .as_array()?
                    .iter()
                    .find(|b| b["type"] == "tool_use")?;
                Some((call["name"].as_str()?.to_owned(), call["input"].clone()))
            }
            Front::Gemini => {
                let call = answer["candidates"][0]["content"]["parts"]
                    .as_array()?
                    .iter()
                    .find_map(|p| p.get("functionCall"))?;
                Some((call["name"].as_str()?.to_owned(), call["args"].clone()))
            }
        }
    }
}

fn call_reply(tool: &str, arguments: &str) -> Reply {
    let call = json!({"index": 0, "id": "call_up", "type": "function", "function": {"name": tool, "arguments": arguments}});
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    Reply::steps(vec![
        Step::Send(chunk(json!({"tool_calls": [call]}), Value::Null).into_bytes()),
        Step::Send(chunk(json!({}), json!("tool_calls")).into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ])
}

fn text_reply() -> Reply {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    Reply::steps(vec![
        Step::Send(chunk(json!({"content": "Done."}), Value::Null).into_bytes()),
        Step::Send(chunk(json!({}), json!("stop")).into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ])
}

/// The harness's view of the upstream's second request: the call it made and the result it got.
fn call_and_result(request: &Recorded) -> (Option<String>, Option<String>, String) {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()).cloned());
    let name = call
        .as_ref()
        .and_then(|c| c["function"]["name"].as_str().map(str::to_owned));
    let arguments = call
        .as_ref()
        .and_then(|c| c["function"]["arguments"].as_str().map(str::to_owned));
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    (name, arguments, result)
}

async fn round_trip(
    front: Front,
    harness: &str,
    upstream_call: Option<(&str, &str)>,
) -> Result<(), String> {
    let (client_tool, client_args) = front.shell();
    let client_args_text = client_args.to_string();
    let (tool, arguments) = upstream_call.unwrap_or((client_tool, &client_args_text));
    let (tool, arguments) = (tool.to_owned(), arguments.to_owned());
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            return Reply::sse(&[DONE]);
        }
        let body = r.json();
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if answered {
            text_reply()
        } else {
            call_reply(&tool, &arguments)
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let send = |body: Value| {
        let mut request = app.post(&front.path(harness)).json(&body);
        for (k, v) in front.headers() {
            request = request.header(k, v);
        }
        if matches!(front, Front::Gemini) {
            request = request.header("x-goog-api-key", "sk-test");
        }
        request.send()
    };
    let first = send(front.request(None)).await.map_err(|e| e.to_string())?;
    let status = first.status();
    let answer: Value = first.json().await.map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("turn 1: {status} {answer}"));
    }
    let offered: Vec<String> = upstream.main_requests()[0].json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    let harness_tool = upstream_call.map_or(client_tool, |(t, _)| t);
    if !offered.iter().any(|t| t == harness_tool) {
        return Err(format!(
            "the upstream was not offered {harness_tool}: {offered:?}"
        ));
    }
    let Some((name, args)) = front.call(&answer) else {
        return Err(format!("no call in the client's answer: {answer}"));
    };
    if name != client_tool
        || args.get(if matches!(front, Front::Responses) {
            "cmd"
        } else {
            "command"
        }) != Some(&json!("echo hi"))
    {
        return Err(format!(
            "the client got {name} {args}, not its {client_tool} running echo hi"
        ));
    }
    let second = send(front.request(Some(&args)))
        .await
        .map_err(|e| e.to_string())?;
    if second.status() != 200 {
        return Err(format!(
            "turn 2: {} {}",
            second.status(),
            second.text().await.unwrap_or_default()
        ));
    }
    let requests = upstream.main_requests();
    let Some(last) = requests.last().filter(|_| requests.len() == 2) else {
        return Err(format!("{} main requests upstream", requests.len()));
    };
    let (name, arguments, result) = call_and_result(last);
    let args: Value = arguments
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_default();
    let command = args.get("command").or_else(|| args.get("cmd"));
    if name.as_deref() != Some(harness_tool)
        || command != Some(&json!("echo hi"))
        || !result.contains("hi")
    {
        return Err(format!(
            "turn 2 upstream: call {name:?} {arguments:?}, result {result}"
        ));
    }
    Ok(())
}

#[tokio::test]
async fn every_front_completes_a_tool_round_trip_through_every_chat_harness() {
    let mut failures = Vec::new();
    for (harness, call) in HARNESSES {
        for front in FRONTS {
            if let Err(why) = round_trip(front, harness, call).await {
                failures.push(format!("{front:?} × {harness}: {why}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
