//! The conformance suite: one list of scenarios every front × every harness runs, through the
//! real server against the recording fake upstream (TensorZero's `generate_provider_tests!` is the
//! model; `titles/store/contract.rs` is the same idea for stores).
//!
//! A front is described once (`Front`: its paths, its client's headers and tools, how to read its
//! stream, its JSON answer and its errors, and its own wire for an upstream that speaks it, which
//! `passthrough` talks to) in a file of its own, whose one line `conformance_tests!(…)` makes a
//! test of every scenario for it. Each test runs its scenario for every harness of `HARNESSES`
//! (at once, on one app and one upstream: the client tags its requests `x-conformance: <harness>`,
//! which reaches the upstream), and fails with every combination that failed, by name. A
//! rewriting harness is answered in Chat Completions and its answer read in the front's protocol;
//! `passthrough` is answered in the front's own wire and must forward both ways byte for byte,
//! and whatever the proxy adds (an error) must be in the front's shape.
//!
//! The expected values come from the protocols' documentation (docs/wire.md, the providers' error
//! tables), never from the proxy's output.

mod bench;
mod chat;
mod gemini;
mod messages;
mod messages_wire;
mod responses;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::Notify;

use self::bench::{Bench, Gates, Scope, Wire, each_harness, each_harness_in_turn};
use self::wire::{
    call_and_result, chat_call, chat_text, ends_with_error, events, expect_status, first_event,
    first_said, front_error, header, json_reply, native_text, openai_error, openai_error_message,
    read_rest, read_until, same_bytes,
};
use crate::support::fake_upstream::Step;
use crate::support::sse::DONE;
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// The header that names a request's harness, to the fake upstream too.
const TAG: &str = "x-conformance";

/// What a harness does with a request, as the suite sees it.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Forwards the client's bytes to the upstream in the client's protocol, and its answer back.
    Passthrough,
    /// Rebuilds the request as Chat Completions; `shell` is the call its model makes in the tool
    /// round trip (its own shell tool and arguments), `None` when it offers the client's tools.
    Rewrites {
        shell: Option<(&'static str, &'static str)>,
    },
    /// Rebuilds the request in a text protocol (the model acts in its words, not by function
    /// calls) and reads the answer whole (`routes::actions`): it meets the scenarios whose
    /// outcome does not depend on a streamed answer (errors, bad input: `Scope::All`); its
    /// round trip and its answers are `text_harnesses.rs`'s.
    Text,
}

/// Every harness the registry builds (`registry_names_are_the_matrix` keeps the two equal).
pub const HARNESSES: [(&str, Kind); 16] = [
    ("passthrough", Kind::Passthrough),
    (
        "opencode",
        Kind::Rewrites {
            shell: Some(("bash", r#"{"command":"echo hi","description":"Prints hi"}"#)),
        },
    ),
    ("plain-chat", Kind::Rewrites { shell: None }),
    (
        "pi",
        Kind::Rewrites {
            shell: Some(("bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "qwen-code",
        Kind::Rewrites {
            shell: Some(("run_shell_command", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "kimi-code",
        Kind::Rewrites {
            shell: Some(("Bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "kimi-cli",
        Kind::Rewrites {
            shell: Some(("Shell", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "deepseek-tui",
        Kind::Rewrites {
            shell: Some(("exec_shell", r#"{"command":"echo hi"}"#)),
        },
    ),
    ("minimal", Kind::Rewrites { shell: None }),
    (
        "little-coder",
        Kind::Rewrites {
            shell: Some(("bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "claude-code",
        Kind::Rewrites {
            shell: Some(("Bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "claude-code-bare",
        Kind::Rewrites {
            shell: Some(("Bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    (
        "zcode",
        Kind::Rewrites {
            shell: Some(("Bash", r#"{"command":"echo hi"}"#)),
        },
    ),
    ("mini-swe-agent", Kind::Text),
    ("swe-agent", Kind::Text),
    ("terminus-2", Kind::Text),
];

/// A client protocol as its clients speak it, and as an upstream of its own answers it.
pub trait Front: Sync {
    fn name(&self) -> &'static str;
    /// The route of a turn through `harness`; `stream`: the client asks for a stream.
    fn path(&self, harness: &str, stream: bool) -> String;
    /// Who the client is (its User-Agent and the like) and its credential.
    fn headers(&self) -> Vec<(&'static str, &'static str)>;
    /// The client's shell tool: its name, its call's arguments for `echo hi`.
    fn shell(&self) -> (&'static str, Value);
    /// A turn asking to say hi, offering the client's shell tool; with `answered`, the client's
    /// call of it with these arguments and its result `hi\n`.
    fn request(&self, stream: bool, answered: Option<&Value>) -> Value;
    /// The one call of a JSON answer: (name, arguments).
    fn call(&self, answer: &Value) -> Option<(String, Value)>;
    /// A streamed answer's text, and whether it ended as a finished answer does.
    fn stream_text(&self, body: &str) -> Result<(String, bool), String>;
    /// A JSON answer's text.
    fn json_text(&self, answer: &Value) -> Option<String>;
    /// An error answer's message, if the body is in the front's error shape for `status`.
    fn error_message(&self, status: u16, body: &Value) -> Result<String, String>;
    /// The error a stream ended with, in the front's own terms (`error_kind`), if it ended with
    /// one in the front's shape.
    fn stream_error(&self, body: &str) -> Option<String>;
    /// How the front names the proxy's error `code` met mid-stream.
    fn error_kind(&self, code: &str) -> String;
    /// Whether a request in the front's own wire (what `passthrough` forwards) asks for a stream.
    fn native_streams(&self, request: &Recorded) -> bool;
    /// The answer "Hello world" in the front's own wire, event by event.
    fn native_stream(&self) -> Vec<String>;
    /// The answer "Hello world" as the front's one JSON answer.
    fn native_json(&self) -> String;
    /// One call of `tool` with `args` as the front's one JSON answer.
    fn native_call(&self, tool: &str, args: &Value) -> String;
    /// An error answer in the front's own shape.
    fn native_error(&self, status: u16, message: &str) -> String;
}

/// One test per scenario for `$front`: the scenario list.
macro_rules! conformance_tests {
    ($front:expr) => {
        conformance_tests!(@each $front;
            text_stream,
            json_answer,
            tool_round_trip,
            upstream_errors,
            cut_mid_stream,
            idle_upstream,
            hang_up_cancels_the_upstream,
            oversized_event,
            bad_request,
        );
    };
    (@each $front:expr; $($scenario:ident,)*) => {
        $(
            #[tokio::test]
            async fn $scenario() {
                super::$scenario(&$front).await;
            }
        )*
    };
}
use conformance_tests;

#[tokio::test]
async fn registry_names_are_the_matrix() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[DONE])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut registered: Vec<String> = app
        .state
        .harnesses
        .names()
        .split(", ")
        .map(str::to_owned)
        .collect();
    let mut matrix: Vec<String> = HARNESSES.iter().map(|(h, _)| (*h).to_owned()).collect();
    registered.sort();
    matrix.sort();
    assert_eq!(registered, matrix, "a harness joins the suite in HARNESSES");
}

#[test]
fn the_suite_runs_every_served_front() {
    let described: [&dyn Front; 4] = [
        &chat::Chat,
        &responses::Responses,
        &messages::Messages,
        &gemini::Gemini,
    ];
    let mut described: Vec<String> = described.iter().map(|f| f.name().to_lowercase()).collect();
    let mut served: Vec<String> = harness_proxy::routes::FRONTS
        .iter()
        .map(|f| f.protocol.name().to_owned())
        .collect();
    described.sort();
    served.sort();
    assert_eq!(
        described, served,
        "a front joins the suite with a file of its own here"
    );
}

// ---- the scenarios ----

/// A streamed turn: the text arrives in the front's stream and ends as a finished answer does;
/// `passthrough` forwards the request and the stream byte for byte.
async fn text_stream(front: &'static dyn Front) {
    let bench = Bench::start(
        front,
        |_| {},
        move |_, wire, streams| match wire {
            Wire::Chat => chat_text(streams),
            Wire::Native => native_text(front, streams),
        },
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move {
            let body = front.request(true, None);
            let response = bench.send(harness, true, &body).await?;
            expect_status(&response, 200)?;
            let content_type = header(&response, "content-type");
            if !content_type.starts_with("text/event-stream") {
                return Err(format!("content-type {content_type}"));
            }
            let text = read_rest(response).await?;
            match kind {
                Kind::Passthrough => {
                    bench.forwarded_as_sent(harness, &body)?;
                    same_bytes(&text, &front.native_stream().concat())
                }
                Kind::Rewrites { .. } | Kind::Text => match front.stream_text(&text)? {
                    (said, true) if said == "Hello world" => Ok(()),
                    (said, ended) => Err(format!("text {said:?}, ended {ended}: {text:.600}")),
                },
            }
        }
    })
    .await;
}

/// A turn that does not stream: one JSON answer in the front's shape.
async fn json_answer(front: &'static dyn Front) {
    let bench = Bench::start(
        front,
        |_| {},
        move |_, wire, streams| match wire {
            Wire::Chat => chat_text(streams),
            Wire::Native => native_text(front, streams),
        },
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move {
            let body = front.request(false, None);
            let response = bench.send(harness, false, &body).await?;
            expect_status(&response, 200)?;
            let text = read_rest(response).await?;
            match kind {
                Kind::Passthrough => {
                    bench.forwarded_as_sent(harness, &body)?;
                    same_bytes(&text, &front.native_json())
                }
                Kind::Rewrites { .. } | Kind::Text => {
                    let answer: Value = serde_json::from_str(&text)
                        .map_err(|e| format!("not JSON ({e}): {text:.300}"))?;
                    match front.json_text(&answer) {
                        Some(said) if said == "Hello world" => Ok(()),
                        said => Err(format!("text {said:?} in {answer}")),
                    }
                }
            }
        }
    })
    .await;
}

/// The client offers its shell tool in its own dialect; the model calls the harness's shell tool
/// (or the client's, for a harness that offers the client's tools); the client gets the call in
/// its own tool, and its result reaches the upstream's next request as the harness's call and
/// result. `passthrough` forwards the call and the result as they are.
async fn tool_round_trip(front: &'static dyn Front) {
    let bench = Bench::start(
        front,
        |_| {},
        move |r, wire, streams| {
            // The second turn carries the tool's result, `hi\n`.
            let answered = String::from_utf8_lossy(&r.body).contains("hi\\n");
            let (tool, args) = front.shell();
            match wire {
                Wire::Native if answered => native_text(front, streams),
                Wire::Native => json_reply(200, &front.native_call(tool, &args)),
                Wire::Chat if answered => chat_text(streams),
                Wire::Chat => {
                    let harness = r.header(TAG).unwrap_or_default();
                    let shell =
                        HARNESSES
                            .iter()
                            .find(|(h, _)| *h == harness)
                            .and_then(|(_, kind)| match kind {
                                Kind::Rewrites { shell } => *shell,
                                Kind::Passthrough | Kind::Text => None,
                            });
                    match shell {
                        Some((tool, args)) => chat_call(tool, args, streams),
                        None => chat_call(tool, &args.to_string(), streams),
                    }
                }
            }
        },
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move { round_trip(front, bench, harness, kind).await }
    })
    .await;
}

async fn round_trip(
    front: &dyn Front,
    bench: &Bench,
    harness: &str,
    kind: Kind,
) -> Result<(), String> {
    let (client_tool, client_args) = front.shell();
    let first = front.request(false, None);
    let response = bench.send(harness, false, &first).await?;
    expect_status(&response, 200)?;
    let text = read_rest(response).await?;
    if let Kind::Passthrough = kind {
        same_bytes(&text, &front.native_call(client_tool, &client_args))?;
    }
    let answer: Value =
        serde_json::from_str(&text).map_err(|e| format!("turn 1 not JSON ({e}): {text:.300}"))?;
    let Some((name, args)) = front.call(&answer) else {
        return Err(format!("no call in the client's answer: {answer}"));
    };
    // The client's own tool may take more than the command (opencode's `bash` a description).
    let commanded = client_args.as_object().is_some_and(|wanted| {
        wanted
            .iter()
            .all(|(key, value)| args.get(key) == Some(value))
    });
    if name != client_tool || !commanded {
        return Err(format!(
            "the client got {name} {args}, not its {client_tool} {client_args}"
        ));
    }
    let second = front.request(false, Some(&args));
    let response = bench.send(harness, false, &second).await?;
    expect_status(&response, 200)?;
    let text = read_rest(response).await?;
    let shell = match kind {
        Kind::Passthrough => {
            bench.forwarded_as_sent(harness, &second)?;
            return same_bytes(&text, &front.native_json());
        }
        Kind::Rewrites { shell } => shell,
        Kind::Text => return Err("a text harness's round trip is text_harnesses.rs's".to_owned()),
    };
    let sent = bench.sent(harness);
    let [turn_one, turn_two] = sent.as_slice() else {
        return Err(format!("{} requests upstream", sent.len()));
    };
    let offered: Vec<String> = turn_one.json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    let harness_tool = shell.map_or(client_tool, |(tool, _)| tool);
    if !offered.iter().any(|t| t == harness_tool) {
        return Err(format!(
            "the upstream was not offered {harness_tool}: {offered:?}"
        ));
    }
    let (name, arguments, result) = call_and_result(turn_two);
    let arguments: Value = arguments
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_default();
    let command = arguments.get("command").or_else(|| arguments.get("cmd"));
    if name.as_deref() != Some(harness_tool)
        || command != Some(&json!("echo hi"))
        || !result.contains("hi")
    {
        return Err(format!(
            "turn 2 upstream: call {name:?} {arguments}, result {result}"
        ));
    }
    let answer: Value =
        serde_json::from_str(&text).map_err(|e| format!("turn 2 not JSON ({e}): {text:.300}"))?;
    match front.json_text(&answer) {
        Some(said) if said == "Hello world" => Ok(()),
        said => Err(format!("turn 2 text {said:?} in {answer}")),
    }
}

/// The upstream's 400, 500 and 429 (with `Retry-After`) reach the client with their status and
/// `Retry-After`: reshaped into the front's error shape with the upstream's message, or (through
/// `passthrough`, the upstream speaking the front's protocol) as they came.
async fn upstream_errors(front: &'static dyn Front) {
    for (status, retry_after) in [(400, None), (500, None), (429, Some("7"))] {
        let bench = Bench::start(
            front,
            |_| {},
            move |_, wire, _| {
                let body = match wire {
                    Wire::Chat => openai_error(status, "upstream says no"),
                    Wire::Native => front.native_error(status, "upstream says no"),
                };
                let headers = retry_after
                    .map(|after| vec![("retry-after", after.to_owned())])
                    .unwrap_or_default();
                Reply::Full {
                    status,
                    content_type: "application/json",
                    body: body.into_bytes(),
                    headers,
                }
            },
        )
        .await;
        each_harness(front, Scope::All, |harness, kind| {
            let bench = &bench;
            async move {
                let response = bench.send(harness, true, &front.request(true, None)).await;
                let response = response.map_err(|e| format!("{status}: {e}"))?;
                expect_status(&response, status)?;
                if let Some(after) = retry_after
                    && header(&response, "retry-after") != after
                {
                    return Err(format!("{status}: Retry-After {:?}", response.headers()));
                }
                let text = read_rest(response).await?;
                if let Kind::Passthrough = kind {
                    return same_bytes(&text, &front.native_error(status, "upstream says no"));
                }
                let body: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("{status}: not JSON ({e}): {text:.300}"))?;
                match front.error_message(status, &body) {
                    Ok(message) if message == "upstream says no" => Ok(()),
                    Ok(message) => Err(format!("{status}: message {message:?}")),
                    Err(why) => Err(format!("{status}: {why}")),
                }
            }
        })
        .await;
    }
}

/// The upstream's stream breaks off after its first event: the client gets what came, then one
/// error in the front's shape, and no end of a finished answer.
async fn cut_mid_stream(front: &'static dyn Front) {
    let gates = Gates::new();
    let held = gates.clone();
    let bench = Bench::start(
        front,
        |_| {},
        move |r, wire, _| {
            Reply::steps(vec![
                first_event(front, wire),
                Step::Wait(held.of(r.header(TAG).unwrap_or_default())),
                Step::Cut,
            ])
        },
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let (bench, gates) = (&bench, &gates);
        async move {
            let mut response = bench
                .send(harness, true, &front.request(true, None))
                .await?;
            expect_status(&response, 200)?;
            let mut text = read_until(&mut response, &first_said(front, kind)).await?;
            gates.of(harness).notify_one();
            text.push_str(&read_rest(response).await?);
            ends_with_error(front, kind, &text, "upstream_interrupted")
        }
    })
    .await;
}

/// The upstream stops sending mid-stream: past `upstream.idle_timeout` the client gets one error
/// in the front's shape.
async fn idle_upstream(front: &'static dyn Front) {
    let silence = Arc::new(Notify::new());
    let bench = Bench::start(
        front,
        |config| config.upstream.idle_timeout = Duration::from_millis(200),
        move |_, wire, _| Reply::steps(vec![first_event(front, wire), Step::Wait(silence.clone())]),
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move {
            let response = bench
                .send(harness, true, &front.request(true, None))
                .await?;
            expect_status(&response, 200)?;
            let text = read_rest(response).await?;
            ends_with_error(front, kind, &text, "upstream_timeout")
        }
    })
    .await;
}

/// The client hangs up mid-stream: the proxy drops its upstream request.
async fn hang_up_cancels_the_upstream(front: &'static dyn Front) {
    let silence = Arc::new(Notify::new());
    let bench = Bench::start(
        front,
        |_| {},
        move |_, wire, _| Reply::steps(vec![first_event(front, wire), Step::Wait(silence.clone())]),
    )
    .await;
    // One at a time: the upstream's report of a dropped answer does not say whose it was.
    each_harness_in_turn(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move {
            let mut response = bench
                .send(harness, true, &front.request(true, None))
                .await?;
            expect_status(&response, 200)?;
            read_until(&mut response, &first_said(front, kind)).await?;
            drop(response);
            match bench.upstream.wait_for_drop(Duration::from_secs(5)).await {
                Some(_) => Ok(()),
                None => Err("the upstream request outlived the client's hang-up".to_owned()),
            }
        }
    })
    .await;
}

/// One upstream event longer than `limits.max_sse_event_bytes`: none of it reaches the client,
/// which gets one error in the front's shape; the upstream request is dropped.
async fn oversized_event(front: &'static dyn Front) {
    let silence = Arc::new(Notify::new());
    let bench = Bench::start(
        front,
        |config| config.limits.max_sse_event_bytes = 2048,
        move |_, wire, _| {
            let mut line = b"data: {\"text\": \"".to_vec();
            line.extend_from_slice(&[b'x'; 8192]);
            Reply::steps(vec![
                first_event(front, wire),
                Step::Send(line),
                Step::Wait(silence.clone()),
            ])
        },
    )
    .await;
    each_harness(front, Scope::Streams, |harness, kind| {
        let bench = &bench;
        async move {
            let response = bench
                .send(harness, true, &front.request(true, None))
                .await?;
            expect_status(&response, 200)?;
            let text = read_rest(response).await?;
            if text.contains("xxxx") {
                return Err(format!(
                    "part of the oversized event reached the client: {text:.300}"
                ));
            }
            ends_with_error(front, kind, &text, "upstream_event_too_large")
        }
    })
    .await;
    for _ in HARNESSES
        .iter()
        .filter(|(_, kind)| Scope::Streams.meets(*kind))
    {
        assert!(
            bench
                .upstream
                .wait_for_drop(Duration::from_secs(5))
                .await
                .is_some(),
            "{}: every oversized answer's upstream request is dropped",
            front.name()
        );
    }
}

/// A body that is not JSON: a rewriting harness refuses it (400) in the front's shape and sends
/// nothing upstream, `passthrough` forwards it as it is for the upstream to judge. A body over
/// `limits.max_body_bytes`: 413 in the front's shape, through every harness.
async fn bad_request(front: &'static dyn Front) {
    let bench = Bench::start(
        front,
        |config| config.limits.max_body_bytes = 16 * 1024,
        move |_, wire, _| match wire {
            Wire::Chat => json_reply(400, &openai_error(400, "not JSON")),
            Wire::Native => json_reply(400, &front.native_error(400, "not JSON")),
        },
    )
    .await;
    each_harness(front, Scope::All, |harness, kind| {
        let bench = &bench;
        async move {
            let broken = Bytes::from_static(b"{\"model\": \"m\", \"messages\": [");
            let response = bench.send_bytes(harness, true, broken.clone()).await?;
            let status = response.status().as_u16();
            let text = read_rest(response).await?;
            match kind {
                Kind::Passthrough => {
                    let sent = bench.sent(harness);
                    if sent.len() != 1 || sent[0].body != broken {
                        return Err(format!("not forwarded as it was: {} requests", sent.len()));
                    }
                    if status != 400 {
                        return Err(format!("the upstream's 400 came back as {status}"));
                    }
                    same_bytes(&text, &front.native_error(400, "not JSON"))?;
                }
                Kind::Rewrites { .. } | Kind::Text => {
                    if !bench.sent(harness).is_empty() {
                        return Err("a body that is not JSON went upstream".to_owned());
                    }
                    front_error(front, 400, status, &text)?;
                }
            }
            let mut big = front.request(true, None);
            big["padding"] = json!("x".repeat(32 * 1024));
            let response = bench.send(harness, true, &big).await?;
            let status = response.status().as_u16();
            front_error(front, 413, status, &read_rest(response).await?)
        }
    })
    .await;
}
