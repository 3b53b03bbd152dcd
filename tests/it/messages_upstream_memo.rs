//! Issue 34: on a Messages upstream, the server's thinking signature and redacted thinking go
//! back to it with the next turn whatever the client echoes. A Chat client echoes only its
//! calls: the reasoning memo gives the turn its thinking, signature and redacted blocks back. A
//! client that echoes the proxy's seal (Responses `encrypted_content`, Claude Code's thinking
//! `signature`) carries them inside it (`hpr4.`). Either way the server gets, before the call,
//! its thinking with its own signature, then its redacted blocks as it sent them.

use harness_proxy::config::{Config, TitleOrder, Wire};
use serde_json::{Value, json};

use crate::messages_upstream::assistant_turns;
use crate::support::anthropic::{self, REDACTED, SIGNATURE, THINKING, root};
use crate::support::{FakeUpstream, TestApp, test_config};

/// A fake Anthropic server: thinking (and, with `redacted`, a redacted block) then a Bash call;
/// `Done.` once the call's result is back.
async fn upstream(redacted: bool) -> FakeUpstream {
    FakeUpstream::start(move |request, _| {
        let input = json!({"command": "ls"});
        if anthropic::answers_a_tool(request) {
            anthropic::text("Done.")
        } else if redacted {
            anthropic::redacted_then_tool("toolu_7", "Bash", &input)
        } else {
            anthropic::thinking_then_tool("toolu_7", "Bash", &input)
        }
    })
    .await
}

fn config(fake: &FakeUpstream) -> Config {
    let mut config = test_config(&root(fake));
    config.upstream.wire = Wire::Messages;
    config.default_harness = "claude-code".to_owned();
    config.titles.order = TitleOrder::Off;
    config
}

/// The blocks of the assistant message that made the call, in the last request upstream.
fn calling_turn(fake: &FakeUpstream) -> Vec<Value> {
    let body = fake.requests().pop().expect("a request").json();
    assistant_turns(&body)
        .into_iter()
        .find(|blocks| blocks.iter().any(|b| b["type"] == "tool_use"))
        .cloned()
        .unwrap_or_else(|| panic!("no calling turn in {body}"))
}

/// The thinking the server signed, its redacted block when it sent one, then the call.
fn as_the_server_sent_it(redacted: bool) -> Vec<Value> {
    let mut blocks =
        vec![json!({"type": "thinking", "thinking": THINKING, "signature": SIGNATURE})];
    if redacted {
        blocks.push(json!({"type": "redacted_thinking", "data": REDACTED}));
    }
    blocks.push(json!({"type": "tool_use", "id": "toolu_7", "name": "Bash",
        "input": {"command": "ls"}}));
    blocks
}

fn chat_body(history: Vec<Value>) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "list the files"})];
    messages.extend(history);
    json!({"model": "claude-sonnet-4-5", "stream": false, "messages": messages,
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}}}]})
}

async fn chat(app: &TestApp, body: &Value) -> Value {
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "claude-code")
        .bearer_auth("sk-memo-caller")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A Chat client's two turns; the second echoes the call and its result, no reasoning.
async fn chat_round_trip(redacted: bool) -> FakeUpstream {
    let fake = upstream(redacted).await;
    let app = TestApp::start(config(&fake)).await;
    let first = chat(&app, &chat_body(vec![])).await;
    let message = &first["choices"][0]["message"];
    let call = message["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "bash", "{first}");
    let text = first.to_string();
    assert!(
        !text.contains(SIGNATURE) && !text.contains(REDACTED),
        "the client sees neither: {text}"
    );
    let echoed = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"});
    let second = chat(&app, &chat_body(vec![echoed, result])).await;
    assert_eq!(second["choices"][0]["message"]["content"], "Done.");
    fake
}

#[tokio::test]
async fn a_chat_client_s_next_turn_gets_the_thinking_back_with_the_server_s_signature() {
    let fake = chat_round_trip(false).await;
    assert_eq!(calling_turn(&fake), as_the_server_sent_it(false));
}

#[tokio::test]
async fn a_chat_client_s_next_turn_gets_the_redacted_thinking_back_in_its_place() {
    let fake = chat_round_trip(true).await;
    assert_eq!(calling_turn(&fake), as_the_server_sent_it(true));
}

/// No credential, so no memo: the seal is all that carries the reasoning back. Codex's
/// `encrypted_content` and Claude Code's thinking `signature` are each an `hpr4.` seal holding
/// the redacted block, never the block or the server's signature in the clear.
#[tokio::test]
async fn a_client_echoing_the_seal_gives_the_redacted_thinking_back() {
    let fake = upstream(true).await;
    let app = TestApp::start(config(&fake)).await;

    let tool = json!([{"type": "function", "name": "exec_command", "parameters": {"type": "object",
        "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]);
    let user = json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "list the files"}]});
    let responses = |input: Vec<Value>| {
        json!({"model": "m", "stream": false, "store": false, "tools": tool,
            "include": ["reasoning.encrypted_content"], "input": input})
    };
    let post = async |path: &str, body: Value| -> Value {
        let response = app.post(path).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    };
    let answer = post("/v1/responses", responses(vec![user.clone()])).await;
    let output = answer["output"].as_array().cloned().unwrap_or_default();
    let reasoning = output.iter().find(|i| i["type"] == "reasoning").unwrap();
    let sealed = reasoning["encrypted_content"].as_str().unwrap_or_default();
    assert!(sealed.starts_with("hpr4."), "{reasoning}");
    assert!(!answer.to_string().contains(REDACTED), "{answer}");
    let call = output
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    let mut input = vec![user];
    input.extend(output.iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": call["call_id"],
        "output": "a.txt"}),
    );
    post("/v1/responses", responses(input)).await;
    assert_eq!(calling_turn(&fake), as_the_server_sent_it(true), "Codex");

    let tools = json!([{"name": "Bash", "description": "Run", "input_schema": {"type": "object",
        "properties": {"command": {"type": "string"}}, "required": ["command"]}}]);
    let question = json!({"role": "user", "content": "list the files"});
    let messages = |history: Vec<Value>| {
        let mut all = vec![question.clone()];
        all.extend(history);
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "messages": all})
    };
    let answer = post("/v1/messages", messages(vec![])).await;
    let content = answer["content"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = content.iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(kinds, ["thinking", "tool_use"], "{answer}");
    assert!(
        content[0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("hpr4.")
    );
    let result = json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": content[1]["id"], "content": "a.txt"}]});
    let echoed = json!({"role": "assistant", "content": content});
    post("/v1/messages", messages(vec![echoed, result])).await;
    assert_eq!(
        calling_turn(&fake),
        as_the_server_sent_it(true),
        "Claude Code"
    );
}
