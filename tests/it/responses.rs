//! The Responses front through the real server against the recording fake upstream: Codex-shaped
//! requests rebuilt as opencode chat requests, answers rendered as Responses events or one
//! `response` object, tool round trips in Codex's dialect, failures, titles, passthrough.

use serde_json::{Value, json};

use crate::support::sse::{DONE, USAGE_CHUNK, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, error_of, test_config};

pub(crate) const CODEX_UA: &str =
    "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)";
pub(crate) const SESSION: &str = "01a22e2d-755d-7f52-a39d-15515deb1140";

/// A Codex 0.171 first turn (docs/wire.md §4), trimmed: base prompt as input[0] developer message,
/// `<environment_context>`, the prompt; exec_command, custom apply_patch, web_search.
pub(crate) fn codex_turn(prompt: &str, stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "stream": stream,
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent running in the Codex CLI."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/work/project</cwd>\n  <shell>bash</shell>\n</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "strict": false, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}}, "required": ["cmd"], "additionalProperties": false}},
            {"type": "custom", "name": "apply_patch", "description": "Edit files.", "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"}},
            {"type": "web_search", "external_web_access": false}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"summary": "auto"},
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": SESSION
    })
}

async fn post_codex(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post("/v1/responses")
        .header("user-agent", CODEX_UA)
        .header("originator", "codex_exec")
        .header("session-id", SESSION)
        .header("thread-id", SESSION)
        .bearer_auth("sk-codex")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// (event name, data) of every SSE event; each event must have both lines.
fn parse_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|event| {
            let (name, data) = event.split_once('\n').expect("event: and data: lines");
            let name = name.strip_prefix("event: ").expect("event line");
            let data = data.strip_prefix("data: ").expect("data line");
            (
                name.to_owned(),
                serde_json::from_str(data).expect("JSON data"),
            )
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

pub(crate) fn call_chunk(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> String {
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
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
    )
}

/// Title requests get "Greeting", every other request `main`.
pub(crate) async fn upstream(
    main: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
) -> FakeUpstream {
    FakeUpstream::start(move |request, n| {
        if request.is_title() {
            Reply::sse(&[&text_chunk("Greeting"), &finish_chunk("stop"), DONE])
        } else {
            main(request, n)
        }
    })
    .await
}

pub(crate) fn hello() -> Reply {
    let chunks = hello_stream();
    Reply::sse(&chunks.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn a_codex_turn_streams_responses_events_and_is_titled() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = post_codex(&app, &codex_turn("say hi", true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-conversation-id"], SESSION);
    assert_eq!(response.headers()["x-harness"], "opencode");
    let dropped = response.headers()["x-harness-dropped-tools"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(dropped.contains("web_search"), "{dropped}");
    let events = parse_events(&read_all(response).await);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], json!(name));
        assert_eq!(data["sequence_number"], json!(i));
    }
    let completed = &events[9].1["response"];
    assert!(completed["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(completed["id"], events[0].1["response"]["id"]);
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][0]["content"][0]["text"], "Hello world");
    assert_eq!(completed["usage"]["input_tokens"], 9);
    assert_eq!(completed["usage"]["output_tokens"], 2);
    assert_eq!(events[8].1["item"]["content"][0]["text"], "Hello world");

    // Upstream: one opencode chat request (plus the title request).
    let main = upstream.main_requests();
    assert_eq!(main.len(), 1);
    assert_eq!(main[0].path, "/v1/chat/completions");
    let body = main[0].json();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Working directory: /work/project"),
        "{system}"
    );
    assert!(!system.contains("You are a coding agent running in the Codex CLI"));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "\"say hi\""})
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["bash", "edit", "write"]);

    // The first turn is titled under Codex's session id.
    let record = crate::titles::settled(&app, SESSION, "sk-codex").await;
    assert_eq!(record["title"], "Greeting", "{record}");
}

#[tokio::test]
async fn a_client_that_does_not_stream_gets_one_response_object() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // No session header: the conversation is named by prompt_cache_key.
    let response = app
        .post("/v1/responses")
        .json(&json!({"model": "mock-model", "input": "hello", "prompt_cache_key": "cache-key-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["x-conversation-id"], "cache-key-1");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(body["output"].as_array().unwrap().len(), 1);
    assert_eq!(body["output"][0]["type"], "message");
    assert_eq!(body["output"][0]["content"][0]["text"], "Hello world");
    assert_eq!(body["usage"]["total_tokens"], 11);
    // The upstream was asked for a stream with usage even so.
    let sent = upstream.main_requests()[0].json();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn exec_command_round_trips_as_opencode_bash() {
    let upstream = upstream(|request, _| {
        let body = String::from_utf8_lossy(&request.body).into_owned();
        if body.contains("\"role\":\"tool\"") {
            Reply::sse(&[&text_chunk("Created."), &finish_chunk("stop"), USAGE_CHUNK, DONE])
        } else {
            let args = json!({"command": "echo hi > made_by_codex.txt", "description": "Create the file", "timeout": 5000}).to_string();
            Reply::sse(&[
                &call_chunk(0, Some("call_1"), Some("bash"), ""),
                &call_chunk(0, None, None, &args[..10]),
                &call_chunk(0, None, None, &args[10..]),
                &finish_chunk("tool_calls"),
                DONE,
            ])
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = post_codex(&app, &codex_turn("create made_by_codex.txt", true)).await;
    let events = parse_events(&read_all(response).await);
    let done: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["type"], "function_call");
    assert_eq!(done[0]["name"], "exec_command");
    assert_eq!(done[0]["call_id"], "call_1");
    let args: Value = serde_json::from_str(done[0]["arguments"].as_str().unwrap()).unwrap();
    // docs/agents.md "What the Responses front does": yield_time_ms = min(timeout, 30000);
    // description has no counterpart.
    assert_eq!(
        args,
        json!({"cmd": "echo hi > made_by_codex.txt", "yield_time_ms": 5000})
    );
    assert_eq!(events.last().unwrap().0, "response.completed");

    // Codex runs it and sends the whole history back (output text as Codex 0.171 writes it).
    let mut follow = codex_turn("create made_by_codex.txt", true);
    let input = follow["input"].as_array_mut().unwrap();
    input.push(json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command", "arguments": done[0]["arguments"]}));
    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "Chunk ID: 53624f\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"}));
    let response = post_codex(&app, &follow).await;
    let events = parse_events(&read_all(response).await);
    assert_eq!(
        events.last().unwrap().1["response"]["output"][0]["content"][0]["text"],
        "Created."
    );
    let sent = upstream.main_requests()[1].json();
    let messages = sent["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"],
        json!({"name": "bash", "arguments": "{\"command\":\"echo hi > made_by_codex.txt\",\"timeout\":5000}"})
    );
    assert_eq!(
        messages[n - 1],
        json!({"role": "tool", "content": "(no output)", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn an_upstream_write_reaches_codex_as_a_custom_apply_patch_call() {
    let upstream = upstream(|_, _| {
        let args = json!({"filePath": "notes.txt", "content": "one\ntwo\n"}).to_string();
        Reply::sse(&[
            &call_chunk(0, Some("call_w"), Some("write"), &args),
            &finish_chunk("tool_calls"),
            DONE,
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let events =
        parse_events(&read_all(post_codex(&app, &codex_turn("write notes", true)).await).await);
    let patch = "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch";
    let input_done = events
        .iter()
        .find(|(n, _)| n == "response.custom_tool_call_input.done")
        .expect("custom input done");
    assert_eq!(input_done.1["input"], patch);
    let item = &events
        .iter()
        .find(|(n, _)| n == "response.output_item.done")
        .expect("item done")
        .1["item"];
    assert_eq!(
        (
            &item["type"],
            &item["name"],
            &item["call_id"],
            &item["input"]
        ),
        (
            &json!("custom_tool_call"),
            &json!("apply_patch"),
            &json!("call_w"),
            &json!(patch)
        )
    );
}

#[tokio::test]
async fn a_cut_upstream_stream_ends_in_response_failed() {
    // The fake cuts the connection only once the client has seen the first delta.
    let cut = std::sync::Arc::new(tokio::sync::Notify::new());
    let trigger = cut.clone();
    let upstream = upstream(move |_, _| {
        Reply::steps(vec![
            Step::Send(text_chunk("Hel").into_bytes()),
            Step::Wait(trigger.clone()),
            Step::Cut,
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut response = post_codex(&app, &codex_turn("hi", true)).await;
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let deadline = std::time::Duration::from_secs(10);
    while let Some(chunk) = tokio::time::timeout(deadline, response.chunk())
        .await
        .expect("chunk within 10 s")
        .expect("body")
    {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        if text.contains("response.output_text.delta") {
            cut.notify_one();
        }
    }
    let events = parse_events(&text);
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "response.failed");
    assert_eq!(data["response"]["status"], "failed");
    assert!(
        !data["response"]["error"]["code"]
            .as_str()
            .unwrap()
            .is_empty(),
        "{data}"
    );
    assert!(!names(&events).contains(&"response.completed"));
    // What was streamed stays in the failed response's output.
    let output = &data["response"]["output"];
    assert_eq!(output[0]["type"], "message", "{data}");
    assert_eq!(output[0]["status"], "incomplete", "{data}");
    assert_eq!(output[0]["content"][0]["text"], "Hel", "{data}");
}

#[tokio::test]
async fn a_cut_upstream_stream_folded_is_one_502_saying_so_once() {
    // A close-delimited answer cut after its first delta (no finish, no [DONE]).
    let cut = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
        text_chunk("Hel")
    );
    let upstream = crate::support::raw::RawUpstream::start(cut.into_bytes()).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let response = post_codex(&app, &codex_turn("hi", false)).await;
    let (status, code, message) = error_of(response).await;
    assert_eq!(
        (status, code.as_str()),
        (502, "upstream_interrupted"),
        "{message}"
    );
    assert_eq!(
        message.matches("the upstream stream failed").count(),
        1,
        "{message}"
    );
}

#[tokio::test]
async fn an_upstream_429_keeps_its_status_and_error_body() {
    let upstream = upstream(|_, _| {
        Reply::json(429, r#"{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limited"}}"#)
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let (status, code, message) = error_of(post_codex(&app, &codex_turn("hi", true)).await).await;
    assert_eq!(
        (status, code.as_str(), message.as_str()),
        (429, "rate_limited", "slow down")
    );
}

#[tokio::test]
async fn previous_response_id_is_a_clear_400() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({"model": "m", "input": "more", "previous_response_id": "resp_1"});
    let (status, code, message) = error_of(post_codex(&app, &body).await).await;
    assert_eq!(
        (status, code.as_str()),
        (400, "previous_response_id_unsupported")
    );
    assert!(message.contains("input"), "{message}");
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_websocket_upgrade_gets_a_fast_426_when_the_socket_is_turned_off() {
    let upstream = upstream(|_, _| hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.responses.websocket = false;
    let app = TestApp::start(config).await;
    for path in ["/v1/responses", "/harness/opencode/v1/responses"] {
        let response = app
            .get(path)
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("openai-beta", "responses_websockets=2026-02-06")
            .send()
            .await
            .unwrap();
        let (status, code, _) = error_of(response).await;
        assert_eq!(
            (status, code.as_str()),
            (426, "websocket_unsupported"),
            "{path}"
        );
    }
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn the_path_route_serves_the_responses_front() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/harness/opencode/v1/responses")
        .json(&json!({"model": "mock-model", "input": "hello", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-harness"], "opencode");
    let events = parse_events(&read_all(response).await);
    assert_eq!(events.last().unwrap().0, "response.completed");
}

#[tokio::test]
async fn passthrough_forwards_responses_byte_for_byte() {
    let answer = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_up\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_up\"}}\n\n";
    let upstream = FakeUpstream::fixed(Reply::sse(&[answer])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let sent = serde_json::to_vec(&codex_turn("hi", true)).unwrap();
    let response = app
        .post("/v1/responses")
        .header("x-harness", "passthrough")
        .body(sent.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(read_all(response).await, answer);
    let recorded = upstream.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/responses");
    assert_eq!(recorded[0].body.as_ref(), sent.as_slice());
}

#[tokio::test]
async fn codex_s_own_title_request_is_forwarded_translated_and_teed_into_the_title() {
    let upstream = upstream(|_, _| {
        Reply::sse(&[
            &text_chunk("{\"title\":\"Fix the flaky test\"}"),
            &finish_chunk("stop"),
            DONE,
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // docs/agents.md "What the Responses front does": the TUI's title request has `tools: []` and
    // the schema `codex_output_schema`.
    let body = json!({
        "model": "mock-model",
        "stream": true,
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Write a short title for this task."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the flaky test"}]}
        ],
        "tools": [],
        "text": {"format": {"type": "json_schema", "name": "codex_output_schema", "strict": true,
            "schema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}
    });
    let response = post_codex(&app, &body).await;
    assert_eq!(
        response.headers()["x-title-url"],
        format!("/titles/{SESSION}")
    );
    let events = parse_events(&read_all(response).await);
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(
        completed["output"][0]["content"][0]["text"],
        "{\"title\":\"Fix the flaky test\"}"
    );
    // One upstream request: the client's own, with its prompt and schema (not opencode's form).
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].json();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Write a short title for this task."})
    );
    assert_eq!(
        sent["response_format"]["json_schema"]["name"],
        "codex_output_schema"
    );
    let record = crate::titles::settled(&app, SESSION, "sk-codex").await;
    assert_eq!(record["title"], "Fix the flaky test", "{record}");
}

/// Codex 0.171 with its GPT-6 models (its default model, seen through the proxy): no `tools`,
/// its tools inside an `additional_tools` input item, the shell and patches reached only from
/// the freeform JavaScript `exec`, the base prompt after that item. opencode's tools are offered
/// upstream, the base prompt is not a user turn, and a `bash` call reaches Codex as an `exec`
/// script whose output goes back as the bash result.
#[tokio::test]
async fn codex_code_mode_runs_as_opencode_through_its_exec_tool() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            return Reply::sse(&[DONE]);
        }
        if String::from_utf8_lossy(&r.body).contains("\"role\":\"tool\"") {
            return Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE]);
        }
        let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_x1",
            "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"echo hi\",\"description\":\"Say hi\"}"}}]}}]});
        Reply::sse(&[&format!("data: {call}\n\n"), &finish_chunk("tool_calls"), DONE])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let tools = json!({"type": "additional_tools", "id": "at_1", "role": "developer", "tools": [
        {"type": "namespace", "name": "functions", "description": "", "tools": [
            {"type": "custom", "name": "exec", "description": "Run JavaScript code to orchestrate/compose tool calls",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: SOURCE\nSOURCE: /[\\s\\S]+/"}},
            {"type": "function", "name": "wait", "description": "Wait on an exec cell.", "strict": false,
             "parameters": {"type": "object", "properties": {"cell_id": {"type": "string"}}, "required": ["cell_id"]}}]},
        {"type": "namespace", "name": "clock", "description": "", "tools": [
            {"type": "function", "name": "sleep", "description": "Sleep.", "strict": false,
             "parameters": {"type": "object", "properties": {"duration_ms": {"type": "number"}}, "required": ["duration_ms"]}}]}
    ]});
    let base = "You are Codex, an agent based on GPT-6.";
    let input = |more: Vec<Value>| {
        let mut all = vec![
            tools.clone(),
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": base}]}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}),
        ];
        all.extend(more);
        json!({"model": "gpt-6.2-sol", "stream": false, "input": all})
    };
    let answer: Value = post_codex(&app, &input(vec![]))
        .await
        .json()
        .await
        .expect("JSON");
    let call = answer["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .unwrap_or_else(|| panic!("an exec call: {answer}"))
        .clone();
    assert_eq!(call["name"], "exec");
    assert_eq!(
        call["input"],
        r#"text(await tools.exec_command({"cmd":"echo hi"}));"#
    );
    let first = upstream.main_requests()[0].json();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .expect("tools offered")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for tool in ["bash", "write", "edit"] {
        assert!(offered.contains(&tool), "{tool} in {offered:?}");
    }
    assert!(
        !first["messages"].to_string().contains(base),
        "the base prompt is Codex's, replaced by opencode's, never a user turn"
    );

    let done: Value = post_codex(
        &app,
        &input(vec![
            call.clone(),
            // As Codex 0.171 answers an exec script (captured): a header, then what it gave `text`.
            json!({"type": "custom_tool_call_output", "call_id": call["call_id"], "output": [
                {"type": "input_text", "text": "Script completed\nWall time 0.2 seconds\nOutput:\n"},
                {"type": "input_text", "text": "{\"chunk_id\":\"364249\",\"exit_code\":0,\"output\":\"hi\\n\"}"}]}),
        ]),
    )
    .await
    .json()
    .await
    .expect("JSON");
    assert!(done.to_string().contains("Done."), "{done}");
    let second = upstream.main_requests().last().expect("turn 2").json();
    let messages = second["messages"].as_array().expect("messages");
    assert_eq!(messages.last().expect("result")["content"], "hi\n");
    let bash = &messages[messages.len() - 2]["tool_calls"][0]["function"];
    assert_eq!(bash["name"], "bash");
    assert_eq!(
        serde_json::from_str::<Value>(bash["arguments"].as_str().expect("args")).expect("JSON")["command"],
        "echo hi"
    );
}
