//! Prompt-cache accounting through every front (issue 19, items 2 and 4), against a fake upstream
//! that enforces DeepSeek's thinking rule and counts the prefix each request shares with its
//! conversation's previous one as cached (`support::caching_upstream`). Each front goes through
//! a two-tool-turn conversation as its client echoes it: every turn passes the thinking rule, the
//! second and third turns report the upstream's cached tokens in the client protocol's own usage
//! field, and the upstream body carries `prompt_cache_key` as `opencode.prompt_cache_key` says.

use serde_json::{Value, json};

use crate::support::caching_upstream::{CacheWords, REASONING_TOKENS, cached_units, prompt_units};
use crate::support::sse::{data_lines, read_all};
use crate::support::{FakeUpstream, TestApp, test_config};

async fn app(upstream: &FakeUpstream, key: harness_proxy::config::PromptCacheKey) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.opencode.prompt_cache_key = key;
    TestApp::start(config).await
}

const ON: harness_proxy::config::PromptCacheKey =
    harness_proxy::config::PromptCacheKey::Conversation;

async fn post(app: &TestApp, path: &str, headers: &[(&str, &str)], body: &Value) -> String {
    let mut request = app.post(path).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = read_all(response).await;
    // The thinking rule held: DeepSeek's 400 would come back as it is.
    assert_eq!(status, 200, "{path}: {text}");
    text
}

/// The three main requests the upstream saw, and the cached tokens it reported for each.
fn upstream_turns(upstream: &FakeUpstream) -> (Vec<Value>, Vec<u64>) {
    let bodies: Vec<Value> = upstream.main_requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 3, "three turns upstream");
    let mut cached = vec![0];
    cached.extend(bodies.windows(2).map(|w| cached_units(&w[0], &w[1])));
    assert_eq!(cached[0], 0);
    assert!(cached[1] > 0 && cached[2] > cached[1], "{cached:?}");
    (bodies, cached)
}

fn cache_keys(bodies: &[Value]) -> Vec<Option<String>> {
    bodies
        .iter()
        .map(|b| b["prompt_cache_key"].as_str().map(str::to_owned))
        .collect()
}

/// A derived key, the same on every turn, saying nothing of the session id.
fn assert_one_derived_key(bodies: &[Value], session: &str) -> String {
    let keys = cache_keys(bodies);
    let first = keys[0].clone().expect("a prompt_cache_key");
    assert!(
        first.starts_with("hpck_") && !first.contains(session),
        "{first}"
    );
    assert!(
        keys.iter().all(|k| k.as_deref() == Some(&first)),
        "{keys:?}"
    );
    // Last in the body, after the fields the reference sends.
    let raw = bodies[0].to_string();
    assert!(
        raw.ends_with(&format!(",\"prompt_cache_key\":\"{first}\"}}")),
        "{raw}"
    );
    first
}

const OPENCODE: [(&str, &str); 3] = [
    ("authorization", "Bearer sk-opencode"),
    (
        "user-agent",
        "opencode/1.18.33 ai-sdk/provider-utils/3.0.20 runtime/bun/1.3.5",
    ),
    ("x-session-id", "ses_cache_1"),
];

/// opencode's three turns over Chat Completions, echoing each message whole (reasoning
/// included); the last turn streamed with usage when `stream_last`. Each turn's usage.
async fn chat_conversation(
    app: &TestApp,
    headers: &[(&str, &str)],
    stream_last: bool,
) -> Vec<Value> {
    let tools = json!([{"type": "function", "function": {"name": "bash", "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}}}]);
    let mut messages = vec![json!({"role": "user", "content": "list both directories"})];
    let mut usages = Vec::new();
    for turn in 0..3 {
        let stream = stream_last && turn == 2;
        let mut body =
            json!({"model": "deepseek-v4", "stream": stream, "messages": messages, "tools": tools});
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        let text = post(app, "/v1/chat/completions", headers, &body).await;
        if stream {
            let usage = data_lines(&text)
                .iter()
                .filter(|d| d.as_str() != "[DONE]")
                .map(|d| serde_json::from_str::<Value>(d).unwrap())
                .find_map(|c| c.get("usage").filter(|u| u.is_object()).cloned())
                .expect("a usage chunk");
            usages.push(usage);
            break;
        }
        let answer: Value = serde_json::from_str(&text).unwrap();
        usages.push(answer["usage"].clone());
        let message = answer["choices"][0]["message"].clone();
        messages.push(message.clone());
        if let Some(call) = message["tool_calls"].get(0) {
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"}));
        }
    }
    usages
}

#[tokio::test]
async fn a_chat_client_reads_the_cached_tokens_of_each_later_turn() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let app = app(&upstream, ON).await;
    let usages = chat_conversation(&app, &OPENCODE, false).await;
    let (bodies, cached) = upstream_turns(&upstream);
    for (usage, cached) in usages.iter().zip(&cached) {
        assert_eq!(
            usage["prompt_tokens_details"]["cached_tokens"], *cached,
            "{usage}"
        );
        assert_eq!(
            usage["completion_tokens_details"]["reasoning_tokens"],
            REASONING_TOKENS
        );
    }
    assert_one_derived_key(&bodies, "ses_cache_1");
}

/// DeepSeek says its cache hits as `prompt_cache_hit_tokens`; a Chat client reads them in
/// OpenAI's words too, folded or streamed.
#[tokio::test]
async fn deepseek_s_cache_hits_reach_a_chat_client_as_prompt_tokens_details() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::DeepSeek).await;
    let app = app(&upstream, ON).await;
    let usages = chat_conversation(&app, &OPENCODE, true).await;
    let (_, cached) = upstream_turns(&upstream);
    for (usage, cached) in usages.iter().zip(&cached) {
        assert_eq!(
            usage["prompt_tokens_details"]["cached_tokens"], *cached,
            "{usage}"
        );
        assert_eq!(
            usage["prompt_cache_hit_tokens"], *cached,
            "its own words stay: {usage}"
        );
    }
}

#[tokio::test]
async fn with_prompt_cache_key_off_the_body_is_the_reference_s() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let app = app(&upstream, harness_proxy::config::PromptCacheKey::Off).await;
    chat_conversation(&app, &OPENCODE, false).await;
    let (bodies, _) = upstream_turns(&upstream);
    assert_eq!(cache_keys(&bodies), [None, None, None]);
}

/// Two callers naming the same session never share a key, and a client that names no
/// conversation gets none (its conversation is still cached: it is found by its first exchange).
#[tokio::test]
async fn a_derived_key_is_the_caller_s_own_and_an_id_less_client_gets_none() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let app = app(&upstream, ON).await;
    let mut other = OPENCODE;
    other[0] = ("authorization", "Bearer sk-someone-else");
    let mut keys = Vec::new();
    for headers in [OPENCODE, other] {
        chat_conversation(&app, &headers, false).await;
        let bodies: Vec<Value> = upstream.main_requests().iter().map(|r| r.json()).collect();
        keys.push(bodies.last().unwrap()["prompt_cache_key"].clone());
    }
    assert!(keys[0].is_string() && keys[0] != keys[1], "{keys:?}");

    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let id_less = self::app(&upstream, ON).await;
    chat_conversation(&id_less, &OPENCODE[..2], false).await;
    let (bodies, _) = upstream_turns(&upstream);
    assert_eq!(cache_keys(&bodies), [None, None, None]);
}

/// Claude Code: Anthropic's `input_tokens` is the uncached part, `cache_read_input_tokens` the
/// cached one; its session (header or `metadata.user_id`) keys the cache.
#[tokio::test]
async fn claude_code_reads_cache_read_input_tokens_and_the_uncached_rest() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::DeepSeek).await;
    let app = app(&upstream, ON).await;
    let headers = [
        ("x-api-key", "sk-claude"),
        ("x-app", "cli"),
        ("user-agent", "claude-cli/2.1.332 (external, cli)"),
        ("x-claude-code-session-id", "3f1c2a9e-cache"),
    ];
    let tools = json!([{"name": "Bash", "description": "Executes a bash command", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]);
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "list both directories"}]}),
    ];
    let mut usages = Vec::new();
    for _ in 0..3 {
        let body = json!({"model": "deepseek-v4", "max_tokens": 32000, "stream": false,
            "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
            "messages": messages, "tools": tools, "thinking": {"type": "adaptive", "display": "omitted"}});
        let answer: Value =
            serde_json::from_str(&post(&app, "/v1/messages", &headers, &body).await).unwrap();
        usages.push(answer["usage"].clone());
        // Claude Code keeps the thinking block without its text, and the call.
        let content: Vec<Value> = answer["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("thinking") => {
                    json!({"type": "thinking", "thinking": "", "signature": b["signature"]})
                }
                _ => b.clone(),
            })
            .collect();
        let results: Vec<Value> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| json!({"type": "tool_result", "tool_use_id": b["id"], "content": "a.txt"}))
            .collect();
        messages.push(json!({"role": "assistant", "content": content}));
        if !results.is_empty() {
            messages.push(json!({"role": "user", "content": results}));
        }
    }
    let (bodies, cached) = upstream_turns(&upstream);
    for ((usage, cached), body) in usages.iter().zip(&cached).zip(&bodies) {
        assert_eq!(usage["cache_read_input_tokens"], *cached, "{usage}");
        assert_eq!(
            usage["input_tokens"],
            prompt_units(body) - cached,
            "{usage}"
        );
    }
    assert_one_derived_key(&bodies, "3f1c2a9e-cache");
}

/// Codex: its own `prompt_cache_key` goes upstream scoped by its caller; `input_tokens_details` and
/// `output_tokens_details` carry the cached and reasoning tokens.
#[tokio::test]
async fn codex_s_own_key_goes_upstream_and_it_reads_cached_and_reasoning_tokens() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let app = app(&upstream, ON).await;
    let headers = [
        ("authorization", "Bearer sk-codex"),
        ("user-agent", "codex_exec/0.171.0 (Debian 12; x86_64) xterm"),
        ("session_id", "019a0000-cache"),
    ];
    let tools = json!([{"type": "function", "name": "exec_command", "strict": false,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"], "additionalProperties": false}}]);
    let mut input = vec![json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "list both directories"}]})];
    let mut usages = Vec::new();
    for _ in 0..3 {
        let body = json!({"model": "deepseek-v4", "stream": false, "instructions": "You are Codex.",
            "input": input, "tools": tools, "store": false, "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"], "prompt_cache_key": "019a0000-cache"});
        let answer: Value =
            serde_json::from_str(&post(&app, "/v1/responses", &headers, &body).await).unwrap();
        usages.push(answer["usage"].clone());
        for item in answer["output"].as_array().unwrap() {
            input.push(item.clone());
            if item["type"] == "function_call" {
                input.push(json!({"type": "function_call_output", "call_id": item["call_id"], "output": "a.txt"}));
            }
        }
    }
    let (bodies, cached) = upstream_turns(&upstream);
    for (usage, cached) in usages.iter().zip(&cached) {
        assert_eq!(
            usage["input_tokens_details"]["cached_tokens"], *cached,
            "{usage}"
        );
        assert_eq!(
            usage["output_tokens_details"]["reasoning_tokens"],
            REASONING_TOKENS
        );
    }
    // Its own key, scoped by its caller: the same on every turn, never the key as sent.
    assert_one_derived_key(&bodies, "019a0000-cache");
}

/// Issue 30 item 6: a key the client names in its body is scoped by its caller, so a caller
/// echoing another's key (or another's derived key) does not land on its cache.
#[tokio::test]
async fn two_callers_naming_the_same_own_key_get_two_upstream_keys() {
    let upstream = FakeUpstream::fixed(crate::support::Reply::sse(&[
        &crate::support::sse::text_chunk("hi"),
        &crate::support::sse::finish_chunk("stop"),
        crate::support::sse::DONE,
    ]))
    .await;
    let app = app_plain(&upstream).await;
    let body = json!({"model": "m", "stream": false, "input": "hello",
        "prompt_cache_key": "shared-key"});
    for key in ["Bearer sk-a", "Bearer sk-b", "Bearer sk-a"] {
        post(&app, "/v1/responses", &[("authorization", key)], &body).await;
    }
    let keys = cache_keys(
        &upstream
            .main_requests()
            .iter()
            .map(|r| r.json())
            .collect::<Vec<_>>(),
    );
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().flatten().all(|k| k != "shared-key"), "{keys:?}");
    assert_ne!(keys[0], keys[1], "two callers, two keys");
    assert_eq!(keys[0], keys[2], "one caller, one key");
}

async fn app_plain(upstream: &FakeUpstream) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.opencode.prompt_cache_key = ON;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    TestApp::start(config).await
}

/// Gemini CLI: no conversation id, so no key; its conversation is found by its first exchange,
/// its calls' reasoning comes back from the memo, and `usageMetadata` carries the cached and
/// thought tokens.
#[tokio::test]
async fn gemini_cli_reads_cached_content_and_thought_tokens() {
    let upstream = FakeUpstream::deepseek_caching(CacheWords::OpenAi).await;
    let app = app(&upstream, ON).await;
    let headers = [
        ("x-goog-api-key", "AIza-gemini-cache"),
        (
            "user-agent",
            "GeminiCLI/0.61.0/deepseek-v4 (linux; x64) google-api-nodejs-client/10.5.0",
        ),
    ];
    let path = "/v1beta/models/deepseek-v4:streamGenerateContent?alt=sse";
    let tools = json!([{"functionDeclarations": [{"name": "run_shell_command",
        "description": "Executes a given shell command.", "parametersJsonSchema": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}]}]);
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "list both directories"}]})];
    let mut usages = Vec::new();
    for _ in 0..3 {
        let body = json!({"contents": contents, "tools": tools,
            "systemInstruction": {"parts": [{"text": "You are Gemini CLI, an interactive CLI agent."}]},
            "generationConfig": {"thinkingConfig": {"includeThoughts": true}}});
        let text = post(&app, path, &headers, &body).await;
        let events: Vec<Value> = data_lines(&text)
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        usages.push(events.last().unwrap()["usageMetadata"].clone());
        // The CLI keeps the model's parts but its thoughts, and answers each call.
        crate::support::gemini_cli::echo_answer(&events, &mut contents, "a.txt");
    }
    let (bodies, cached) = upstream_turns(&upstream);
    for (usage, cached) in usages.iter().zip(&cached) {
        assert_eq!(usage["cachedContentTokenCount"], *cached, "{usage}");
        assert_eq!(usage["thoughtsTokenCount"], REASONING_TOKENS, "{usage}");
    }
    assert_eq!(cache_keys(&bodies), [None, None, None]);
}
