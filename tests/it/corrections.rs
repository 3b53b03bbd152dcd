//! No invalid call reaches a client (issue 29, item 3), over sockets: a model call the client's
//! tool cannot carry (an argument with no slot, a tool the client does not have) is answered
//! upstream by the proxy with a tool error saying what was wrong, and the model's next call
//! reaches the client; after three such corrections the model's text is the answer and no call
//! reaches the client.

use serde_json::{Value, json};

use crate::support::fake_upstream::Step;
use crate::support::sse::DONE;
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

fn chunk(delta: &Value, finish: &Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
        "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

/// Some text, then one call.
fn call(text: &str, name: &str, arguments: &Value) -> Reply {
    let call = json!({"index": 0, "id": "call_x", "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}});
    Reply::steps(vec![
        Step::Send(
            chunk(&json!({"role": "assistant", "content": text}), &Value::Null).into_bytes(),
        ),
        Step::Send(chunk(&json!({"tool_calls": [call]}), &Value::Null).into_bytes()),
        Step::Send(chunk(&json!({}), &json!("tool_calls")).into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ])
}

/// llm's `bash(command)`: no timeout, no working directory of its own.
fn llm_turn() -> Value {
    json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "list"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]})
}

async fn app_for(upstream: &FakeUpstream) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    TestApp::start(config).await
}

/// The tool results the proxy wrote into a correction request.
fn tool_results(request: &Recorded) -> Vec<String> {
    request.json()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_call_the_client_cannot_carry_is_answered_upstream_and_the_next_one_reaches_it() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let corrected = r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if corrected {
            call(
                "Again.",
                "bash",
                &json!({"command": "ls", "description": "List"}),
            )
        } else {
            // A timeout llm's function has no slot for.
            call(
                "Listing.",
                "bash",
                &json!({"command": "ls", "description": "List", "timeout": 5000}),
            )
        }
    })
    .await;
    let app = app_for(&upstream).await;
    let answer: Value = app
        .post("/v1/chat/completions")
        .header("user-agent", "llm/0.36")
        .json(&llm_turn())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message = &answer["choices"][0]["message"];
    let calls = message["tool_calls"].as_array().expect("a call");
    assert_eq!(calls.len(), 1, "{answer}");
    assert_eq!(calls[0]["function"]["name"], "bash");
    let arguments: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"command": "ls"}),
        "only what the client declares"
    );
    assert_eq!(
        message["content"], "Listing.Again.",
        "the one answer carries both turns' text"
    );
    let requests = upstream.main_requests();
    assert_eq!(requests.len(), 2, "the correction went upstream");
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].starts_with("Error: this `bash` call cannot be run as given"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("timeout"),
        "says what was given: {}",
        results[0]
    );
    let turn = requests[1].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap();
    assert_eq!(
        turn["tool_calls"][0]["function"]["name"], "bash",
        "the model's own call: {turn}"
    );
    assert_eq!(turn["content"], "Listing.");
}

#[tokio::test]
async fn a_call_to_a_tool_the_client_does_not_have_is_corrected_on_the_messages_front_too() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let corrected = r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if corrected {
            call(
                "",
                "bash",
                &json!({"command": "pwd", "description": "Where"}),
            )
        } else {
            call("", "teleport", &json!({"to": "mars"}))
        }
    })
    .await;
    let app = app_for(&upstream).await;
    let answer: Value = app.post("/v1/messages")
        .header("x-app", "cli")
        .json(&json!({"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "where am I"}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}]}))
        .send().await.unwrap().json().await.unwrap();
    let uses: Vec<&Value> = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(uses.len(), 1, "{answer}");
    assert_eq!(uses[0]["name"], "Bash");
    assert_eq!(uses[0]["input"]["command"], "pwd");
    let requests = upstream.main_requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert!(
        results[0].starts_with("Error: there is no `teleport` tool here; the tools are:"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("bash"),
        "it names the tools there are: {}",
        results[0]
    );
}

#[tokio::test]
async fn after_three_corrections_the_model_s_text_is_the_answer_and_no_call_reaches_the_client() {
    let upstream = FakeUpstream::start(|_: &Recorded, n| {
        call(
            &format!("Try {n}. "),
            "bash",
            &json!({"command": "ls", "timeout": 1}),
        )
    })
    .await;
    let app = app_for(&upstream).await;
    let mut turn = llm_turn();
    turn["stream"] = json!(true);
    let text = app
        .post("/v1/chat/completions")
        .header("user-agent", "llm/0.36")
        .json(&turn)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !text.contains("tool_calls\":[{"),
        "no call streamed: {text}"
    );
    assert!(text.contains("\"finish_reason\":\"stop\""), "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    let requests = upstream.main_requests();
    assert_eq!(requests.len(), 4, "the first answer and three corrections");
    for n in 0..4 {
        assert!(
            text.contains(&format!("Try {n}.")) || text.contains(&format!("Try {}.", n + 1)),
            "every answer's text reached the client: {text}"
        );
    }
}

/// What the proxy remembers of a corrected answer is what the client got: an id-less client's
/// next turn, which sends back both turns' text and the call that reached it, is found to be the
/// same conversation (the anchor was the first answer's text alone before).
#[tokio::test]
async fn a_corrected_answer_anchors_the_conversation_as_the_client_got_it() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let messages = r.json()["messages"].as_array().cloned().unwrap_or_default();
        let corrected = messages.iter().any(|m| m["role"] == "tool");
        if messages.iter().any(|m| m["content"] == "found") {
            return call("", "bash", &json!({"command": "pwd"}));
        }
        if corrected {
            call("Again.", "bash", &json!({"command": "ls"}))
        } else {
            call(
                "Listing.",
                "bash",
                &json!({"command": "ls", "timeout": 5000}),
            )
        }
    })
    .await;
    let app = app_for(&upstream).await;
    let first = llm_turn();
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", "llm/0.36")
        .json(&first)
        .send()
        .await
        .unwrap();
    let id = response.headers()["x-conversation-id"].clone();
    let answer: Value = response.json().await.unwrap();
    let message = answer["choices"][0]["message"].clone();
    assert_eq!(message["content"], "Listing.Again.", "{answer}");
    let call_id = message["tool_calls"][0]["id"].clone();

    let mut next = first.clone();
    next["messages"].as_array_mut().unwrap().extend([
        message,
        json!({"role": "tool", "tool_call_id": call_id, "content": "found"}),
    ]);
    let response = app
        .post("/v1/chat/completions")
        .header("user-agent", "llm/0.36")
        .json(&next)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-conversation-id"],
        id,
        "the conversation the first turn started"
    );
}
