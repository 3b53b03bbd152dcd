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
