//! Claude Code on a Messages upstream, as the server sees it: its connection check (one `HEAD`
//! of the base URL with Bun's user agent, before the first request and never again, carrying no
//! key, and never failing a request however it ends), and a sub-agent's request in the child
//! form, told apart by the client's own markers (docs/harnesses.md, "claude-code").

use serde_json::{Value, json};

use harness_proxy::config::{Config, TitleOrder, Wire};

use crate::support::anthropic::{self, root};
use crate::support::fake_upstream::Reply;
use crate::support::{FakeUpstream, TestApp, test_config};

/// `harness` before `fake` on the Messages wire, titles as shipped (claude-code is titled).
fn config(fake: &FakeUpstream, harness: &str) -> Config {
    let mut config = test_config(&root(fake));
    config.upstream.wire = Wire::Messages;
    config.default_harness = harness.to_owned();
    config
}

/// A Messages server that titles Claude Code's title request and answers anything else.
async fn server() -> FakeUpstream {
    FakeUpstream::start(|request, _| {
        if request.json()["output_config"]["format"]["type"] == "json_schema" {
            anthropic::text("{\"title\": \"Greeting\"}")
        } else {
            anthropic::text("Hello.")
        }
    })
    .await
}

/// One Chat Completions turn through the default harness with the client's key: the answer's
/// text.
async fn turn(app: &TestApp, words: &str) -> String {
    let body = json!({"model": "claude-sonnet-4-5", "stream": false,
        "messages": [{"role": "user", "content": words}]});
    let response = app
        .post("/v1/chat/completions")
        .bearer_auth("sk-client")
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("JSON");
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn claude_code_checks_the_server_once_with_bun_s_head_before_its_first_request() {
    let fake = server().await;
    let app = TestApp::start(config(&fake, "claude-code")).await;
    assert_eq!(turn(&app, "hi").await, "Hello.");
    let heads = fake.heads();
    assert_eq!(heads.len(), 1, "one check");
    let head = &heads[0];
    assert_eq!(head.after, 0, "before the title request and the turn");
    assert_eq!(head.request.path, "/");
    assert_eq!(head.request.header("user-agent"), Some("Bun/1.3.14"));
    for credential in ["authorization", "x-api-key"] {
        assert_eq!(head.request.header(credential), None, "{credential}");
    }
    let posts = fake.count();
    assert!(posts >= 1, "the turn went");
    assert_eq!(turn(&app, "hello again").await, "Hello.");
    assert_eq!(fake.heads().len(), 1, "never again");
    assert!(fake.count() > posts, "the second turn went");
}

/// A check that is never answered, or answered with an error, changes nothing of the turn.
#[tokio::test]
async fn a_check_that_hangs_or_fails_does_not_fail_the_request() {
    for reply in [Reply::Hang, Reply::json(500, "")] {
        let fake = server().await;
        fake.answer_heads(reply);
        let mut config = config(&fake, "claude-code");
        config.titles.order = TitleOrder::Off;
        let app = TestApp::start(config).await;
        assert_eq!(turn(&app, "hi").await, "Hello.");
        assert_eq!(fake.heads().len(), 1);
        assert_eq!(fake.count(), 1, "the turn went after the check");
    }
}

/// Only Claude Code checks, and only a Messages server.
#[tokio::test]
async fn zcode_and_claude_code_on_chat_send_no_check() {
    let fake = server().await;
    let app = TestApp::start(config(&fake, "zcode")).await;
    assert_eq!(turn(&app, "hi").await, "Hello.");
    assert!(fake.heads().is_empty(), "zcode");

    let chat = FakeUpstream::fixed(Reply::sse(&[
        &crate::support::sse::text_chunk("Hello."),
        crate::support::sse::DONE,
    ]))
    .await;
    let mut config = test_config(&chat.base_url());
    config.default_harness = "claude-code".to_owned();
    let app = TestApp::start(config).await;
    assert_eq!(turn(&app, "hi").await, "Hello.");
    assert!(chat.heads().is_empty(), "claude-code on Chat");
}

fn claude_tools() -> Value {
    let tool = |name: &str| {
        json!({"name": name, "description": name, "input_schema": {"type": "object",
            "properties": {"command": {"type": "string"}}}})
    };
    json!([tool("Bash"), tool("AskUserQuestion"), tool("TaskOutput")])
}

/// Claude Code's sub-agent (its agent-id header and opening, as `subagents.rs` sends them)
/// reaches the server in the child form; its main thread in the main form.
#[tokio::test]
async fn claude_code_s_sub_agent_goes_up_in_the_child_form() {
    let fake = FakeUpstream::fixed(anthropic::text("Found it.")).await;
    let mut config = config(&fake, "claude-code");
    config.titles.order = TitleOrder::Off;
    let app = TestApp::start(config).await;
    let post = |opening: &str, sub: bool| {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": false,
            "system": [{"type": "text", "text": opening}], "tools": claude_tools(),
            "messages": [{"role": "user", "content": "Find the files"}]});
        let mut request = app
            .post("/v1/messages")
            .header("x-api-key", "sk-claude")
            .header("user-agent", "claude-cli/2.1.332 (external, sdk-cli)");
        if sub {
            request = request.header("x-claude-code-agent-id", "ab6f565526196b3e9");
        }
        request.json(&body).send()
    };
    let main = post(
        "You are Claude Code, Anthropic's official CLI for Claude.",
        false,
    );
    assert_eq!(main.await.expect("main").status(), 200);
    let sub = post(
        "You are an agent for Claude Code, Anthropic's official CLI for Claude.",
        true,
    );
    assert_eq!(sub.await.expect("sub-agent").status(), 200);

    let sent = fake.requests();
    let (main, child) = (sent[0].json(), sent[1].json());
    assert!(main.get("thinking").is_some() && main.get("temperature").is_none());
    assert!(child.get("thinking").is_none() && child.get("context_management").is_none());
    assert_eq!(child["temperature"], 1);
    let prompt = child["system"][2]["text"]
        .as_str()
        .expect("the child prompt");
    assert!(
        prompt.starts_with("You are a sub-agent working for Claude Code"),
        "{prompt}"
    );
    assert!(prompt.contains("<env>\nWorking directory: "), "{prompt}");
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(names(&main).contains(&"AskUserQuestion".to_owned()));
    assert!(
        !names(&child)
            .iter()
            .any(|n| n == "AskUserQuestion" || n == "TaskOutput")
    );
}
