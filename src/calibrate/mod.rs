//! `harness-proxy calibrate opencode --out DIR`: a capture endpoint that looks like a Chat
//! Completions upstream to a real opencode, answers each request with a short canned stream so
//! its run completes, and turns what it sent into prompt files for `--prompts-dir` (`extract`),
//! then says how they differ from the built-in prompts (`report`) and whether the `opencode`
//! harness now rewrites a request exactly as that opencode sent it (`check`).
//!
//! Only the operator's opencode is captured: the base URL it prints holds a one-time random token
//! (a request without it is 404 and not kept), the proxy's browser guard refuses what a web page
//! would send (`server::browser_guard`: non-JSON POSTs, foreign origins, rebinding Host names),
//! and the captures are bounded in count and bytes. What was captured is summarised (`summary`)
//! for the operator to confirm before anything is written.
//!
//! Not part of serving: it shares no state with the proxy and never talks to a model server.

pub mod agents;
pub mod agents_check;
pub mod check;
pub mod claude_code;
pub mod claude_code_check;
pub mod extract;
pub mod report;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use self::extract::{Capture, Files, Machine};
use crate::config::ServerConfig;
use crate::harness::opencode::tools::HostInfo;
use crate::prompts::Prompts;
use crate::server::browser_guard::{self, BrowserPolicy};

/// Most requests kept before the pair arrives (opencode sends two); beyond it 503, not kept.
pub const MAX_CAPTURES: usize = 16;
/// Most body bytes kept in all; a request that would pass it is 503 and not kept.
pub const MAX_CAPTURE_BYTES: usize = 8 * 1024 * 1024;
/// Longest single request body read (an opencode request is tens of KiB); beyond it 413.
pub const MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

/// What a calibration found and wrote.
#[derive(Debug)]
pub struct Outcome {
    pub written: Vec<PathBuf>,
    pub notes: Vec<String>,
    /// Against the built-in prompts.
    pub differences: Vec<String>,
    /// Left between the rewrite of the captured request and the request itself.
    pub rewrite: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("capture endpoint: {0}")]
    Serve(std::io::Error),
    #[error(transparent)]
    Extract(#[from] extract::ExtractError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the written prompts do not load: {0}")]
    Load(#[from] crate::prompts::PromptError),
    #[error(transparent)]
    Agent(#[from] agents::AgentError),
}

/// Writes an agent's calibrated files under `out/<harness>/`.
pub fn write_agent_files(
    out: &Path,
    agent: agents::Agent,
    files: &agents::AgentFiles,
) -> Result<Vec<PathBuf>, CalibrateError> {
    let dir = out.join(agent.harness());
    std::fs::create_dir_all(&dir).map_err(|source| CalibrateError::Write {
        path: dir.clone(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, text) in &files.files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| CalibrateError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[derive(Default)]
struct Held {
    captures: Vec<Capture>,
    /// Body bytes of the captures, as they came.
    bytes: usize,
}

struct Shared {
    /// The first path segment every request must carry.
    token: String,
    captures: Mutex<Held>,
    /// Told when the captures are complete (`done`).
    complete: Notify,
    /// Whether what was captured is all the calibration needs.
    done: fn(&[Capture]) -> bool,
}

/// opencode's capture is complete with its main request and its title request.
fn opencode_done(captures: &[Capture]) -> bool {
    captures.iter().any(|c| extract::is_title(&c.body))
        && captures
            .iter()
            .any(|c| extract::main_system(&c.body).is_some())
}

/// A fresh one-time token for the base URL: 128 bits from the OS's CSRNG, as 32 hex digits.
pub fn token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS's random generator is unavailable");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Serves the capture endpoint until opencode has sent its main and its title request, or
/// `stop` resolves; answers in-flight requests before returning what was captured. Only requests
/// under `/{token}/` are answered and kept.
pub async fn capture(
    listener: TcpListener,
    token: String,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Vec<Capture>, CalibrateError> {
    capture_until(listener, token, stop, opencode_done).await
}

/// `capture`, complete when `done` says so (an agent's calibration, `agents::Agent::done`).
pub async fn capture_until(
    listener: TcpListener,
    token: String,
    stop: impl Future<Output = ()> + Send + 'static,
    done: fn(&[Capture]) -> bool,
) -> Result<Vec<Capture>, CalibrateError> {
    let listen = listener.local_addr().map_err(CalibrateError::Serve)?;
    let policy = Arc::new(BrowserPolicy::new(listen, &ServerConfig::default()));
    let shared = Arc::new(Shared {
        token,
        captures: Mutex::new(Held::default()),
        complete: Notify::new(),
        done,
    });
    let app = Router::new()
        .fallback(answer)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            policy,
            browser_guard::guard,
        ))
        .with_state(shared.clone());
    let done = shared.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                () = done.complete.notified() => {}
                () = stop => {}
            }
        })
        .await
        .map_err(CalibrateError::Serve)?;
    let captures = shared
        .captures
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .captures
        .clone();
    Ok(captures)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let Some(path) = under_token(uri.path(), &shared.token) else {
        return error(
            StatusCode::NOT_FOUND,
            "not found: use the base URL calibrate printed, token included",
        );
    };
    let path = path.to_owned();
    if method == Method::GET && path.ends_with("/models") {
        return axum::Json(json!({"object": "list", "data": []})).into_response();
    }
    // Claude Code's preflight, before its first request.
    if method == Method::HEAD {
        return StatusCode::OK.into_response();
    }
    if method == Method::POST && path.ends_with("/messages/count_tokens") {
        return claude_code::count_tokens(body.len());
    }
    let messages = path.ends_with("/messages");
    if method != Method::POST || !(messages || path.ends_with("/chat/completions")) {
        return error(
            StatusCode::NOT_FOUND,
            "calibrate only answers chat completions and messages",
        );
    }
    let size = body.len();
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body is not JSON");
    };
    let is_title = if messages {
        claude_code::is_title(&body)
    } else {
        body["messages"][0]["role"] == "system"
            && body["messages"][1]["content"] == "Generate a title for this conversation:\n"
    };
    let model = body["model"].as_str().unwrap_or("calibrate").to_owned();
    let stream = body["stream"].as_bool().unwrap_or(false);
    {
        let mut held = shared
            .captures
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if held.captures.len() >= MAX_CAPTURES || held.bytes + size > MAX_CAPTURE_BYTES {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "calibrate already holds {} request(s), {} bytes (at most {MAX_CAPTURES} \
                     and {MAX_CAPTURE_BYTES} bytes); restart it to capture again",
                    held.captures.len(),
                    held.bytes
                ),
            );
        }
        held.bytes += size;
        held.captures.push(Capture { path, body });
        if (shared.done)(&held.captures) {
            shared.complete.notify_one();
        }
    }
    if messages {
        return claude_code::canned(&model, is_title, stream);
    }
    let text = if is_title { "Calibration run" } else { "Hi." };
    canned(&model, text, stream)
}

/// A complete, short answer in the shape asked for.
fn canned(model: &str, text: &str, stream: bool) -> Response {
    let base = json!({"id": "chatcmpl-calibrate", "created": 0, "model": model});
    if !stream {
        let mut completion = base;
        completion["object"] = json!("chat.completion");
        completion["choices"] = json!([{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]);
        completion["usage"] =
            json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2});
        return axum::Json(completion).into_response();
    }
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = base.clone();
        chunk["object"] = json!("chat.completion.chunk");
        chunk["choices"] = choices;
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n")
    };
    let body = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]),
            None,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            Some(json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})),
        ),
        format!("data: {}\n\n", crate::protocols::chat::DONE),
    ]
    .concat();
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// The rest of `path` after `/{token}`, the token compared in constant time; `None` without it.
fn under_token<'a>(path: &'a str, token: &str) -> Option<&'a str> {
    use subtle::ConstantTimeEq;
    let rest = path.strip_prefix('/')?;
    let (first, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let same = first.len() == token.len() && bool::from(first.as_bytes().ct_eq(token.as_bytes()));
    same.then_some(rest)
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

/// Writes the prompt files under `out/opencode/`, then reports on them.
pub fn write(out: &Path, captures: &[Capture], host: &HostInfo) -> Result<Outcome, CalibrateError> {
    let files = extract_files(captures, host)?;
    write_files(out, &files, captures, host)
}

/// The prompt files the captures make on this machine, not yet written.
pub fn extract_files(captures: &[Capture], host: &HostInfo) -> Result<Files, CalibrateError> {
    let machine = Machine {
        shell: host.shell.clone(),
        temp_dir: Path::new(&host.temp_dir)
            .join("opencode")
            .display()
            .to_string(),
    };
    Ok(extract::extract(captures, &machine)?)
}

/// Longest first line shown in the summary, in characters.
const SHOWN_CHARS: usize = 160;

/// What the operator is asked to confirm before the files are written: the system prompt's size
/// and first line, the title prompt's first line, the tool names. Control and bidi characters
/// are shown escaped, so a captured text cannot rewrite the terminal.
pub fn summary(files: &Files) -> Vec<String> {
    let first_line = |text: &str| shown(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
    let mut lines = vec![format!(
        "system prompt: {} chars, first line: {}",
        files.system.chars().count(),
        first_line(&files.system)
    )];
    lines.push(match &files.title {
        Some(title) => format!("title prompt: {}", first_line(title)),
        None => "title prompt: none captured (the built-in one stays)".to_owned(),
    });
    lines.push(format!("skills: {} chars", files.skills.chars().count()));
    let names: Vec<String> = serde_json::from_str::<Value>(&files.tools)
        .ok()
        .and_then(|tools| {
            tools.as_array().map(|tools| {
                tools
                    .iter()
                    .map(|t| shown(t["function"]["name"].as_str().unwrap_or("?")))
                    .collect()
            })
        })
        .unwrap_or_default();
    lines.push(format!("tools ({}): {}", names.len(), names.join(", ")));
    lines
}

/// The first non-blank line of a captured text, shown escaped and cut (for the summary).
pub fn shown_first_line(text: &str) -> String {
    shown(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether an answer to "write these?" is yes.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Writes `files` under `out/opencode/`, then reports on them.
pub fn write_files(
    out: &Path,
    files: &Files,
    captures: &[Capture],
    host: &HostInfo,
) -> Result<Outcome, CalibrateError> {
    let dir = out.join("opencode");
    std::fs::create_dir_all(&dir).map_err(|source| CalibrateError::Write {
        path: dir.clone(),
        source,
    })?;
    let mut written = Vec::new();
    let Files {
        system,
        skills,
        title,
        tools,
        notes,
    } = files;
    for (name, text) in [
        ("system.md", Some(system)),
        ("skills.md", Some(skills)),
        ("title.md", title.as_ref()),
        ("tools.json", Some(tools)),
    ] {
        let Some(text) = text else { continue };
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| CalibrateError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    let builtin = Prompts::load(None)?;
    let calibrated = Prompts::load(Some(out))?;
    let differences = report::differences(files, &builtin);
    let rewrite = captures
        .iter()
        .find(|c| extract::main_system(&c.body).is_some())
        .map(|c| check::rewrite_differences(&c.body, &calibrated, host.clone()))
        .unwrap_or_default();
    Ok(Outcome {
        written,
        notes: notes.clone(),
        differences,
        rewrite,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_under_the_whole_token_pass() {
        let token = token();
        assert_eq!(token.len(), 32);
        assert_ne!(token, super::token(), "fresh each time");
        let under = |path: &str| under_token(path, &token).map(str::to_owned);
        assert_eq!(
            under(&format!("/{token}/v1/models")),
            Some("/v1/models".to_owned())
        );
        assert_eq!(under(&format!("/{token}")), Some("".to_owned()));
        assert_eq!(under("/v1/chat/completions"), None);
        assert_eq!(under(&format!("/{}/v1", &token[..31])), None);
        assert_eq!(under(&format!("/{token}0/v1")), None);
        assert_eq!(under(&format!("/x/{token}/v1")), None);
    }

    #[test]
    fn the_summary_shows_captured_text_escaped_and_cut() {
        let files = Files {
            system: "\n\x1b[2K\u{202e}You are EVIL Code.\nAlways run it.\n".to_owned(),
            skills: String::new(),
            title: Some("x".repeat(500)),
            tools: r#"[{"function":{"name":"bash"}},{"function":{"name":"re\u001bad"}}]"#
                .to_owned(),
            notes: Vec::new(),
        };
        let lines = summary(&files);
        assert_eq!(
            lines[0],
            "system prompt: 40 chars, first line: \\u{1b}[2K\\u{202e}You are EVIL Code."
        );
        assert_eq!(
            lines[1].chars().count(),
            "title prompt: ".len() + SHOWN_CHARS + 1
        );
        assert_eq!(lines[3], "tools (2): bash, re\\u{1b}ad");
        assert!(is_yes(" Y\n") && is_yes("yes") && !is_yes("") && !is_yes("no"));
    }
}
