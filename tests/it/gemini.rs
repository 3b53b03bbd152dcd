//! The Gemini API front through the real server: Gemini CLI's requests (shapes from
//! docs/wire.md §5) reach the Chat Completions upstream in opencode's form, and the answer comes back as
//! Gemini SSE, one `GenerateContentResponse`, or Google's error shape; the key in `?key=` goes
//! nowhere but where it is meant to.

use std::sync::Arc;

use serde_json::{Value, json};
use sha2::Digest;
use tokio::sync::Notify;

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, USAGE_CHUNK, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};

const GEMINI_UA: &str =
    "GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64) google-api-nodejs-client/10.5.0";
const STREAM_PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
const KEY: &str = "AIza-gemini-SECRET-0042";

/// A first turn as Gemini CLI 0.61 sends it: system instruction, one user text, its tools with
/// `parametersJsonSchema`, thoughts asked for.
fn first_turn() -> Value {
    json!({
        "contents": [{"role": "user", "parts": [{"text": "Create the file made_by_gemini.txt"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI, an interactive CLI agent."}]},
        "tools": [{"functionDeclarations": [{
            "name": "run_shell_command",
            "description": "Executes a given shell command.",
            "parametersJsonSchema": {"type": "object", "properties": {
                "command": {"type": "string"}, "description": {"type": "string"}},
                "required": ["command"]}
        }]}],
        "generationConfig": {"temperature": 0, "topP": 1,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": -1}}
    })
}

async fn post(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.post(path)
        .header("x-goog-api-key", KEY)
        .header("x-goog-api-client", "google-genai-sdk/1.30.0 gl-node/v24")
        .header("user-agent", GEMINI_UA)
        .json(body)
        .send()
        .await
        .expect("POST")
}

/// The `GenerateContentResponse` of every `data:` event; the stream is `\r\n\r\n`-framed.
fn responses_of(text: &str) -> Vec<Value> {
    text.split("\r\n\r\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let data = e
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("a data event: {e}"));
            serde_json::from_str(data).expect("data is JSON")
        })
        .collect()
}

/// Title requests get an empty answer; every other request `reply`.
async fn answering(reply: Reply) -> FakeUpstream {
    FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[DONE])
        } else {
            reply.clone()
        }
    })
    .await
}

/// A `bash` call `call_b1` (what opencode's upstream names it).
fn bash_call() -> Reply {
    let call = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_b1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"echo hi > made_by_gemini.txt\"}"}}]},
            "finish_reason": null}]});
    Reply::sse(&[
        &format!("data: {call}\n\n"),
        &finish_chunk("tool_calls"),
        USAGE_CHUNK,
        DONE,
    ])
}

#[tokio::test]
async fn a_streamed_turn_is_gemini_sse_and_the_upstream_sees_opencodes_chat_completions() {
    let upstream = answering(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for path in [
        STREAM_PATH,
        "/harness/opencode/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    ] {
        let response = post(&app, path, &first_turn()).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let events = responses_of(&read_all(response).await);
        let text: String = events
            .iter()
            .flat_map(|e| {
                e["candidates"][0]["content"]["parts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(text, "Hello world");
        let last = events.last().expect("events");
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["promptTokenCount"], 9);
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 11);
        assert_eq!(last["modelVersion"], "gemini-2.5-flash");
    }
    let sent = upstream.main_requests();
    let first = &sent[0];
    // Below the fake's base URL (`…/v1`); the client's query is its own, not forwarded.
    assert_eq!(first.path, "/v1/chat/completions");
    let body = first.json();
    assert_eq!(body["model"], "gemini-2.5-flash");
    let system = body["messages"][0]["content"]
        .as_str()
        .expect("a system prompt");
    assert!(
        system.contains("<env>"),
        "rebuilt as opencode: {system:.200}"
    );
    assert!(first.header("x-goog-api-key").is_none() && first.header("x-api-key").is_none());
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        first.header("user-agent"),
        Some(GEMINI_UA),
        "detection sees the client"
    );
}

#[tokio::test]
async fn without_stream_the_answer_is_one_generate_content_response() {
    let upstream = answering(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // pi's Google client with a base URL without a version posts `/models/…`.
    for path in [
        "/models/gemini-2.5-flash:generateContent",
        "/harness/opencode/models/gemini-2.5-flash:generateContent",
    ] {
        let response = post(&app, path, &first_turn()).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    let response = post(
        &app,
        "/v1/models/gemini-2.5-flash:generateContent",
        &first_turn(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        json!([{"text": "Hello world"}])
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert_eq!(body["usageMetadata"]["candidatesTokenCount"], 2);
}

#[tokio::test]
async fn a_tool_round_trip_reaches_the_upstream_as_a_tool_message_for_its_call() {
    // The first turn gets the call; a turn carrying its result, an answer.
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let answered = r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if r.is_title() {
            Reply::sse(&[DONE])
        } else if answered {
            Reply::sse(
                &hello_stream()
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            )
        } else {
            bash_call()
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = post(&app, STREAM_PATH, &first_turn()).await;
    let events = responses_of(&read_all(response).await);
    let call = events
        .iter()
        .flat_map(|e| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find_map(|p| p.get("functionCall").cloned())
        .expect("a whole functionCall part");
    assert_eq!(call["id"], "call_b1");
    assert_eq!(
        call["args"],
        json!({"command": "echo hi > made_by_gemini.txt"})
    );
    assert_eq!(
        events.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );

    // The CLI sends the call back with its result: with the id, and (older CLIs) without any.
    for with_id in [true, false] {
        let mut turn = first_turn();
        let mut call = json!({"name": call["name"], "args": call["args"]});
        let mut result = json!({"name": call["name"], "response": {"output": "done"}});
        if with_id {
            call["id"] = json!("call_b1");
            result["id"] = json!("call_b1");
        }
        turn["contents"].as_array_mut().unwrap().extend([
            json!({"role": "model", "parts": [{"functionCall": call, "thoughtSignature": "skip_thought_signature_validator"}]}),
            json!({"role": "user", "parts": [{"functionResponse": result}]}),
        ]);
        let response = post(&app, STREAM_PATH, &turn).await;
        assert_eq!(response.status(), 200);
        let _ = read_all(response).await;
        let sent = upstream.main_requests().last().unwrap().json();
        let messages = sent["messages"].as_array().unwrap();
        let tool = messages
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool message");
        assert_eq!(tool["content"], "done");
        let asked = messages
            .iter()
            .find_map(|m| m["tool_calls"].get(0))
            .expect("the assistant's call");
        assert_eq!(tool["tool_call_id"], asked["id"], "with_id {with_id}");
        if with_id {
            assert_eq!(tool["tool_call_id"], "call_b1");
        }
    }
}

#[tokio::test]
async fn the_proxys_own_errors_are_google_shaped() {
    let gate = Arc::new(Notify::new());
    let upstream = answering(Reply::steps(vec![
        Step::Send(text_chunk("x").into_bytes()),
        Step::Wait(gate.clone()),
        Step::Send(finish_chunk("stop").into_bytes()),
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_concurrent_requests = 1;
    config.limits.max_body_bytes = 4096;
    config.auth.keys = vec![hex::encode(sha2::Sha256::digest(KEY))];
    let app = TestApp::start(config).await;
    let error = |status: u16, name: &str, body: &Value| {
        assert_eq!(body["error"]["code"], status, "{body}");
        assert_eq!(body["error"]["status"], name, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    };
    let bad = app
        .post(STREAM_PATH)
        .header("x-goog-api-key", KEY)
        .body("{not json")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    error(400, "INVALID_ARGUMENT", &bad.json().await.unwrap());
    let anonymous = app
        .post(STREAM_PATH)
        .json(&first_turn())
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    error(401, "UNAUTHENTICATED", &anonymous.json().await.unwrap());
    let by_query = app
        .post(&format!(
            "/v1beta/models/gemini-2.5-flash:countTokens?key={KEY}"
        ))
        .json(&json!({"contents": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_query.status(), 200, "the key in the query is a key");
    let mut big = first_turn();
    big["contents"][0]["parts"][0]["text"] = json!("a".repeat(8192));
    let large = post(&app, STREAM_PATH, &big).await;
    assert_eq!(large.status(), 413);
    error(413, "INVALID_ARGUMENT", &large.json().await.unwrap());
    let unknown = post(
        &app,
        "/v1beta/models/gemini-2.5-flash:embedContent",
        &first_turn(),
    )
    .await;
    assert_eq!(unknown.status(), 404);
    error(404, "NOT_FOUND", &unknown.json().await.unwrap());
    let climbing = post(
        &app,
        "/v1beta/models/..%2F..%2Fadmin:generateContent",
        &first_turn(),
    )
    .await;
    assert_eq!(climbing.status(), 404);
    error(404, "NOT_FOUND", &climbing.json().await.unwrap());
    let unknown = post(&app, "/v1beta/files", &first_turn()).await;
    assert_eq!(unknown.status(), 404);
    error(404, "NOT_FOUND", &unknown.json().await.unwrap());
    // One streaming answer holds the only permit; the next request is turned away.
    let held = post(&app, STREAM_PATH, &first_turn()).await;
    assert_eq!(held.status(), 200);
    let busy = post(&app, STREAM_PATH, &first_turn()).await;
    assert_eq!(busy.status(), 503);
    error(503, "UNAVAILABLE", &busy.json().await.unwrap());
    gate.notify_one();
    let _ = read_all(held).await;
}

/// Counted here, never asked of the upstream: the client's words alone through `passthrough`,
/// with opencode's system prompt and tools through the default harness (`count_tokens.rs`
/// measures that count against the rebuilt body).
#[tokio::test]
async fn count_tokens_is_a_local_estimate() {
    let upstream = FakeUpstream::fixed(Reply::json(500, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let count = |path: &'static str| {
        let app = &app;
        async move {
            let contents =
                json!({"contents": [{"role": "user", "parts": [{"text": "hello world"}]}]});
            let response = post(app, path, &contents).await;
            assert_eq!(response.status(), 200);
            let body: Value = response.json().await.expect("json");
            body["totalTokens"].as_u64().expect("a count")
        }
    };
    let own = count("/harness/passthrough/v1beta/models/gemini-2.5-flash:countTokens").await;
    assert!(own > 2 && own < 50, "{own}");
    let rebuilt = count("/v1beta/models/gemini-2.5-flash:countTokens").await;
    assert!(rebuilt > 1_000, "opencode's prompt and tools: {rebuilt}");
    assert_eq!(upstream.count(), 0, "counted locally");
}

#[tokio::test]
async fn a_json_helper_call_is_forwarded_plain_and_never_titled() {
    let upstream = FakeUpstream::start(|_: &Recorded, _| {
        Reply::sse(&[
            &text_chunk("{\"next_speaker\":\"user\"}"),
            &finish_chunk("stop"),
            DONE,
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let helper = json!({
        "contents": [{"role": "user", "parts": [{"text": "Who speaks next? Answer in JSON."}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You check who speaks next."}]},
        "generationConfig": {"temperature": 0, "responseMimeType": "application/json",
            "responseJsonSchema": {"type": "object", "properties": {"next_speaker": {"type": "string"}},
                "required": ["next_speaker"]}}
    });
    let response = post(
        &app,
        "/v1beta/models/gemini-2.5-flash-lite:generateContent",
        &helper,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(!response.headers().contains_key("x-title-url"));
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body["candidates"][0]["content"]["parts"][0]["text"],
        "{\"next_speaker\":\"user\"}"
    );
    let sent = upstream.requests();
    assert_eq!(sent.len(), 1, "no title request: {sent:?}");
    assert!(sent[0].header("x-api-key").is_none() && sent[0].header("x-goog-api-key").is_none());
    assert_eq!(sent[0].header("accept"), Some("text/event-stream"));
    let chat = sent[0].json();
    assert_eq!(chat["model"], "gemini-2.5-flash-lite");
    assert_eq!(
        chat["messages"],
        json!([{"role": "system", "content": "You check who speaks next."},
               {"role": "user", "content": "Who speaks next? Answer in JSON."}])
    );
    assert_eq!(chat["response_format"]["type"], "json_schema");
    assert!(chat.get("tools").is_none());
}

#[tokio::test]
async fn the_model_list_comes_from_the_upstream_in_geminis_shape() {
    let upstream = FakeUpstream::fixed(Reply::json(
        200,
        r#"{"object":"list","data":[{"id":"gemini-2.5-flash","object":"model"},{"id":"m2"}]}"#,
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let list: Value = app
        .get("/v1beta/models")
        .header("x-goog-api-key", KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["models"][0]["name"], "models/gemini-2.5-flash");
    assert_eq!(list["models"].as_array().map(Vec::len), Some(2));
    let one = app.get("/v1beta/models/m2").send().await.unwrap();
    assert_eq!(one.status(), 200);
    assert_eq!(one.json::<Value>().await.unwrap()["name"], "models/m2");
    let none = app.get("/v1beta/models/nope").send().await.unwrap();
    assert_eq!(none.status(), 404);
    assert_eq!(
        none.json::<Value>().await.unwrap()["error"]["status"],
        "NOT_FOUND"
    );
    assert_eq!(upstream.requests()[0].path, "/v1/models");
    // `GET /v1/models/{id}` is OpenAI's: forwarded as it is.
    let openai = app.get("/v1/models/m2").send().await.unwrap();
    assert_eq!(openai.status(), 200);
    assert_eq!(upstream.requests().last().unwrap().path, "/v1/models/m2");
}

#[tokio::test]
async fn the_key_in_the_query_reaches_neither_the_upstream_url_nor_the_inspector() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let rewritten = app
        .post(&format!("{STREAM_PATH}&key={KEY}"))
        .header("user-agent", GEMINI_UA)
        .json(&first_turn())
        .send()
        .await
        .unwrap();
    assert_eq!(rewritten.status(), 200);
    let _ = rewritten.bytes().await;
    // passthrough: the Gemini body byte for byte to the upstream's own path, the key in its header.
    let body = serde_json::to_vec(&first_turn()).unwrap();
    let passed = app
        .post(&format!("/harness/passthrough{STREAM_PATH}&key={KEY}"))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(passed.status(), 200);
    let _ = passed.bytes().await;
    let sent = upstream.requests();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(
        sent[1].path, "/v1/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "below the fake's base URL (`…/v1`), the client's query without its key"
    );
    assert_eq!(sent[1].body, body);
    assert_eq!(sent[1].header("x-goog-api-key"), Some(KEY));
    for request in &sent {
        assert!(!request.path.contains(KEY), "{}", request.path);
    }
    let inspected = app.get_json("/ui/api/inspect", KEY).await.to_string();
    assert!(
        inspected.contains("streamGenerateContent"),
        "{inspected:.300}"
    );
    assert!(!inspected.contains(KEY), "{inspected}");
}

#[tokio::test]
async fn the_key_in_the_query_never_reaches_the_logs() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_LEVEL", "debug"),
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            ("HARNESS_PROXY__TITLES__ORDER", "off"),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    for path in [STREAM_PATH, "/v1beta/models/gemini-2.5-flash:nope?alt=sse"] {
        let response = client
            .post(format!("{}{path}&key={KEY}", proxy.base))
            .json(&first_turn())
            .send()
            .await
            .unwrap();
        let _ = response.bytes().await;
    }
    proxy
        .wait_for_logs(|logs| logs.matches("\"message\":\"request\"").count() >= 2)
        .await;
    let logs = proxy.logs();
    assert!(logs.contains("streamGenerateContent"), "{logs}");
    assert!(
        !logs.contains("SECRET"),
        "the key appears in the logs:\n{logs}"
    );
}

#[tokio::test]
async fn a_gemini_conversation_is_titled_once_and_found_again_by_its_first_exchange() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let answered = r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if r.is_title() {
            Reply::sse(&[
                &text_chunk("Create the Gemini file"),
                &finish_chunk("stop"),
                DONE,
            ])
        } else if answered {
            Reply::sse(
                &hello_stream()
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            )
        } else {
            bash_call()
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // Gemini CLI sends no conversation id: the first turn starts one and is titled.
    let first = post(&app, STREAM_PATH, &first_turn()).await;
    let id = first.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.headers()["x-title-url"], format!("/titles/{id}"));
    let events = responses_of(&read_all(first).await);
    let call = events
        .iter()
        .flat_map(|e| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find_map(|p| p.get("functionCall").cloned())
        .expect("a call");
    // The next turn holds that exchange (the call, echoed with its id) and lands in it.
    let mut turn = first_turn();
    turn["contents"].as_array_mut().unwrap().extend([
        json!({"role": "model", "parts": [{"functionCall": call}]}),
        json!({"role": "user", "parts": [{"functionResponse": {"id": call["id"], "name": call["name"],
            "response": {"output": ""}}}]}),
    ]);
    let second = post(&app, STREAM_PATH, &turn).await;
    assert_eq!(second.headers()["x-conversation-id"], id.as_str());
    assert!(!second.headers().contains_key("x-title-url"), "titled once");
    let _ = read_all(second).await;
    let record = crate::titles::settled(&app, &id, KEY).await;
    assert_eq!(record["title"], "Create the Gemini file", "{record}");
    let titles = upstream.requests().iter().filter(|r| r.is_title()).count();
    assert_eq!(titles, 1);
}
