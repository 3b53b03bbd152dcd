//! Responses over WebSocket through the real server against the recording fake upstream, as Codex
//! 0.171 uses it: a turn answered one event per message through the same pipeline as `POST
//! /v1/responses` (harness, titles), the tool call's output sent on `previous_response_id`, the
//! warm-up that sends nothing upstream; errors as `error` events on a socket that stays usable;
//! the hang-up, the idle bound, the drain; the gates at the upgrade and the message bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::responses::{CODEX_UA, SESSION, call_chunk, codex_turn, hello, upstream};
use crate::support::sse::{DONE, USAGE_CHUNK, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, error_of, test_config};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a socket as Codex 0.171 does (its upgrade headers), with `extra` headers.
async fn open(app: &TestApp, path: &str, extra: &[(&str, &str)]) -> Result<Socket, WsError> {
    let mut request = format!("ws://{}{path}", app.addr)
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    for (name, value) in [
        ("openai-beta", "responses_websockets=2026-02-06"),
        ("user-agent", CODEX_UA),
        ("originator", "codex_exec"),
        ("session-id", SESSION),
        ("thread-id", SESSION),
    ]
    .iter()
    .chain(extra)
    {
        let name = http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        headers.insert(name, value.parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

async fn codex_socket(app: &TestApp) -> Socket {
    open(
        app,
        "/v1/responses",
        &[("authorization", "Bearer sk-codex")],
    )
    .await
    .expect("the upgrade succeeds")
}

/// `{"type":"response.create", …body}`.
fn create(body: &Value) -> Message {
    let mut message = json!({"type": "response.create"});
    for (key, value) in body.as_object().unwrap() {
        message[key] = value.clone();
    }
    Message::text(message.to_string())
}

/// The next message: an event's JSON, or `Err` with the close frame's code.
async fn next(ws: &mut Socket) -> Result<Value, Option<CloseCode>> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s");
        match message {
            Some(Ok(Message::Text(text))) => {
                return Ok(serde_json::from_str(&text).expect("each message is one JSON event"));
            }
            Some(Ok(Message::Close(frame))) => return Err(frame.map(|f| f.code)),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Events up to the answer's last: `response.completed`, `.incomplete`, `.failed` or `error`.
async fn answer(ws: &mut Socket) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next(ws).await.expect("an event, not a close");
        let last = matches!(
            event["type"].as_str(),
            Some("response.completed" | "response.incomplete" | "response.failed" | "error")
        );
        events.push(event);
        if last {
            return events;
        }
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_turn_comes_back_one_event_per_message_through_the_same_pipeline() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn("say hi", true))).await.unwrap();
    let events = answer(&mut ws).await;
    // The events of the HTTP front's stream, in order, each a message of its own.
    assert_eq!(
        kinds(&events),
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
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], json!(i));
    }
    let completed = &events[9]["response"];
    assert_eq!(completed["output"][0]["content"][0]["text"], "Hello world");
    assert_eq!(completed["usage"]["total_tokens"], 11);

    // The default harness rebuilt it as opencode, and the turn is titled under Codex's session.
    let main = upstream.main_requests();
    assert_eq!(main.len(), 1);
    assert_eq!(main[0].path, "/v1/chat/completions");
    let body = main[0].json();
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "\"say hi\""})
    );
    assert_eq!(main[0].header("authorization"), Some("Bearer sk-codex"));
    let record = crate::titles::settled(&app, SESSION, "sk-codex").await;
    assert_eq!(record["title"], "Greeting", "{record}");
}

#[tokio::test]
async fn the_path_names_the_harness() {
    let answer_events = [
        json!({"type": "response.created", "response": {"id": "resp_up", "status": "in_progress", "output": []}}),
        json!({"type": "response.completed", "response": {"id": "resp_up", "status": "completed", "output": []}}),
    ];
    let sse: String = answer_events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let upstream = FakeUpstream::fixed(Reply::sse(&[&sse])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = open(&app, "/harness/passthrough/v1/responses", &[])
        .await
        .unwrap();
    ws.send(create(
        &json!({"model": "m", "input": "hi", "stream": false}),
    ))
    .await
    .unwrap();
    assert_eq!(answer(&mut ws).await, answer_events);
    let sent = upstream.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/responses");
    assert_eq!(
        sent[0].json(),
        json!({"model": "m", "stream": true,
            "input": [{"type": "message", "role": "user", "content": "hi"}]})
    );
    assert_eq!(sent[0].header("openai-beta"), None);
    assert_eq!(sent[0].header("sec-websocket-key"), None);
}

#[tokio::test]
async fn a_tool_call_s_output_on_previous_response_id_continues_the_whole_conversation() {
    let upstream = upstream(|request, _| {
        let body = String::from_utf8_lossy(&request.body).into_owned();
        if body.contains("\"role\":\"tool\"") {
            Reply::sse(&[
                &text_chunk("Created."),
                &finish_chunk("stop"),
                USAGE_CHUNK,
                DONE,
            ])
        } else {
            let args = json!({"command": "echo hi > made_by_codex.txt", "description": "x"});
            Reply::sse(&[
                &call_chunk(0, Some("call_1"), Some("bash"), &args.to_string()),
                &finish_chunk("tool_calls"),
                DONE,
            ])
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn("create made_by_codex.txt", true)))
        .await
        .unwrap();
    let events = answer(&mut ws).await;
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    let call = &completed["output"][0];
    assert_eq!(
        (&call["type"], &call["name"]),
        (&json!("function_call"), &json!("exec_command"))
    );

    // Codex's next message: only the new item, on the last response's id.
    let mut follow = codex_turn("create made_by_codex.txt", true);
    follow["previous_response_id"] = completed["id"].clone();
    follow["input"] = json!([{"type": "function_call_output", "call_id": "call_1",
        "output": "Chunk ID: 53624f\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"}]);
    ws.send(create(&follow)).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(
        events.last().unwrap()["response"]["output"][0]["content"][0]["text"],
        "Created."
    );

    // The upstream's second request carries the whole conversation.
    let main = upstream.main_requests();
    assert_eq!(main.len(), 2);
    let sent = main[1].json();
    let messages = sent["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(
        messages[n - 3],
        json!({"role": "user", "content": "\"create made_by_codex.txt\""})
    );
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"],
        json!({"name": "bash", "arguments": "{\"command\":\"echo hi > made_by_codex.txt\"}"})
    );
    assert_eq!(
        messages[n - 1],
        json!({"role": "tool", "content": "(no output)", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn a_warm_up_sends_nothing_upstream_and_can_be_continued() {
    let upstream = upstream(|_, _| hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = codex_socket(&app).await;
    let mut warm = codex_turn("say hi", true);
    warm["generate"] = json!(false);
    ws.send(create(&warm)).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
    let warmed = &events[2]["response"];
    assert_eq!(warmed["output"], json!([]));
    assert_eq!(warmed["model"], "mock-model");
    assert_eq!(upstream.count(), 0);

    // Codex's turn after its warm-up: the same input, so no item, on the warm-up's id.
    let mut turn = codex_turn("say hi", true);
    turn["previous_response_id"] = warmed["id"].clone();
    turn["input"] = json!([]);
    ws.send(create(&turn)).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    let main = upstream.main_requests();
    assert_eq!(main.len(), 1);
    assert_eq!(
        main[0].json()["messages"][1],
        json!({"role": "user", "content": "\"say hi\""})
    );
}

#[tokio::test]
async fn an_upstream_error_is_an_error_event_and_the_socket_stays_usable() {
    let calls = AtomicUsize::new(0);
    let upstream = upstream(move |_, _| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::json(429, r#"{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limited"}}"#)
        } else {
            hello()
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(
        events,
        [
            json!({"type": "error", "status": 429, "error": {"message": "slow down",
            "type": "rate_limit_error", "param": null, "code": "rate_limited"}})
        ]
    );
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed");
}

#[tokio::test]
async fn messages_it_cannot_serve_get_error_events_and_the_socket_stays_open() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let upstream = upstream(move |_, _| {
        Reply::steps(vec![
            Step::Send(text_chunk("Hel").into_bytes()),
            Step::Gate(held.clone()),
            Step::Send(text_chunk("lo").into_bytes()),
            Step::Send(finish_chunk("stop").into_bytes()),
            Step::Send(DONE.as_bytes().to_vec()),
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut ws = codex_socket(&app).await;
    let refused = [
        (Message::text("not json"), 400, "invalid_json"),
        (
            Message::text(r#"{"type":"response.cancel"}"#),
            400,
            "invalid_message_type",
        ),
        (Message::binary(b"{}".to_vec()), 400, "invalid_message_type"),
        (
            create(&json!({"model": "m", "input": [], "previous_response_id": "resp_nope"})),
            400,
            "previous_response_not_found",
        ),
    ];
    for (message, status, code) in refused {
        ws.send(message).await.unwrap();
        let event = next(&mut ws).await.expect("an error event");
        assert_eq!(event["type"], "error", "{event}");
        assert_eq!(
            (&event["status"], &event["error"]["code"]),
            (&json!(status), &json!(code)),
            "{event}"
        );
    }
    // Codex's acknowledgement is taken silently.
    ws.send(Message::text(
        r#"{"type":"response.processed","response_id":"resp_x"}"#,
    ))
    .await
    .unwrap();
    assert_eq!(upstream.count(), 0);

    // One response at a time: another create while one runs is refused, the first goes on.
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    loop {
        let event = next(&mut ws).await.unwrap();
        if event["type"] == "response.output_text.delta" {
            break;
        }
    }
    ws.send(create(&codex_turn("again", true))).await.unwrap();
    let event = next(&mut ws).await.unwrap();
    assert_eq!(
        (&event["type"], &event["error"]["code"]),
        (&json!("error"), &json!("response_already_in_flight")),
        "{event}"
    );
    gate.add_permits(1);
    let events = answer(&mut ws).await;
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["output"][0]["content"][0]["text"], "Hello");
    assert_eq!(upstream.main_requests().len(), 1);
}

#[tokio::test]
async fn a_hang_up_cancels_the_upstream_request() {
    let mut steps = vec![Step::Send(text_chunk("first").into_bytes())];
    for _ in 0..100 {
        steps.push(Step::Sleep(Duration::from_millis(50)));
        steps.push(Step::Send(text_chunk("more").into_bytes()));
    }
    let upstream = upstream(move |_, _| Reply::steps(steps.clone())).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    for close in [true, false] {
        let mut ws = codex_socket(&app).await;
        ws.send(create(&codex_turn("hi", true))).await.unwrap();
        let first = next(&mut ws).await.unwrap();
        assert_eq!(first["type"], "response.created");
        if close {
            ws.close(None).await.unwrap();
        }
        drop(ws);
        let dropped = upstream.wait_for_drop(Duration::from_secs(5)).await;
        assert_eq!(
            dropped.as_deref(),
            Some("/v1/chat/completions"),
            "close frame sent: {close}"
        );
    }
}

#[tokio::test]
async fn the_upgrade_passes_the_key_gate_and_the_browser_guard() {
    let upstream = upstream(|_, _| hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.auth.keys = vec![crate::caller_auth::sha256_hex("key-one")];
    let app = TestApp::start(config).await;
    let refused = [
        (vec![], 401),
        (vec![("authorization", "Bearer key-two")], 401),
        (
            vec![
                ("authorization", "Bearer key-one"),
                ("origin", "http://evil.example"),
            ],
            403,
        ),
    ];
    for (headers, status) in refused {
        match open(&app, "/v1/responses", &headers).await {
            Err(WsError::Http(response)) => assert_eq!(response.status(), status, "{headers:?}"),
            other => panic!(
                "{headers:?}: expected a refusal, got {:?}",
                other.map(|_| ())
            ),
        }
    }
    assert_eq!(upstream.count(), 0);
    let mut ws = open(
        &app,
        "/v1/responses",
        &[("authorization", "Bearer key-one")],
    )
    .await
    .expect("a listed key gets in");
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    assert_eq!(
        answer(&mut ws).await.last().unwrap()["type"],
        "response.completed"
    );
    // A GET that asks for no upgrade is told what the route serves.
    let response = app
        .get("/v1/responses")
        .bearer_auth("key-one")
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_of(response).await;
    assert_eq!((status, code.as_str()), (426, "websocket_unsupported"));
}

#[tokio::test]
async fn a_message_over_the_body_limit_is_refused_and_the_socket_closed() {
    let upstream = upstream(|_, _| hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_body_bytes = 4096;
    let app = TestApp::start(config).await;
    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn(&"x".repeat(8192), true)))
        .await
        .unwrap();
    let event = next(&mut ws).await.expect("an error event");
    assert_eq!(
        (&event["status"], &event["error"]["code"]),
        (&json!(413), &json!("request_too_large")),
        "{event}"
    );
    assert_eq!(next(&mut ws).await.unwrap_err(), Some(CloseCode::Size));
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_kept_response_counts_in_the_in_flight_body_budget() {
    let upstream = upstream(|_, _| hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_body_bytes = 4096;
    config.limits.max_inflight_body_bytes = 4096;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    let events = answer(&mut ws).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    // The socket keeps its input and output (some 500 bytes): 3.6 KiB more do not fit beside it.
    let body = json!({"model": "m", "input": "x".repeat(3600)});
    let busy = app.post("/v1/responses").json(&body).send().await.unwrap();
    let (status, code, _) = error_of(busy).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    ws.close(None).await.unwrap();
    // Given back once the server has seen the close.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let response = app.post("/v1/responses").json(&body).send().await.unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the budget came back"
        );
    }
}

#[tokio::test]
async fn an_idle_socket_is_closed_and_shutdown_drains_a_running_response() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let upstream = upstream(move |_, _| {
        Reply::steps(vec![
            Step::Send(text_chunk("Hel").into_bytes()),
            Step::Gate(held.clone()),
            Step::Send(finish_chunk("stop").into_bytes()),
            Step::Send(DONE.as_bytes().to_vec()),
        ])
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.limits.keep_alive_timeout = Duration::from_millis(300);
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let mut app = TestApp::start(config).await;

    let mut idle = codex_socket(&app).await;
    assert_eq!(next(&mut idle).await.unwrap_err(), Some(CloseCode::Normal));

    let mut ws = codex_socket(&app).await;
    ws.send(create(&codex_turn("hi", true))).await.unwrap();
    assert_eq!(next(&mut ws).await.unwrap()["type"], "response.created");
    app.trigger_shutdown();
    gate.add_permits(1);
    assert_eq!(
        answer(&mut ws).await.last().unwrap()["type"],
        "response.completed"
    );
    assert_eq!(next(&mut ws).await.unwrap_err(), Some(CloseCode::Away));
    let server = app.server.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server ends once the socket has closed")
        .unwrap()
        .unwrap();
}
