//! The text-protocol harnesses over sockets (issue 33): a recording fake upstream that answers
//! only in text — a bash block for swe-agent, a JSON keystroke object for terminus-2, a text
//! answer and then a `bash` call for mini-swe-agent — never streamed (the harnesses send no
//! `stream`), and each front's client (opencode on Chat, Codex on Responses, Claude Code on
//! Messages, Gemini CLI on the Gemini API) gets a call of its own shell, runs it, and its result
//! reaches the upstream in the harness's form; then the turn ends. Also: the correction turns
//! upstream and their bound, and a client without a shell refused in its protocol's shape.

use serde_json::{Value, json};

use crate::fronts::{FRONTS, Front};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// A non-streamed Chat Completions answer: text, and calls given as (name, arguments).
fn answer(text: &str, calls: &[(&str, &str)]) -> Reply {
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| json!({"id": format!("call_up{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    Reply::json(200, &body.to_string())
}

/// The messages of a recorded request.
fn messages(request: &Recorded) -> Vec<Value> {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn last_user(request: &Recorded) -> String {
    messages(request)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The text of a (non-streamed) answer in the front's protocol.
fn text_of(front: Front, answer: &Value) -> String {
    let texts: Vec<String> = match front {
        Front::Chat => vec![
            answer["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ],
        Front::Responses => answer["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "message")
            .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["text"].as_str().map(str::to_owned))
            .collect(),
        Front::Messages => answer["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect(),
        Front::Gemini => answer["candidates"][0]["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect(),
    };
    texts.concat()
}

/// The second turn: the prompt, the model's text and the client's call, and its result.
fn second_turn(front: Front, text: &str, args: &Value, output: &str) -> Value {
    let mut request = front.request(None);
    let (tool, _) = front.shell();
    match front {
        Front::Chat => {
            let messages = request["messages"].as_array_mut().expect("messages");
            messages.push(json!({"role": "assistant", "content": text, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": "call_1", "content": output}));
        }
        Front::Responses => {
            let input = request["input"].as_array_mut().expect("input");
            input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
            input.push(json!({"type": "function_call", "call_id": "call_1", "name": tool, "arguments": args.to_string()}));
            input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": format!("Process exited with code 0\nOutput:\n{output}")}));
        }
        Front::Messages => {
            let messages = request["messages"].as_array_mut().expect("messages");
            messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": "toolu_1", "name": tool, "input": args}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}]}));
        }
        Front::Gemini => {
            let contents = request["contents"].as_array_mut().expect("contents");
            contents.push(json!({"role": "model", "parts": [{"text": text}, {"functionCall": {"id": "call_1", "name": tool, "args": args}}]}));
            contents.push(json!({"role": "user", "parts": [{"functionResponse": {"id": "call_1", "name": tool, "response": {"output": output}}}]}));
        }
    }
    request
}

async fn app_for(upstream: &FakeUpstream) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    TestApp::start(config).await
}

async fn send(app: &TestApp, front: Front, harness: &str, body: &Value) -> (u16, Value) {
    let mut request = app.post(&front.path(harness)).json(body);
    for (k, v) in front.headers() {
        request = request.header(k, v);
    }
    if matches!(front, Front::Gemini) {
        request = request.header("x-goog-api-key", "sk-test");
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// One round trip: turn 1 gets a call of the client's shell running `echo hi`, turn 2 sends its
/// result and gets the final text. `check` reads the upstream's requests.
async fn round_trip(
    front: Front,
    harness: &str,
    upstream: &FakeUpstream,
    final_text: &str,
) -> Result<Vec<Recorded>, String> {
    let app = app_for(upstream).await;
    let (status, first) = send(&app, front, harness, &front.request(None)).await;
    if status != 200 {
        return Err(format!("turn 1: {status} {first}"));
    }
    let Some((name, args)) = front.call(&first) else {
        return Err(format!("no call in the client's answer: {first}"));
    };
    let (client_tool, _) = front.shell();
    let command_key = if matches!(front, Front::Responses) {
        "cmd"
    } else {
        "command"
    };
    if name != client_tool || args.get(command_key) != Some(&json!("echo hi")) {
        return Err(format!(
            "the client got {name} {args}, not its {client_tool} running echo hi"
        ));
    }
    let text = text_of(front, &first);
    let (status, second) = send(
        &app,
        front,
        harness,
        &second_turn(front, &text, &args, "hi\n"),
    )
    .await;
    if status != 200 {
        return Err(format!("turn 2: {status} {second}"));
    }
    if front.call(&second).is_some() || !text_of(front, &second).contains(final_text) {
        return Err(format!("turn 2 is not the final text: {second}"));
    }
    Ok(upstream.main_requests())
}

#[tokio::test]
async fn swe_agent_round_trips_on_every_front_from_a_bash_block() {
    let mut failures = Vec::new();
    for front in FRONTS {
        let upstream = FakeUpstream::start(|r: &Recorded, _| {
            if last_user(r).starts_with("OBSERVATION:") {
                answer("DISCUSSION\nIt printed hi.\n\n```\nsubmit\n```", &[])
            } else {
                answer("DISCUSSION\nLet me greet.\n\n```bash\necho hi\n```", &[])
            }
        })
        .await;
        match round_trip(front, "swe-agent", &upstream, "It printed hi.").await {
            Err(why) => failures.push(format!("{front:?}: {why}")),
            Ok(requests) => {
                let first = requests[0].json();
                if first.get("stream").is_some()
                    || first.get("tools").is_some()
                    || first["temperature"] != 1.0
                {
                    failures.push(format!("{front:?}: not swe-agent's body: {first}"));
                }
                let second = messages(&requests[1]);
                let want = [
                    json!({"role": "assistant", "content": "DISCUSSION\nLet me greet.\n\n```bash\necho hi\n```"}),
                    json!({"role": "user", "content": "OBSERVATION:\nhi\n"}),
                ];
                if requests.len() != 2 || second[second.len() - 2..] != want {
                    failures.push(format!("{front:?}: the observation upstream: {second:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const KEYS: &str = r#"{"analysis": "Nothing yet.", "plan": "Greet.", "commands": [{"keystrokes": "echo hi\n", "duration": 0.1}], "task_complete": false}"#;
const DONE: &str =
    r#"{"analysis": "It printed hi.", "plan": "Done.", "commands": [], "task_complete": true}"#;

#[tokio::test]
async fn terminus_2_round_trips_on_every_front_from_keystrokes_and_confirms_once() {
    let mut failures = Vec::new();
    for front in FRONTS {
        let upstream = FakeUpstream::start(|r: &Recorded, _| {
            if messages(r).len() > 1 {
                answer(DONE, &[])
            } else {
                answer(KEYS, &[])
            }
        })
        .await;
        match round_trip(front, "terminus-2", &upstream, "It printed hi.").await {
            Err(why) => failures.push(format!("{front:?}: {why}")),
            Ok(requests) => {
                let first = requests[0].json();
                if first.get("stream").is_some()
                    || first.get("tools").is_some()
                    || first["temperature"] != 0.7
                {
                    failures.push(format!("{front:?}: not terminus-2's body: {first}"));
                }
                // Turn 2: the screen, then the proxy's confirmation after the first `task_complete`.
                let screen = format!("hi\n{}", "\n".repeat(39));
                let second = messages(&requests[1]);
                let confirm = messages(
                    &requests
                        .get(2)
                        .cloned()
                        .unwrap_or_else(|| requests[1].clone()),
                );
                let asked = confirm
                    .last()
                    .and_then(|m| m["content"].as_str())
                    .unwrap_or_default();
                if requests.len() != 3
                    || second.last() != Some(&json!({"role": "user", "content": screen}))
                    || confirm[confirm.len() - 2] != json!({"role": "assistant", "content": DONE})
                    || !asked.contains("Do you really want to mark the task as complete?")
                {
                    failures.push(format!(
                        "{front:?}: {} requests upstream, the last: {confirm:?}",
                        requests.len()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn mini_swe_agent_corrects_a_text_answer_then_round_trips_on_every_front() {
    let mut failures = Vec::new();
    for front in FRONTS {
        let upstream = FakeUpstream::start(|r: &Recorded, _| {
            let all = messages(r);
            if all.iter().any(|m| m["role"] == "tool") {
                answer(
                    "It printed hi.",
                    &[(
                        "bash",
                        r#"{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}"#,
                    )],
                )
            } else if last_user(r).starts_with("Tool call error:") {
                answer("Greeting.", &[("bash", r#"{"command":"echo hi"}"#)])
            } else {
                answer("I would run echo hi.", &[])
            }
        })
        .await;
        match round_trip(front, "mini-swe-agent", &upstream, "It printed hi.").await {
            Err(why) => failures.push(format!("{front:?}: {why}")),
            Ok(requests) => {
                let first = requests[0].json();
                let offered: Vec<&str> = first["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect();
                if first.get("stream").is_some() || offered != ["bash"] {
                    failures.push(format!("{front:?}: not mini-swe-agent's body: {first}"));
                }
                // The correction replaced the text answer: no assistant turn before it.
                let corrected = messages(&requests[1]);
                let tail = &corrected[corrected.len() - 2..];
                if tail[0]["role"] != "user"
                    || tail[1]["role"] != "user"
                    || !last_user(&requests[1]).starts_with("Tool call error:")
                {
                    failures.push(format!("{front:?}: the correction upstream: {corrected:?}"));
                }
                let third = messages(&requests[2]);
                let result = third.iter().find(|m| m["role"] == "tool");
                if requests.len() != 3 || result.map(|m| &m["content"]) != Some(&json!("hi\n")) {
                    failures.push(format!("{front:?}: the result upstream: {third:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An upstream that never follows the harness's rules: (harness, its answer, what the harness's
/// correction turn starts with, whether earlier pairs stay).
const STUBBORN: [(&str, &str, &str); 3] = [
    (
        "swe-agent",
        "I am still thinking.",
        "Your reply did not follow the required format.",
    ),
    (
        "terminus-2",
        "I will list the files.",
        "Your previous reply could not be read:\nERROR: the reply holds no JSON object",
    ),
    ("mini-swe-agent", "I am still thinking.", "Tool call error:"),
];

#[tokio::test]
async fn a_malformed_answer_gets_the_harness_s_correction_three_times_then_is_the_answer() {
    for (harness, text, correction) in STUBBORN {
        let upstream = FakeUpstream::start(move |_: &Recorded, _| answer(text, &[])).await;
        let app = app_for(&upstream).await;
        let mut body = Front::Chat.request(None);
        body["stream"] = json!(true);
        let response = app
            .post(&Front::Chat.path(harness))
            .header("user-agent", "opencode/1.18.33")
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200, "{harness}");
        let events = response.text().await.expect("body");
        assert!(
            events.contains(&json!(text).to_string()[1..text.len()]),
            "{harness}: {events}"
        );
        assert!(
            !events.contains("tool_calls"),
            "{harness}: no call: {events}"
        );
        assert!(
            events.contains("\"finish_reason\":\"stop\"") && events.ends_with("data: [DONE]\n\n"),
            "{harness}: {events}"
        );
        let requests = upstream.main_requests();
        assert_eq!(
            requests.len(),
            4,
            "{harness}: the first request and three corrections"
        );
        for (n, request) in requests.iter().enumerate().skip(1) {
            let all = messages(request);
            let turns = all
                .iter()
                .filter(|m| {
                    m["content"]
                        .as_str()
                        .is_some_and(|c| c.starts_with(correction))
                })
                .count();
            let answers = all.iter().filter(|m| m["role"] == "assistant").count();
            let (want_turns, want_answers) = match harness {
                // swe-agent keeps only the pending pair.
                "swe-agent" => (1, 1),
                // terminus-2 keeps every pair.
                "terminus-2" => (n, n),
                // mini-swe-agent's correction replaces the answer.
                _ => (n, 0),
            };
            assert_eq!(
                (turns, answers),
                (want_turns, want_answers),
                "{harness}, request {n}: {all:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_client_without_a_shell_is_refused_in_its_protocol_s_shape() {
    let upstream = FakeUpstream::start(|_: &Recorded, _| answer("hi", &[])).await;
    let app = app_for(&upstream).await;
    for harness in ["swe-agent", "terminus-2", "mini-swe-agent"] {
        let response = app
            .post(&format!("/harness/{harness}/v1/messages"))
            .header("x-app", "cli")
            .json(&json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}]}))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 400, "{harness}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["type"], "error", "Anthropic's shape: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("shell tool") && message.contains("Read"),
            "{message}"
        );
        let (status, error) = send(
            &app,
            Front::Chat,
            harness,
            &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
        assert_eq!(status, 400, "{harness}");
        assert_eq!(
            error["error"]["code"], "no_shell_tool",
            "OpenAI's shape: {error}"
        );
    }
    assert!(upstream.main_requests().is_empty(), "nothing went upstream");
}

#[tokio::test]
async fn a_client_that_hangs_up_cancels_the_correction_in_flight() {
    use crate::support::fake_upstream::Step;
    let never = std::sync::Arc::new(tokio::sync::Notify::new());
    let held = never.clone();
    let upstream = FakeUpstream::start(move |_: &Recorded, n| {
        if n == 0 {
            answer("No command yet.", &[])
        } else {
            // The correction's answer starts and never ends.
            Reply::steps(vec![
                Step::Send(crate::support::sse::text_chunk("DISCUSSION").into_bytes()),
                Step::Wait(held.clone()),
            ])
        }
    })
    .await;
    let app = app_for(&upstream).await;
    let mut body = Front::Chat.request(None);
    body["stream"] = json!(true);
    let response = app
        .post(&Front::Chat.path("swe-agent"))
        .header("user-agent", "opencode/1.18.33")
        .json(&body)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    upstream.wait_for_requests(2).await;
    drop(response);
    let dropped = upstream
        .wait_for_drop(std::time::Duration::from_secs(5))
        .await;
    assert!(
        dropped.is_some(),
        "the correction request was dropped with the client"
    );
    never.notify_waiters();
}
