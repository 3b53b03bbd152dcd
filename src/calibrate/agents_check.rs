//! The proof of `calibrate pi`, `qwen-code` and `mini-swe-agent`: the captured main request,
//! rewritten through the agent's harness with the written prompts, must carry the system text,
//! Qwen Code's setup turn and reply, and the tools the agent sent (Claude Code's own proof is
//! `claude_code_check`).

use std::path::Path;

use serde_json::Value;

use super::agents::{
    Agent, MINI_INFO_CLOSE, MINI_INFO_OPEN, MINI_TASK, PI_CWD, PI_DATE, QWEN_CWD, QWEN_DATE,
    QWEN_DATE_END, hole_between, text_of,
};
use super::extract::Capture;
use crate::config::Config;
use crate::harness::opencode::tools::HostInfo;
use crate::harness::{HarnessRequest, Registry, Setup};

/// Rewrites the captured request with the prompts under `dir` through the agent's harness, the
/// agent itself as the client, and says where the system text, Qwen Code's setup turn and reply,
/// or the tools differ from what the agent sent (nothing: the harness speaks as this agent does;
/// Qwen Code's folder listing is not compared, the proxy never lists the client's disk).
pub fn check(agent: Agent, dir: &Path, captures: &[Capture], host: HostInfo) -> Vec<String> {
    if agent == Agent::ClaudeCode {
        return super::claude_code::check(dir, captures, host);
    }
    let Some(main) = agent.main(captures) else {
        return vec!["no main request to check".to_owned()];
    };
    let harness = match build_harness(agent.harness(), dir, host, &Config::default()) {
        Ok(harness) => harness,
        Err(err) => return vec![err],
    };
    let mut client_request = main.clone();
    if agent == Agent::MiniSweAgent {
        // Its first turn is already its template around the task: the harness is given the
        // task alone, as any other client would send it.
        client_request["messages"][1]["content"] = Value::from(MINI_TASK);
    }
    let body = match serde_json::to_vec(&client_request) {
        Ok(body) => bytes::Bytes::from(body),
        Err(err) => {
            return vec![format!(
                "the captured request cannot be written again: {err}"
            )];
        }
    };
    let Ok(conversation) = crate::protocols::chat::request::parse_conversation(&body) else {
        return vec!["the captured request does not parse".to_owned()];
    };
    let (headers, now) = run_values(agent, main);
    let Ok(prepared) = harness.prepare(HarnessRequest {
        conversation,
        chat_body: Some(&body),
        headers: &headers,
        now,
    }) else {
        return vec!["the harness refused the captured request".to_owned()];
    };
    let rewritten: Value =
        serde_json::from_slice(&prepared.upstream_body.to_bytes()).unwrap_or_default();
    let mut differences = Vec::new();
    let upto = match agent {
        Agent::Pi => 1,
        Agent::MiniSweAgent => 2,
        Agent::QwenCode => 3,
        Agent::ClaudeCode => 0,
    };
    for n in 0..upto {
        let (mut sent, mut made) = (
            text_of(&main["messages"][n]),
            text_of(&rewritten["messages"][n]),
        );
        if agent == Agent::QwenCode && n == 1 {
            // The listing under the working directory's line is the client's disk, which the
            // proxy never reads: only what comes before it is compared.
            for text in [&mut sent, &mut made] {
                if let Some(cwd) = line_after(text, QWEN_CWD)
                    && let Some(at) = text.find(&format!("\n{cwd}/"))
                {
                    text.truncate(at);
                }
            }
        }
        if agent == Agent::MiniSweAgent && n == 1 {
            // `uname -srvm` of the agent's machine against `uname -s` of the client's platform:
            // the kernel version and machine are not in a request.
            for text in [&mut sent, &mut made] {
                *text = hole_between(
                    text,
                    MINI_INFO_OPEN,
                    MINI_INFO_CLOSE,
                    "system_information",
                    &mut Vec::new(),
                );
            }
        }
        if sent != made {
            differences.push(format!(
                "message {n} ({}) differs",
                main["messages"][n]["role"]
            ));
        }
    }
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    if names(&rewritten) != names(main) {
        differences.push(format!(
            "tools: the harness offered {:?}",
            names(&rewritten)
        ));
    }
    differences
}

/// The harness `name` as the proxy builds it from `config` and the prompts under `dir`; what
/// went wrong, said, when it does not build.
pub(super) fn build_harness(
    name: &str,
    dir: &Path,
    host: HostInfo,
    config: &Config,
) -> Result<std::sync::Arc<dyn crate::harness::Harness>, String> {
    let prompts = crate::prompts::Prompts::load(Some(dir))
        .map_err(|err| format!("the written prompts do not load: {err}"))?;
    let profiles = crate::clients::profiles::Profiles::load(&[])
        .map_err(|err| format!("the harness does not build: {err}"))?;
    let registry = Registry::build(&Setup {
        config,
        prompts: &prompts,
        host,
        profiles,
    })
    .map_err(|err| format!("the harness does not build: {err}"))?;
    registry
        .get(name)
        .cloned()
        .ok_or_else(|| format!("no harness {name}"))
}

/// The run's own values, as the proxy's headers give them: its working directory and day.
fn run_values(agent: Agent, main: &Value) -> (http::HeaderMap, chrono::DateTime<chrono::Utc>) {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-harness-client",
        http::HeaderValue::from_static(agent.harness()),
    );
    let (cwd, date) = match agent {
        Agent::Pi => {
            let system = text_of(&main["messages"][0]);
            (
                line_after(&system, PI_CWD),
                line_after(&system, PI_DATE)
                    .and_then(|d| chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()),
            )
        }
        Agent::QwenCode => {
            let setup = text_of(&main["messages"][1]);
            let date = setup.find(QWEN_DATE).and_then(|at| {
                let rest = &setup[at + QWEN_DATE.len()..];
                let end = rest.find(QWEN_DATE_END).unwrap_or(rest.len());
                chrono::NaiveDate::parse_from_str(&rest[..end], "%A, %B %-d, %Y").ok()
            });
            (line_after(&setup, QWEN_CWD), date)
        }
        Agent::MiniSweAgent | Agent::ClaudeCode => {
            // Its request names no directory and no day; its platform is the system line's
            // first word, which the harness turns back into that word.
            let first = text_of(&main["messages"][1]);
            let platform = line_after(&first, MINI_INFO_OPEN)
                .and_then(|line| line.split_whitespace().next().map(str::to_lowercase));
            if let Some(value) = platform.and_then(|p| http::HeaderValue::from_str(&p).ok()) {
                headers.insert("x-harness-platform", value);
            }
            (None, None)
        }
    };
    if let Some(value) = cwd.and_then(|c| http::HeaderValue::from_str(&c).ok()) {
        headers.insert("x-harness-cwd", value);
    }
    if let Some(value) =
        date.and_then(|d| http::HeaderValue::from_str(&d.format("%a %b %-d %Y").to_string()).ok())
    {
        headers.insert("x-harness-date", value);
    }
    let now = date
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .map_or_else(chrono::Utc::now, |t| t.and_utc());
    (headers, now)
}

fn line_after(text: &str, label: &str) -> Option<String> {
    let at = text.find(label)? + label.len();
    Some(text[at..].lines().next().unwrap_or_default().to_owned())
}
