//! The tool round trip on a Messages upstream (`upstream.wire = "messages"`): every front ×
//! every harness with a Messages form, against the recording fake Anthropic server. The model
//! thinks (with a signature), calls `Bash {"command":"echo hi"}` in partial JSON, and answers
//! `Done.` once the result is back; each client must get its own shell call, then the text, and
//! the upstream must get Anthropic's form both turns (`tool_use`, then the `tool_result`).

use harness_proxy::config::{TitleOrder, Wire};
use serde_json::{Value, json};

use super::{Front, chat, gemini, messages, responses};
use crate::support::anthropic::{self, root};
use crate::support::{FakeUpstream, Recorded, TestApp, test_config};

const FRONTS: [&dyn Front; 4] = [
    &chat::Chat,
    &responses::Responses,
    &messages::Messages,
    &gemini::Gemini,
];

/// The harnesses with a Messages form.
const SPEAKERS: [&str; 3] = ["claude-code", "claude-code-bare", "zcode"];

async fn send(app: &TestApp, front: &dyn Front, harness: &str, body: &Value) -> Value {
    let mut request = app.post(&front.path(harness, false)).json(body);
    for (name, value) in front.headers() {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("sent");
    let status = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(status, 200, "{} × {harness}: {text:.400}", front.name());
    serde_json::from_str(&text).expect("a JSON answer")
}

/// One front × one harness: the client's call, then the text; what went upstream.
async fn round_trip(app: &TestApp, front: &dyn Front, harness: &str) -> Result<(), String> {
    let (tool, args) = front.shell();
    let answer = send(app, front, harness, &front.request(false, None)).await;
    let (name, got) = front.call(&answer).ok_or(format!("no call in {answer}"))?;
    let commanded = args
        .as_object()
        .is_some_and(|want| want.iter().all(|(k, v)| got.get(k) == Some(v)));
    if name != tool || !commanded {
        return Err(format!("got {name} {got}, not {tool} {args}"));
    }
    let answer = send(app, front, harness, &front.request(false, Some(&got))).await;
    match front.json_text(&answer) {
        Some(text) if text.contains("Done.") => Ok(()),
        other => Err(format!("turn 2 said {other:?}: {answer}")),
    }
}

fn upstream_turns(fake: &FakeUpstream) -> Vec<Recorded> {
    fake.requests()
}

fn check_upstream(turns: &[Recorded]) -> Result<(), String> {
    let [one, two] = turns else {
        return Err(format!("{} requests upstream", turns.len()));
    };
    for turn in turns {
        if !turn.path.starts_with("/v1/messages") {
            return Err(format!("sent to {}", turn.path));
        }
    }
    let body = one.json();
    let bash = body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "Bash"))
        .ok_or("Bash not offered")?;
    if !bash["input_schema"].is_object() || body["system"].as_array().map(Vec::len) != Some(3) {
        return Err(format!("not Anthropic's form: {body:.600}"));
    }
    let body = two.json();
    let messages = body["messages"].as_array().ok_or("no messages")?;
    let blocks: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .collect();
    let used = blocks.iter().any(|b| {
        b["type"] == "tool_use" && b["name"] == "Bash" && b["input"]["command"] == "echo hi"
    });
    let result = blocks.iter().find(|b| b["type"] == "tool_result");
    match result {
        Some(r) if used && r["content"].as_str().is_some_and(|c| c.contains("hi")) => Ok(()),
        _ => Err(format!("turn 2 lacks the call or its result: {body:.800}")),
    }
}

#[tokio::test]
async fn every_front_completes_a_tool_round_trip_on_a_messages_upstream() {
    let mut failures = Vec::new();
    for front in FRONTS {
        for harness in SPEAKERS {
            // One server each: the turns it records are this pair's.
            let fake = FakeUpstream::start(|request, _| {
                if anthropic::answers_a_tool(request) {
                    anthropic::text("Done.")
                } else {
                    anthropic::thinking_then_tool(
                        "toolu_01",
                        "Bash",
                        &json!({"command": "echo hi"}),
                    )
                }
            })
            .await;
            let mut config = test_config(&root(&fake));
            config.upstream.wire = Wire::Messages;
            config.default_harness = harness.to_owned();
            config.titles.order = TitleOrder::Off;
            let app = TestApp::start(config).await;
            let outcome = match round_trip(&app, front, harness).await {
                Ok(()) => check_upstream(&upstream_turns(&fake)),
                Err(err) => Err(err),
            };
            if let Err(err) = outcome {
                failures.push(format!("{} × {harness}: {err}", front.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
