//! Sub-agents through the `opencode` harness, one client per front (issue 35): the upstream's
//! model calls opencode's `task`; the client gets its own sub-agent tool; the sub-agent's
//! requests (told apart by the client's own markers, as captured from the agents) reach the
//! upstream as opencode's search agent (its prompt, its read-only tools, the prompt as it was
//! written, never titled); and the main thread's next request carries the answer as opencode's
//! task result. The clients' requests are written by hand from their captured forms
//! (docs/agents.md, "Sub-agents").

use std::path::Path;

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// What the model asks of a sub-agent, and what the sub-agent answers.
const ASK: &str = "List the files here";
const FOUND: &str = "Found: a.txt";
/// How opencode's search agent's prompt opens (prompts/opencode/search_agent.md).
const SEARCH_OPENING: &str = "You are a file search specialist.";
/// The tools opencode's search agent may be offered: read-only ones.
const SEARCH_TOOLS: [&str; 5] = ["bash", "glob", "grep", "read", "webfetch"];

/// The model behind opencode: a search agent answers what it found; the main thread calls `task`
/// until a task result comes back, then says it is done.
async fn opencode_model() -> FakeUpstream {
    FakeUpstream::start(|r: &Recorded, _| {
        let body = r.json();
        if r.is_title() {
            return Reply::sse(&[&text_chunk("Files listed"), DONE]);
        }
        if system_text(&body).starts_with(SEARCH_OPENING) {
            return Reply::sse(&[&text_chunk(FOUND), &finish_chunk("stop"), DONE]);
        }
        if String::from_utf8_lossy(&r.body).contains("<task_result>") {
            return Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE]);
        }
        let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_t1",
            "type": "function", "function": {"name": "task", "arguments": json!({
                "description": "Find files", "prompt": ASK, "subagent_type": "explore"}).to_string()}}]}}]});
        Reply::sse(&[
            &format!("data: {call}\n\n"),
            &finish_chunk("tool_calls"),
            DONE,
        ])
    })
    .await
}

fn system_text(chat: &Value) -> String {
    chat["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn offered(chat: &Value) -> Vec<String> {
    chat["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// A client's tool set from its golden (`tests/golden/clients/<name>.json`): name → schema.
fn golden_tools(client: &str) -> serde_json::Map<String, Value> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/clients/{client}.json"));
    let golden: Value =
        serde_json::from_slice(&std::fs::read(path).expect("golden")).expect("JSON");
    golden["tools"].as_object().expect("tools").clone()
}

/// Claude Code 2.1.332's tools (its golden) and its `Agent`, as the Messages front takes them.
fn claude_tools() -> Vec<Value> {
    let mut tools: Vec<Value> = golden_tools("claude-code")
        .into_iter()
        .map(|(name, schema)| json!({"name": name, "description": name, "input_schema": schema}))
        .collect();
    tools.push(json!({"name": "Agent", "description": "Launch a new agent", "input_schema": {
        "type": "object", "properties": {"description": {"type": "string"}, "prompt": {"type": "string"},
            "subagent_type": {"type": "string"}, "model": {"type": "string"}, "run_in_background": {"type": "boolean"}},
        "required": ["description", "prompt"], "additionalProperties": false}}));
    tools
}

/// The one tool_use block of a Messages answer.
fn tool_use(answer: &Value) -> Value {
    answer["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use")
        .clone()
}

/// The upstream's view of the run: the sub-agent's request is opencode's search agent (its
/// prompt, read-only tools only, the model's prompt as written) and no title asks about it; the
/// main thread's last request ends on the task result with the sub-agent's answer whole.
/// `kept`: the client's own tools the sub-agent keeps (the one it must end with).
fn assert_search_agent_then_task_result(upstream: &FakeUpstream, kept: &[&str]) {
    let requests = upstream.requests();
    let sub: Vec<Value> = requests
        .iter()
        .filter(|r| !r.is_title())
        .map(Recorded::json)
        .filter(|b| system_text(b).starts_with(SEARCH_OPENING))
        .collect();
    assert_eq!(sub.len(), 1, "one sub-agent request, as the search agent");
    let tools = offered(&sub[0]);
    assert!(
        !tools.is_empty()
            && tools
                .iter()
                .all(|t| SEARCH_TOOLS.contains(&t.as_str()) || kept.contains(&t.as_str())),
        "the search agent's read-only tools only: {tools:?}"
    );
    assert!(
        kept.iter().all(|k| tools.iter().any(|t| t == k)),
        "the tool its sub-agent must end with stays: {tools:?}"
    );
    let user = sub[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    let words = match &user["content"] {
        Value::String(text) => text.clone(),
        parts => parts[0]["text"].as_str().unwrap_or_default().to_owned(),
    };
    assert_eq!(words, ASK, "the prompt as written, not quoted");
    assert!(
        requests
            .iter()
            .filter(|r| r.is_title())
            .all(|r| !String::from_utf8_lossy(&r.body).contains(ASK)),
        "a sub-agent is never titled"
    );
    let main = upstream
        .main_requests()
        .into_iter()
        .map(|r| r.json())
        .rfind(|b| !system_text(b).starts_with(SEARCH_OPENING))
        .expect("the main thread's next turn");
    let messages = main["messages"].as_array().expect("messages");
    let result = messages.last().expect("a last message");
    assert_eq!(result["role"], "tool");
    let text = result["content"].as_str().expect("text result");
    assert!(text.starts_with("task_id: ses_"), "{text}");
    assert!(
        text.ends_with(&format!("<task_result>\n{FOUND}\n</task_result>")),
        "{text}"
    );
    let call = &messages[messages.len() - 2]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "task", "the model sees its own call: {call}");
}

#[tokio::test]
async fn claude_code_runs_its_agent_as_the_search_agent_and_hands_back_a_task_result() {
    let upstream = opencode_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools = claude_tools();
    let main = |messages: Value| {
        json!({"model": "m", "max_tokens": 32000, "stream": false,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332"},
                {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
            "messages": messages, "tools": tools})
    };
    let post = |body: Value, sub: bool| {
        let mut request = app
            .post("/v1/messages")
            .header("x-api-key", "sk-claude")
            .header("anthropic-version", "2023-06-01")
            .header("x-app", "cli")
            .header("user-agent", "claude-cli/2.1.332 (external, sdk-cli)");
        if sub {
            request = request.header("x-claude-code-agent-id", "ab6f565526196b3e9");
        }
        request.json(&body).send()
    };
    let ask = json!([{"role": "user", "content": [{"type": "text", "text": "Find the files"}]}]);
    let answer: Value = post(main(ask.clone()), false)
        .await
        .expect("turn 1")
        .json()
        .await
        .expect("JSON");
    let call = tool_use(&answer);
    assert_eq!(call["name"], "Agent");
    assert_eq!(
        call["input"],
        json!({"description": "Find files", "prompt": ASK, "run_in_background": false}),
        "its general agent, in the foreground"
    );

    let sub = json!({"model": "m", "max_tokens": 32000, "stream": false,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332"},
            {"type": "text", "text": "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's message, use the tools available to complete the task."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": ASK}]}],
        "tools": main(json!([]))["tools"]});
    let report: Value = post(sub, true)
        .await
        .expect("sub-agent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(report["content"][0]["text"], FOUND);

    let frame = format!(
        "[Subagent hand-back] The text below is the final report of a subagent. The report follows:\n  {FOUND}\nagentId: ab6f565526196b3e9 (use SendMessage with to: 'ab6f565526196b3e9' to continue this agent)\n<usage>subagent_tokens: 15</usage>"
    );
    let mut history = ask.as_array().expect("turn").clone();
    history.push(json!({"role": "assistant", "content": [call.clone()]}));
    history.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": [{"type": "text", "text": frame}]}]}));
    let done: Value = post(main(Value::Array(history)), false)
        .await
        .expect("turn 2")
        .json()
        .await
        .expect("JSON");
    assert_eq!(done["content"][0]["text"], "Done.");
    assert_search_agent_then_task_result(&upstream, &[]);
}

#[tokio::test]
async fn qwen_code_runs_its_agent_as_the_search_agent_and_hands_back_a_task_result() {
    let upstream = opencode_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools: Vec<Value> = golden_tools("qwen-code")
        .into_iter()
        .map(|(name, schema)| json!({"type": "function", "function": {"name": name, "description": name, "parameters": schema}}))
        .collect();
    let turn = |system: &str, messages: Vec<Value>| {
        let mut all = vec![json!({"role": "system", "content": system})];
        all.extend(messages);
        json!({"model": "m", "stream": false, "messages": all, "tools": tools})
    };
    let post = |body: Value| {
        app.post("/v1/chat/completions")
            .header("authorization", "Bearer sk-qwen")
            .header("user-agent", "QwenCode/0.15.10 (linux; x64)")
            .json(&body)
            .send()
    };
    let main_system = "You are Qwen Code, an interactive CLI agent.";
    let ask = json!({"role": "user", "content": "Find the files"});
    let answer: Value = post(turn(main_system, vec![ask.clone()]))
        .await
        .expect("turn 1")
        .json()
        .await
        .expect("JSON");
    let call = answer["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "agent");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("args")).expect("JSON");
    assert_eq!(
        args,
        json!({"description": "Find files", "prompt": ASK, "run_in_background": false,
            "subagent_type": "general-purpose"}),
        "its general agent, named (without one it forks), in the foreground"
    );

    let sub_system = "You are a general-purpose agent. Given the user's message, you should use the tools available to complete the task.";
    let report: Value = post(turn(
        sub_system,
        vec![json!({"role": "user", "content": ASK})],
    ))
    .await
    .expect("sub-agent")
    .json()
    .await
    .expect("JSON");
    assert_eq!(report["choices"][0]["message"]["content"], FOUND);

    let history = vec![
        ask,
        json!({"role": "assistant", "content": null, "tool_calls": [call.clone()]}),
        json!({"role": "tool", "tool_call_id": call["id"], "content": FOUND}),
    ];
    let done: Value = post(turn(main_system, history))
        .await
        .expect("turn 2")
        .json()
        .await
        .expect("JSON");
    assert_eq!(done["choices"][0]["message"]["content"], "Done.");
    assert_search_agent_then_task_result(&upstream, &[]);
}

#[tokio::test]
async fn gemini_cli_runs_its_generalist_as_the_search_agent_and_hands_back_a_task_result() {
    let upstream = opencode_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let declarations = |extra: Option<Value>| {
        let mut all: Vec<Value> = golden_tools("gemini-cli")
            .into_iter()
            .map(|(name, schema)| json!({"name": name, "description": name, "parametersJsonSchema": schema}))
            .collect();
        all.extend(extra);
        json!([{"functionDeclarations": all}])
    };
    let system = json!({"role": "user", "parts": [{"text": "You are Gemini CLI, an interactive CLI agent."}]});
    let post = |body: Value| {
        app.post("/v1beta/models/gemini-2.5-flash:generateContent")
            .header("x-goog-api-key", "gk-gemini")
            .header(
                "user-agent",
                "GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64)",
            )
            .json(&body)
            .send()
    };
    let ask = json!({"role": "user", "parts": [{"text": "Find the files"}]});
    let turn = |contents: Vec<Value>, tools: Value| json!({"contents": contents, "systemInstruction": system, "tools": tools});
    let answer: Value = post(turn(vec![ask.clone()], declarations(None)))
        .await
        .expect("turn 1")
        .json()
        .await
        .expect("JSON");
    let call = answer["candidates"][0]["content"]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .find_map(|p| p.get("functionCall"))
        .expect("a call")
        .clone();
    assert_eq!(call["name"], "invoke_agent");
    assert_eq!(
        call["args"],
        json!({"agent_name": "generalist", "prompt": ASK})
    );

    // Its sub-agent: the same headers and system text, the one tool it must end with besides.
    let complete = json!({"name": "complete_task", "description": "Finish the task.", "parametersJsonSchema": {
        "type": "object", "properties": {"result": {"type": "object", "properties": {"response": {"type": "string"}}}},
        "required": ["result"]}});
    let sub = turn(
        vec![json!({"role": "user", "parts": [{"text": ASK}]})],
        declarations(Some(complete)),
    );
    // The search agent answers in words; Gemini CLI's sub-agent must end with complete_task.
    let report: Value = post(sub)
        .await
        .expect("sub-agent")
        .json()
        .await
        .expect("JSON");
    let finished = report["candidates"][0]["content"]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .find_map(|p| p.get("functionCall"))
        .unwrap_or_else(|| panic!("a complete_task call: {report}"))
        .clone();
    assert_eq!(finished["name"], "complete_task");
    assert_eq!(finished["args"], json!({"result": {"response": FOUND}}));

    let result = format!(
        "Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{}",
        serde_json::to_string_pretty(&json!({"response": FOUND})).expect("JSON")
    );
    let history = vec![
        ask,
        json!({"role": "model", "parts": [{"functionCall": call}]}),
        json!({"role": "user", "parts": [{"functionResponse": {"id": call["id"], "name": "invoke_agent",
            "response": {"output": result}}}]}),
    ];
    let done: Value = post(turn(history, declarations(None)))
        .await
        .expect("turn 2")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        done["candidates"][0]["content"]["parts"][0]["text"],
        "Done."
    );
    assert_search_agent_then_task_result(&upstream, &["complete_task"]);
}

/// Codex 0.171's tools as far as they matter here: its shell and its sub-agent namespace.
fn codex_tools() -> Value {
    let function = |name: &str, properties: Value, required: Value| {
        json!({"type": "function", "name": name, "description": name, "strict": false,
            "parameters": {"type": "object", "properties": properties, "required": required,
                "additionalProperties": false}})
    };
    json!([
        function("exec_command", json!({"cmd": {"type": "string"}, "workdir": {"type": "string"}}), json!(["cmd"])),
        {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [
            function("spawn_agent", json!({"message": {"type": "string"}, "agent_type": {"type": "string"}}), json!([])),
            function("wait_agent", json!({"targets": {"type": "array", "items": {"type": "string"}},
                "timeout_ms": {"type": "number", "maximum": 3_600_000}}), json!(["targets"])),
            function("close_agent", json!({"target": {"type": "string"}}), json!(["target"]))
        ]}
    ])
}

fn codex_user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// One Codex turn through `path` (its sub-agent's when `sub`), answered as one JSON response.
async fn codex_turn(app: &TestApp, path: &str, input: Vec<Value>, sub: bool) -> Value {
    let mut all = vec![json!({"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "You are a coding agent running in the Codex CLI."}]})];
    all.extend(input);
    let mut request = app
        .post(path)
        .header("authorization", "Bearer sk-codex")
        .header(
            "user-agent",
            "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)",
        )
        .header("originator", "codex_exec");
    if sub {
        request = request.header("x-openai-subagent", "collab_spawn");
    }
    let body = json!({"model": "gpt-5.5", "stream": false, "input": all, "tools": codex_tools()});
    request
        .json(&body)
        .send()
        .await
        .expect("POST /v1/responses")
        .json()
        .await
        .expect("JSON")
}

fn codex_call(answer: &Value) -> Value {
    answer["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|i| i["type"] == "function_call")
        .cloned()
        .expect("a call")
}

/// Codex through `path`: the model's sub-agent call reaches it as `spawn_agent{message}`; its
/// sub-agent answers; the proxy waits for it on Codex's side (no upstream request) and the
/// wait's answer goes up as the model's one call's result.
async fn codex_sub_agent_run(app: &TestApp, upstream: &FakeUpstream, path: &str) {
    let ask = codex_user("Find the files");
    let spawn = codex_call(&codex_turn(app, path, vec![ask.clone()], false).await);
    assert_eq!(spawn["name"], "spawn_agent");
    let args: Value =
        serde_json::from_str(spawn["arguments"].as_str().expect("args")).expect("JSON");
    assert_eq!(args, json!({"message": ASK}));

    let report = codex_turn(app, path, vec![codex_user(ASK)], true).await;
    assert_eq!(report["output"][0]["content"][0]["text"], FOUND, "{report}");

    let asked_before = upstream.main_requests().len();
    let agent = "019a8f3c-5d1e-7b2a-9c4d-1e2f3a4b5c6d";
    let mut history = vec![
        ask,
        spawn.clone(),
        json!({"type": "function_call_output", "call_id": spawn["call_id"],
            "output": json!({"agent_id": agent, "nickname": "Nietzsche"}).to_string()}),
    ];
    let wait = codex_call(&codex_turn(app, path, history.clone(), false).await);
    assert_eq!(wait["name"], "wait_agent");
    let args: Value =
        serde_json::from_str(wait["arguments"].as_str().expect("args")).expect("JSON");
    assert_eq!(args["targets"], json!([agent]));
    assert_eq!(
        upstream.main_requests().len(),
        asked_before,
        "the wait is the proxy's own"
    );

    history.push(wait.clone());
    history.push(json!({"type": "function_call_output", "call_id": wait["call_id"],
        "output": json!({"status": {agent: {"completed": FOUND}}, "timed_out": false}).to_string()}));
    history.push(codex_user("<subagent_notification>\n{\"agent_id\":\"019a\",\"status\":\"completed\"}\n</subagent_notification>"));
    let done = codex_turn(app, path, history, false).await;
    let said = done["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|i| i["type"] == "message")
        .expect("a message");
    assert_eq!(said["content"][0]["text"], "Done.");
}

#[tokio::test]
async fn codex_spawns_its_agent_the_proxy_waits_for_it_and_the_model_sees_one_task() {
    let upstream = opencode_model().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    codex_sub_agent_run(&app, &upstream, "/v1/responses").await;
    assert_search_agent_then_task_result(&upstream, &[]);
}

/// Through another harness whose agent has a sub-agent tool (`tool`, that harness's own): the
/// same capability, the same pair on Codex's side; the sub-agent is that harness's agent,
/// untitled, and the model sees its own call with the task result.
async fn codex_through(harness: &str, tool: &'static str) {
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            return Reply::sse(&[&text_chunk("Files listed"), DONE]);
        }
        let body = r.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        // The sub-agent's conversation: the model's prompt as the user's words, not the main
        // thread's ask (the harness may open with context of its own).
        let said = |words: &str| {
            messages
                .iter()
                .any(|m| m["role"] == "user" && m["content"].to_string().contains(words))
        };
        if said(ASK) && !said("Find the files") {
            return Reply::sse(&[&text_chunk(FOUND), &finish_chunk("stop"), DONE]);
        }
        if messages.last().is_some_and(|m| m["role"] == "tool") {
            return Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE]);
        }
        let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a1",
            "type": "function", "function": {"name": tool, "arguments": json!({
                "description": "Find files", "prompt": ASK}).to_string()}}]}}]});
        Reply::sse(&[&format!("data: {call}\n\n"), &finish_chunk("tool_calls"), DONE])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    codex_sub_agent_run(&app, &upstream, &format!("/harness/{harness}/v1/responses")).await;
    assert!(
        upstream
            .requests()
            .iter()
            .filter(|r| r.is_title())
            .all(|r| !String::from_utf8_lossy(&r.body).contains(ASK)),
        "a sub-agent is never titled"
    );
    let last = upstream
        .main_requests()
        .last()
        .expect("the last turn")
        .json();
    let messages = last["messages"].as_array().expect("messages");
    // A result as a string, or as parts (Qwen Code's builder).
    let content = &messages.last().expect("a result")["content"];
    let text = content
        .as_str()
        .or_else(|| content[0]["text"].as_str())
        .expect("a text result");
    assert!(
        text.starts_with("task_id: ses_") && text.contains(FOUND),
        "{text}"
    );
    let call = &messages[messages.len() - 2]["tool_calls"][0]["function"];
    assert_eq!(call["name"], tool, "the model sees its own harness's call");
}

#[tokio::test]
async fn through_qwen_code_codex_s_sub_agent_is_the_harness_s_agent_tool() {
    codex_through("qwen-code", "agent").await;
}

/// claude-code decides its title requests by wire, then takes the same sub-agent step.
#[tokio::test]
async fn through_claude_code_codex_s_sub_agent_is_its_agent_tool() {
    codex_through("claude-code", "Agent").await;
}

/// DeepSeek-TUI's sub-agent session, opened with a prompt, is the capability too: the model's
/// `agent_open` reaches Claude Code as its `Agent`, and the report goes back as that call's result.
#[tokio::test]
async fn through_deepseek_tui_agent_open_is_claude_code_s_agent() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            return Reply::sse(&[&text_chunk("Files listed"), DONE]);
        }
        let body = r.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages.last().is_some_and(|m| m["role"] == "tool") {
            return Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE]);
        }
        let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_o1",
            "type": "function", "function": {"name": "agent_open", "arguments": json!({
                "name": "finder", "prompt": ASK}).to_string()}}]}}]});
        Reply::sse(&[&format!("data: {call}\n\n"), &finish_chunk("tool_calls"), DONE])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools = claude_tools();
    let post = |messages: Value| {
        app.post("/harness/deepseek-tui/v1/messages")
            .header("x-api-key", "sk-claude")
            .header("anthropic-version", "2023-06-01")
            .header("user-agent", "claude-cli/2.1.332 (external, sdk-cli)")
            .json(&json!({"model": "m", "max_tokens": 32000, "stream": false,
                "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
                "messages": messages, "tools": tools}))
            .send()
    };
    let ask = json!({"role": "user", "content": [{"type": "text", "text": "Find the files"}]});
    let answer: Value = post(json!([ask.clone()]))
        .await
        .expect("turn 1")
        .json()
        .await
        .expect("JSON");
    let call = tool_use(&answer);
    assert_eq!(call["name"], "Agent");
    assert_eq!(
        call["input"],
        json!({"description": "finder", "prompt": ASK, "run_in_background": false})
    );
    let frame = format!(
        "[Subagent hand-back] The text below is the final report of a subagent. The report follows:\n  {FOUND}\nagentId: a1 (use SendMessage with to: 'a1' to continue this agent)"
    );
    let history = json!([ask, {"role": "assistant", "content": [call.clone()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": frame}]}]);
    let done: Value = post(history)
        .await
        .expect("turn 2")
        .json()
        .await
        .expect("JSON");
    assert_eq!(done["content"][0]["text"], "Done.");
    let last = upstream
        .main_requests()
        .last()
        .expect("turn 2 upstream")
        .json();
    let messages = last["messages"].as_array().expect("messages");
    let text = messages.last().expect("result")["content"].to_string();
    assert!(
        text.contains("task_id: ses_")
            && text.contains(&format!("<task_result>\\n{FOUND}\\n</task_result>")),
        "{text}"
    );
    assert_eq!(
        messages[messages.len() - 2]["tool_calls"][0]["function"]["name"],
        "agent_open"
    );
}
