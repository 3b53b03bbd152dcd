//! Tool bridge and collaboration modes through the real server: a Codex-dialect agent gets calls
//! it can run, and its follow-up reaches the upstream in opencode's terms.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::sse::{DONE, data_lines, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, error_of, test_config};

const CODEX_UA: &str = "codex_exec/0.94.0 (Debian 12; x86_64) dumb (codex-exec; 0.94.0)";

fn codex_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "shell", "description": "Runs a shell command", "strict": false,
            "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}, "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}}, "required": ["command"]}}},
        {"type": "function", "function": {"name": "update_plan", "parameters": {"type": "object", "properties": {"plan": {"type": "array"}}}}},
        {"type": "function", "function": {"name": "apply_patch", "parameters": {"type": "object"}}}
    ])
}

fn call_delta(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "mock-model", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
    )
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "mock-model", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

/// The upstream, shown opencode's tools, answers with a `bash` call in many fragments.
fn bash_answer() -> Reply {
    Reply::steps(vec![
        Step::Send(text_chunk("Listing.").into_bytes()),
        Step::Send(call_delta(0, Some("call_ls"), Some("bash"), "").into_bytes()),
        Step::Sleep(Duration::from_millis(5)),
        Step::Send(call_delta(0, None, None, "{\"command\":\"ls").into_bytes()),
        Step::Send(
            call_delta(0, None, None, " -la\",\"description\":\"Lists files\"").into_bytes(),
        ),
        Step::Send(call_delta(0, None, None, ",\"workdir\":\"/repo\"}").into_bytes()),
        Step::Send(finish("tool_calls").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ])
}

/// Empty titles; every other request answered with the fragmented `bash` call.
async fn bash_upstream() -> FakeUpstream {
    FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[DONE])
        } else {
            bash_answer()
        }
    })
    .await
}

fn first_turn() -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "messages": [
            {"role": "system", "content": "You are Codex, a coding agent."},
            {"role": "user", "content": "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>"},
            {"role": "user", "content": "List the files"}
        ],
        "tools": codex_tools()
    })
}

fn non_title(upstream: &FakeUpstream) -> Vec<Recorded> {
    upstream.main_requests()
}

#[tokio::test]
async fn a_codex_agent_gets_a_shell_call_and_its_follow_up_reaches_the_upstream_as_opencode() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[&text_chunk("File listing"), DONE])
        } else if r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
        {
            Reply::sse(&[&text_chunk("Two files."), &finish("stop"), DONE])
        } else {
            bash_answer()
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;

    // Turn 1: the agent speaks Codex's dialect (recognised by its User-Agent).
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", CODEX_UA)
        .json(&first_turn())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("x-harness-dropped-tools").is_none());
    assert_eq!(
        response.headers()["x-harness-passthrough-tools"],
        "apply_patch",
        "no opencode counterpart: kept as the client's own"
    );
    let events = data_lines(&read_all(response).await);
    let chunks: Vec<Value> = events
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["content"], "Listing.");
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "the call arrives once, complete: {chunks:?}"
    );
    assert_eq!(
        calls[0],
        &json!([{"index": 0, "id": "call_ls", "type": "function", "function": {
            "name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls -la\"],\"workdir\":\"/repo\"}"
        }}])
    );
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));

    // What the upstream saw: opencode's tools for what Codex can run, env from Codex's context.
    let first = &non_title(&upstream)[0].json();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bash", "todowrite", "apply_patch"]);
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("  Working directory: /repo\n")
    );

    // Turn 2: the agent ran the call and sends the result the Codex way.
    let mut follow_up = first_turn();
    let messages = follow_up["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": "Listing.", "tool_calls": [
        {"id": "call_ls", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls -la\"],\"workdir\":\"/repo\"}"}}
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_ls", "content": "{\"output\":\"a.txt\\nb.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.01}}"}));
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", CODEX_UA)
        .json(&follow_up)
        .send()
        .await
        .unwrap();
    assert!(read_all(response).await.contains("Two files."));

    let second = &non_title(&upstream)[1].json();
    let history = &second["messages"].as_array().unwrap()[1..];
    assert_eq!(
        history,
        [
            json!({"role": "user", "content": "\"List the files\""}),
            json!({"role": "assistant", "content": "Listing.", "tool_calls": [
                {"type": "function", "id": "call_ls", "function": {"name": "bash", "arguments": "{\"command\":\"ls -la\",\"workdir\":\"/repo\"}"}}
            ]}),
            json!({"role": "tool", "content": "a.txt\nb.txt\n", "tool_call_id": "call_ls"}),
        ]
    );
}

#[tokio::test]
async fn a_non_streaming_codex_request_gets_the_translated_call() {
    let upstream = bash_upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut request = first_turn();
    request["stream"] = json!(false);
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness-client", "codex")
        .json(&request)
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"],
        json!([{"id": "call_ls", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls -la\"],\"workdir\":\"/repo\"}"}}])
    );
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn an_opencode_client_gets_the_stream_byte_for_byte() {
    let upstream = bash_upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut request = first_turn();
    request["stream_options"] = json!({"include_usage": true});
    // opencode's own `bash`, as opencode offers it: the call reaches it as the model made it. (A
    // call to a tool the client does not offer never reaches it: `corrections.rs`.)
    let opencode: Vec<Value> =
        serde_json::from_str(include_str!("../../prompts/opencode/tools.json")).unwrap();
    request["tools"] = json!([opencode
        .iter()
        .find(|t| t["function"]["name"] == "bash")
        .unwrap()]);
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", "opencode/0.15.0")
        .json(&request)
        .send()
        .await
        .unwrap();
    let text = read_all(response).await;
    let expected: String = [
        text_chunk("Listing."),
        call_delta(0, Some("call_ls"), Some("bash"), ""),
        call_delta(0, None, None, "{\"command\":\"ls"),
        call_delta(0, None, None, " -la\",\"description\":\"Lists files\""),
        call_delta(0, None, None, ",\"workdir\":\"/repo\"}"),
        finish("tool_calls"),
        DONE.to_owned(),
    ]
    .concat();
    assert_eq!(text, expected);
}

#[tokio::test]
async fn unknown_client_profile_is_a_clear_400() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[DONE])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness-client", "emacs")
        .json(&first_turn())
        .send()
        .await
        .unwrap();
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "unknown_client_profile"));
    assert!(message.contains("opencode, codex"), "{message}");
    assert_eq!(upstream.count(), 0);
}

fn plain_turn() -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "user", "content": "Plan the migration"}
    ], "tools": [
        {"type": "function", "function": {"name": "request_user_input", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    ]})
}

#[tokio::test]
async fn plan_mode_adds_its_block_keeps_request_user_input_and_sets_medium_effort() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("ok"), DONE])).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let plan = include_str!("../../prompts/collaboration/plan.md");
    read_all(
        app.post("/v1/chat/completions")
            .header("x-collaboration-mode", "plan")
            .json(&plain_turn())
            .send()
            .await
            .unwrap(),
    )
    .await;
    let body = upstream.requests()[0].json();
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": format!("<collaboration_mode>{plan}</collaboration_mode>")})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": "\"Plan the migration\""})
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "request_user_input"]);
    assert_eq!(body["reasoning_effort"], "medium");
}

#[tokio::test]
async fn default_mode_renders_known_mode_names_and_removes_request_user_input() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("ok"), DONE])).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    for alias in ["default", "code", "pair_programming", "execute", "custom"] {
        let response = app
            .post("/v1/chat/completions")
            .header("x-collaboration-mode", alias)
            .json(&plain_turn())
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.headers()["x-harness-dropped-tools"],
            "request_user_input",
            "{alias}"
        );
        read_all(response).await;
    }
    for recorded in upstream.requests() {
        let body = recorded.json();
        let block = body["messages"][1]["content"].as_str().unwrap();
        assert!(
            block.starts_with("<collaboration_mode># Collaboration Mode: Default"),
            "{block}"
        );
        assert!(block.contains("Known mode names are Default and Plan."));
        assert!(block.ends_with("</collaboration_mode>") && !block.contains("{{"));
        assert!(body.get("reasoning_effort").is_none());
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["read"]);
    }
}

#[tokio::test]
async fn the_block_is_not_added_twice_and_unknown_modes_are_refused() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("ok"), DONE])).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let plan = include_str!("../../prompts/collaboration/plan.md");
    let mut request = plain_turn();
    request["messages"] = json!([
        {"role": "developer", "content": format!("<collaboration_mode>{plan}</collaboration_mode>")},
        {"role": "user", "content": "Plan the migration"}
    ]);
    read_all(
        app.post("/v1/chat/completions")
            .header("x-collaboration-mode", "plan")
            .json(&request)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let body = upstream.requests()[0].json();
    let blocks = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .starts_with("<collaboration_mode>")
        })
        .count();
    assert_eq!(blocks, 1);

    let response = app
        .post("/v1/chat/completions")
        .header("x-collaboration-mode", "yolo")
        .json(&plain_turn())
        .send()
        .await
        .unwrap();
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "unknown_collaboration_mode"));
    assert!(
        message.contains("default, plan") && message.contains("pair_programming"),
        "{message}"
    );
}

/// Codex with gpt-5 models offers `shell_command` (a string command) instead of `shell`.
#[tokio::test]
async fn a_codex_agent_offering_shell_command_gets_bash_upstream_and_shell_command_back() {
    let upstream = bash_upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut request = first_turn();
    request["tools"] = json!([
        {"type": "function", "name": "shell_command", "function": {"name": "shell_command", "parameters": {"type": "object",
            "properties": {"command": {"type": "string"}, "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}, "login": {"type": "boolean"}}}}},
        {"type": "function", "function": {"name": "update_plan", "parameters": {"type": "object"}}}
    ]);
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", CODEX_UA)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("x-harness-dropped-tools").is_none());
    let text = read_all(response).await;
    let call = data_lines(&text)
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .find_map(|c| c["choices"][0]["delta"].get("tool_calls").cloned())
        .expect("a tool call");
    assert_eq!(
        call[0]["function"],
        json!({"name": "shell_command", "arguments": "{\"command\":\"ls -la\",\"workdir\":\"/repo\"}"})
    );
    let sent = upstream.main_requests()[0].json();
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bash", "todowrite"]);
    assert!(
        upstream.main_requests()[0].header("thread-id").is_some(),
        "the reference's thread headers go upstream"
    );
}

/// The upstream, shown opencode's tools, answers every main request with one opencode call
/// `name(arguments)`, its arguments in two fragments; titles get nothing.
async fn calling_upstream(name: &'static str, arguments: Value) -> FakeUpstream {
    FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            return Reply::sse(&[DONE]);
        }
        let text = arguments.to_string();
        let (a, b) = text.split_at(text.len() / 2);
        Reply::steps(vec![
            Step::Send(call_delta(0, Some("call_1"), Some(name), "").into_bytes()),
            Step::Send(call_delta(0, None, None, a).into_bytes()),
            Step::Send(call_delta(0, None, None, b).into_bytes()),
            Step::Send(finish("tool_calls").into_bytes()),
            Step::Send(DONE.as_bytes().to_vec()),
        ])
    })
    .await
}

/// The one call a streamed Chat Completions answer carries: (name, arguments as JSON).
fn streamed_call(text: &str) -> (String, Value) {
    let mut name = String::new();
    let mut arguments = String::new();
    for event in data_lines(text).iter().filter(|e| *e != "[DONE]") {
        let chunk: Value = serde_json::from_str(event).unwrap();
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            name.push_str(call["function"]["name"].as_str().unwrap_or_default());
            arguments.push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    (name, serde_json::from_str(&arguments).unwrap())
}

fn upstream_tool_names(upstream: &FakeUpstream) -> Vec<String> {
    upstream.main_requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn chat_turn(tools: &Value) -> Value {
    json!({"model": "mock-model", "stream": true,
        "messages": [{"role": "user", "content": "Make a file"}], "tools": tools})
}

const OPENCODE_BASH: &str =
    r#"{"command":"echo hi > made.txt","description":"Writes a file","workdir":"/w"}"#;

/// llm 0.36's function `bash(command)` (captured): opencode's `bash` upstream, and the call
/// back without the label `description` the Python function cannot take, and with the
/// `workdir` it cannot take either folded into the command (issue 29: never dropped).
#[tokio::test]
async fn an_llm_style_bash_function_gets_a_call_with_only_its_own_parameter() {
    let upstream = calling_upstream("bash", serde_json::from_str(OPENCODE_BASH).unwrap()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools = json!([{"type": "function", "function": {"name": "bash", "parameters":
        {"properties": {"command": {"type": "string"}}, "required": ["command"], "type": "object"}}}]);
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", "OpenAI/Python 3.57.0")
        .json(&chat_turn(&tools))
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("x-harness-passthrough-tools")
            .is_none()
    );
    let (name, arguments) = streamed_call(&read_all(response).await);
    assert_eq!(
        (name.as_str(), arguments),
        ("bash", json!({"command": "cd /w && echo hi > made.txt"}))
    );
    assert_eq!(
        upstream_tool_names(&upstream),
        ["bash"],
        "opencode's own bash upstream"
    );
    let sent = &upstream.main_requests()[0].json()["tools"][0]["function"]["parameters"];
    assert!(
        sent["properties"].get("description").is_some(),
        "opencode's definition: {sent}"
    );
}

/// The openai SDK's strict tool, not streamed: exactly its one parameter comes back.
#[tokio::test]
async fn a_strict_sdk_tool_gets_no_parameter_its_schema_forbids() {
    let upstream = calling_upstream("bash", serde_json::from_str(OPENCODE_BASH).unwrap()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut request = chat_turn(
        &json!([{"type": "function", "function": {"name": "bash", "strict": true,
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"], "additionalProperties": false}}}]),
    );
    request["stream"] = json!(false);
    let body: Value = app
        .post("/v1/chat/completions")
        .header("user-agent", "OpenAI/Python 3.57.0")
        .json(&request)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = &body["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "bash");
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"command": "cd /w && echo hi > made.txt"}));
}

fn pi_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}, "offset": {"type": "number"}, "limit": {"type": "number"}}}}},
        {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}}}},
        {"type": "function", "function": {"name": "edit", "parameters": {"type": "object", "required": ["path", "edits"], "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {"type": "object", "required": ["oldText", "newText"], "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}, "additionalProperties": false}}}, "additionalProperties": false}}},
        {"type": "function", "function": {"name": "write", "parameters": {"type": "object", "required": ["path", "content"], "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}
    ])
}

/// pi 0.73.1 over Chat Completions (its SDK's User-Agent, nothing pi-specific): known by its
/// tools, its `write` gets `path`, not opencode's `filePath`.
#[tokio::test]
async fn pi_s_write_gets_path() {
    let upstream =
        calling_upstream("write", json!({"filePath": "/w/made.txt", "content": "hi"})).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", "OpenAI/JS 6.26.0")
        .json(&chat_turn(&pi_tools()))
        .send()
        .await
        .unwrap();
    let (name, arguments) = streamed_call(&read_all(response).await);
    assert_eq!(
        (name.as_str(), arguments),
        ("write", json!({"path": "/w/made.txt", "content": "hi"}))
    );
    assert_eq!(
        upstream_tool_names(&upstream),
        ["bash", "edit", "read", "write"]
    );
}

/// pi over `/v1/messages` (User-Agent `Anthropic/JS`): the Messages protocol does not make it
/// Claude Code, so its `bash` call comes back as `bash`, not `Bash`.
#[tokio::test]
async fn pi_over_messages_gets_bash_not_claude_code_s_bash() {
    let upstream = calling_upstream("bash", serde_json::from_str(OPENCODE_BASH).unwrap()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools: Vec<Value> = pi_tools()
        .as_array()
        .unwrap()
        .iter()
        .map(
            |t| json!({"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}),
        )
        .collect();
    let body = json!({"model": "mock-model", "max_tokens": 1000, "stream": false, "tools": tools,
        "messages": [{"role": "user", "content": "Make a file"}]});
    let answer: Value = app
        .post("/v1/messages")
        .header("user-agent", "Anthropic/JS 0.91.1")
        .header("x-api-key", "sk-x")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let block = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(block["name"], "bash");
    // pi's bash has no working directory: opencode's `workdir` becomes a `cd`.
    assert_eq!(
        block["input"],
        json!({"command": "cd /w && echo hi > made.txt"})
    );
}

fn cline_tools() -> Value {
    let tool = |name: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "parameters": parameters}});
    json!([
        tool(
            "read_files",
            json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}, "required": ["files"], "additionalProperties": false})
        ),
        tool(
            "search_codebase",
            json!({"type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"}}}, "required": ["queries"], "additionalProperties": false})
        ),
        tool(
            "run_commands",
            json!({"type": "object", "properties": {"commands": {"type": "array", "items": {"type": "string"}}}, "required": ["commands"], "additionalProperties": false})
        ),
        tool(
            "fetch_web_content",
            json!({"type": "object", "properties": {"requests": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}, "prompt": {"type": "string"}}, "required": ["url", "prompt"]}}}, "required": ["requests"], "additionalProperties": false})
        ),
        tool(
            "apply_patch",
            json!({"type": "object", "properties": {"input": {"type": "string", "minLength": 1}}, "required": ["input"], "additionalProperties": false})
        ),
        tool(
            "ask_question",
            json!({"type": "object", "properties": {"question": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}}}, "required": ["question", "options"], "additionalProperties": false})
        ),
        tool(
            "team_status",
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        )
    ])
}

/// Cline CLI 3.0.65 (gpt-* model: `apply_patch`, no `editor`): every one of its tools reaches
/// the upstream, mapped to opencode's or kept as its own, and a `bash` call comes back as
/// `run_commands`.
#[tokio::test]
async fn cline_keeps_every_tool_and_its_run_commands_call_works() {
    let upstream = calling_upstream("bash", serde_json::from_str(OPENCODE_BASH).unwrap()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header(
            "user-agent",
            "ai-sdk/openai-compatible/3.0.37 ai-sdk/provider-utils/5.0.30 runtime/bun/1.3.13",
        )
        .json(&chat_turn(&cline_tools()))
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("x-harness-dropped-tools").is_none());
    assert_eq!(
        response.headers()["x-harness-passthrough-tools"],
        "apply_patch, ask_question, team_status"
    );
    let (name, arguments) = streamed_call(&read_all(response).await);
    assert_eq!(
        (name.as_str(), arguments),
        (
            "run_commands",
            json!({"commands": ["cd /w && echo hi > made.txt"]})
        )
    );
    assert_eq!(
        upstream_tool_names(&upstream),
        [
            "bash",
            "grep",
            "read",
            "webfetch",
            "apply_patch",
            "ask_question",
            "team_status"
        ]
    );
}
