//! Prompt-cache friendliness (issue 19, item 2): across the turns of one conversation the request
//! the harness sends upstream grows only at its end. Each agent (opencode, an id-less Chat client,
//! Claude Code, Codex, pi, Gemini CLI) is driven through four turns as its real client drives
//! them (a tool call, its result, a new question, another call and result), every turn echoing
//! the history the way that client echoes it; between turn N and N+1 the upstream body's tools,
//! options and first messages must be byte-identical, so an upstream prefix cache (DeepSeek,
//! OpenAI, vLLM) keeps hitting.

use serde_json::{Value, json};

use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};

/// A model that calls `bash` whenever the conversation ends in a user's words and says `Done.`
/// after a tool result; call ids are numbered by arrival, so each call is distinct.
async fn tool_model() -> FakeUpstream {
    FakeUpstream::start(|r: &Recorded, n| {
        let body = r.json();
        let chunk = |delta: Value, finish: Option<&str>| {
            let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {chunk}\n\n")
        };
        let last_is_tool = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        let mut chunks = if r.is_title() {
            vec![chunk(json!({"content": "Listing files"}), Some("stop"))]
        } else if last_is_tool {
            vec![chunk(
                json!({"role": "assistant", "content": "Done."}),
                Some("stop"),
            )]
        } else {
            let call = json!({"index": 0, "id": format!("call_{n}"), "type": "function",
                "function": {"name": "bash",
                    "arguments": "{\"command\":\"ls\",\"description\":\"List files\"}"}});
            vec![
                chunk(json!({"role": "assistant", "tool_calls": [call]}), None),
                chunk(json!({}), Some("tool_calls")),
            ]
        };
        chunks.push("data: [DONE]\n\n".to_owned());
        Reply::steps(
            chunks
                .into_iter()
                .map(|c| Step::Send(c.into_bytes()))
                .collect(),
        )
    })
    .await
}

/// Asserts that each main request the upstream saw extends the one before it: same keys and
/// values but `messages`, and the earlier `messages` a prefix of the later ones, byte for byte.
fn assert_grows_only_at_its_end(upstream: &FakeUpstream, turns: usize) {
    let bodies: Vec<Value> = upstream
        .main_requests()
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(bodies.len(), turns, "one upstream request per turn");
    assert!(
        bodies
            .iter()
            .all(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty())),
        "every turn offers the harness's tools"
    );
    check_growth(&bodies);
}

fn check_growth(bodies: &[Value]) {
    for (n, pair) in bodies.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let rest = |body: &Value| {
            let mut body = body.clone();
            body.as_object_mut().unwrap().remove("messages");
            body
        };
        assert_eq!(
            rest(before),
            rest(after),
            "turn {} → {}: options or tools changed",
            n + 1,
            n + 2
        );
        let (old, new) = (
            before["messages"].as_array().unwrap(),
            after["messages"].as_array().unwrap(),
        );
        assert!(new.len() > old.len(), "turn {}: {new:?}", n + 2);
        for (i, message) in old.iter().enumerate() {
            assert_eq!(
                serde_json::to_string(message).unwrap(),
                serde_json::to_string(&new[i]).unwrap(),
                "turn {} → {}: message {i} changed",
                n + 1,
                n + 2
            );
        }
    }
}

#[test]
#[should_panic(expected = "message 0 changed")]
fn the_check_sees_an_earlier_message_change() {
    let turn = |system: &str, n: usize| {
        let mut messages = vec![json!({"role": "system", "content": system})];
        messages.extend((0..n).map(|i| json!({"role": "user", "content": i.to_string()})));
        json!({"model": "m", "messages": messages})
    };
    check_growth(&[turn("Today is Monday", 1), turn("Today is Tuesday", 2)]);
}

async fn post(app: &TestApp, path: &str, headers: &[(&str, &str)], body: &Value) -> Value {
    let mut request = app.post(path).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A Chat Completions client's four turns (opencode's own shape when `headers` name opencode).
async fn chat_conversation(headers: &[(&str, &str)]) -> FakeUpstream {
    let upstream = tool_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools = json!([{"type": "function", "function": {"name": "bash", "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"},
            "description": {"type": "string"}}, "required": ["command", "description"]}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "list the files"}),
    ];
    for question in ["", "and now the tests"] {
        if !question.is_empty() {
            messages.push(json!({"role": "user", "content": question}));
        }
        for _ in 0..2 {
            let body = json!({"model": "m", "stream": false, "messages": messages, "tools": tools});
            let answer = post(&app, "/v1/chat/completions", headers, &body).await;
            let message = answer["choices"][0]["message"].clone();
            messages.push(message.clone());
            if let Some(call) = message["tool_calls"].get(0) {
                messages
                    .push(json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"}));
            }
        }
    }
    upstream
}

#[tokio::test]
async fn opencode_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = chat_conversation(&[
        ("authorization", "Bearer k"),
        (
            "user-agent",
            "opencode/1.18.33 ai-sdk/provider-utils/3.0.20 runtime/bun/1.3.5",
        ),
        ("x-session-id", "ses_prefix_1"),
    ])
    .await;
    assert_grows_only_at_its_end(&upstream, 4);
}

#[tokio::test]
async fn an_id_less_chat_client_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = chat_conversation(&[("authorization", "Bearer k")]).await;
    assert_grows_only_at_its_end(&upstream, 4);
    let sessions: Vec<_> = upstream
        .main_requests()
        .iter()
        .map(|r| r.header("session-id").map(str::to_owned))
        .collect();
    assert!(
        sessions.windows(2).all(|w| w[0] == w[1]),
        "one session: {sessions:?}"
    );
}

#[tokio::test]
async fn claude_code_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = tool_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let headers = [
        ("x-api-key", "sk-claude"),
        ("x-app", "cli"),
        ("user-agent", "claude-cli/2.1.332 (external, cli)"),
        ("x-claude-code-session-id", "3f1c2a9e-prefix"),
    ];
    let tools = json!([{"name": "Bash", "description": "Executes a bash command", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"},
            "description": {"type": "string"}}, "required": ["command"]}}]);
    let system = json!([{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}]);
    let text = |t: &str| json!({"role": "user", "content": [{"type": "text", "text": t}]});
    let mut messages = vec![text("list the files")];
    for question in ["", "and now the tests"] {
        if !question.is_empty() {
            messages.push(text(question));
        }
        for _ in 0..2 {
            let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": false,
                "system": system, "messages": messages, "tools": tools});
            let answer = post(&app, "/v1/messages", &headers, &body).await;
            let content = answer["content"].clone();
            messages.push(json!({"role": "assistant", "content": content}));
            let calls: Vec<Value> = content
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| json!({"type": "tool_result", "tool_use_id": b["id"], "content": "a.txt"}))
                .collect();
            if !calls.is_empty() {
                messages.push(json!({"role": "user", "content": calls}));
            }
        }
    }
    assert_grows_only_at_its_end(&upstream, 4);
}

#[tokio::test]
async fn codex_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = tool_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let headers = [
        ("authorization", "Bearer k"),
        ("user-agent", "codex_exec/0.171.0 (Debian 12; x86_64) xterm"),
        ("session_id", "019a0000-prefix"),
    ];
    let tools = json!([{"type": "function", "name": "exec_command", "strict": false,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"], "additionalProperties": false}}]);
    let text = |t: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]});
    let mut input = vec![text("list the files")];
    for question in ["", "and now the tests"] {
        if !question.is_empty() {
            input.push(text(question));
        }
        for _ in 0..2 {
            let body = json!({"model": "gpt-5.5", "stream": false, "instructions": "You are Codex.",
                "input": input, "tools": tools, "store": false,
                "prompt_cache_key": "019a0000-prefix"});
            let answer = post(&app, "/v1/responses", &headers, &body).await;
            for item in answer["output"].as_array().unwrap() {
                input.push(item.clone());
                if item["type"] == "function_call" {
                    input.push(json!({"type": "function_call_output",
                        "call_id": item["call_id"], "output": "a.txt"}));
                }
            }
        }
    }
    assert_grows_only_at_its_end(&upstream, 4);
}

/// The tool results the last main request carried: each of the conversation's two calls went
/// through and was answered.
fn assert_both_calls_answered(upstream: &FakeUpstream) {
    let last = upstream.main_requests().pop().unwrap().json();
    let results = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(results, 2, "{last}");
}

/// The `data:` chunks of a streamed answer, parsed (`[DONE]` left out).
fn chunks_of(text: &str) -> Vec<Value> {
    crate::support::sse::data_lines(text)
        .iter()
        .filter(|d| d.as_str() != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn post_stream(app: &TestApp, path: &str, headers: &[(&str, &str)], body: &Value) -> String {
    let mut request = app.post(path).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    crate::support::sse::read_all(response).await
}

/// pi on `openai-completions`: plain streamed Chat Completions with its four tools, its SDK's
/// User-Agent, no conversation id; it echoes each assistant message as it assembled it.
#[tokio::test]
async fn pi_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = tool_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let headers = [
        ("authorization", "Bearer sk-pi"),
        ("user-agent", "OpenAI/JS 6.26.0"),
    ];
    let function = |name: &str, properties: Value, required: Value| {
        json!({"type": "function", "function": {"name": name, "description": name,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    let tools = json!([
        function(
            "read",
            json!({"path": {"type": "string"}, "offset": {"type": "number"},
            "limit": {"type": "number"}}),
            json!(["path"])
        ),
        function(
            "bash",
            json!({"command": {"type": "string"}, "timeout": {"type": "number"}}),
            json!(["command"])
        ),
        function(
            "edit",
            json!({"path": {"type": "string"}, "edits": {"type": "array", "items": {
            "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"]}}}),
            json!(["path", "edits"])
        ),
        function(
            "write",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            json!(["path", "content"])
        ),
    ]);
    let mut messages = vec![
        json!({"role": "system", "content": "You are an expert coding assistant operating inside pi."}),
        json!({"role": "user", "content": "list the files"}),
    ];
    for question in ["", "and now the tests"] {
        if !question.is_empty() {
            messages.push(json!({"role": "user", "content": question}));
        }
        for _ in 0..2 {
            let body = json!({"model": "gpt-4.1-mini", "messages": messages, "stream": true,
                "stream_options": {"include_usage": true}, "tools": tools});
            let text = post_stream(&app, "/v1/chat/completions", &headers, &body).await;
            let deltas: Vec<Value> = chunks_of(&text)
                .into_iter()
                .filter_map(|c| c["choices"].get(0).map(|c| c["delta"].clone()))
                .collect();
            let content: String = deltas
                .iter()
                .filter_map(|d| d["content"].as_str())
                .collect();
            let calls: Vec<Value> = deltas
                .iter()
                .filter_map(|d| d["tool_calls"].as_array())
                .flatten()
                .map(|c| json!({"id": c["id"], "type": "function", "function": c["function"]}))
                .collect();
            if calls.is_empty() {
                messages.push(json!({"role": "assistant", "content": content}));
            } else {
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
                let id = calls[0]["id"].clone();
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": "a.txt"}));
            }
        }
    }
    assert_grows_only_at_its_end(&upstream, 4);
    assert_both_calls_answered(&upstream);
}

/// Gemini CLI: streamed `generateContent` with its system instruction and function
/// declarations, no conversation id; it echoes the model's parts (thoughts left out) and answers
/// each `functionCall` with a `functionResponse` of the same id.
#[tokio::test]
async fn gemini_cli_s_turns_reach_the_upstream_as_a_growing_prefix() {
    let upstream = tool_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let headers = [
        ("x-goog-api-key", "AIza-prefix"),
        (
            "x-goog-api-client",
            "google-genai-sdk/1.30.0 gl-node/v24.11.1",
        ),
        (
            "user-agent",
            "GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64)",
        ),
    ];
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let tools = json!([{"functionDeclarations": [
        {"name": "run_shell_command", "description": "Executes a given shell command.",
            "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"},
                "description": {"type": "string"}}, "required": ["command"]}},
        {"name": "write_file", "description": "Writes content to a file.",
            "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"},
                "content": {"type": "string"}}, "required": ["file_path", "content"]}}
    ]}]);
    let text = |t: &str| json!({"role": "user", "parts": [{"text": t}]});
    let mut contents = vec![text("list the files")];
    for question in ["", "and now the tests"] {
        if !question.is_empty() {
            contents.push(text(question));
        }
        for _ in 0..2 {
            let body = json!({"contents": contents, "tools": tools,
                "systemInstruction": {"role": "user", "parts": [{"text": "You are an interactive CLI agent."}]},
                "generationConfig": {"temperature": 0, "topP": 1,
                    "thinkingConfig": {"includeThoughts": true, "thinkingBudget": -1}}});
            let answer = post_stream(&app, path, &headers, &body).await;
            crate::support::gemini_cli::echo_answer(&chunks_of(&answer), &mut contents, "a.txt");
        }
    }
    assert_grows_only_at_its_end(&upstream, 4);
    assert_both_calls_answered(&upstream);
}
