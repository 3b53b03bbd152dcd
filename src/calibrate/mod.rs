//! `harness-proxy calibrate opencode --out DIR`: a capture endpoint that looks like a Chat
//! Completions upstream to a real opencode, answers each request with a short canned stream so
//! its run completes, and turns what it sent into prompt files for `--prompts-dir` (`extract`),
//! then says how they differ from the built-in prompts (`report`) and whether the `opencode`
//! harness now rewrites a request exactly as that opencode sent it (`check`).
//!
//! Not part of serving: it shares no state with the proxy and never talks to a model server.

pub mod check;
pub mod extract;
pub mod report;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use self::extract::{Capture, Files, Machine};
use crate::harness::opencode::tools::HostInfo;
use crate::prompts::Prompts;

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
}

#[derive(Default)]
struct Shared {
    captures: Mutex<Vec<Capture>>,
    /// Told when a main request and a title request have both arrived.
    complete: Notify,
}

/// Serves the capture endpoint until opencode has sent its main and its title request, or
/// `stop` resolves; answers in-flight requests before returning what was captured.
pub async fn capture(
    listener: TcpListener,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Vec<Capture>, CalibrateError> {
    let shared = Arc::new(Shared::default());
    let app = Router::new().fallback(answer).with_state(shared.clone());
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
        .map(|c| c.clone())
        .unwrap_or_default();
    Ok(captures)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    if method == Method::GET && path.ends_with("/models") {
        return axum::Json(json!({"object": "list", "data": []})).into_response();
    }
    if method != Method::POST || !path.ends_with("/chat/completions") {
        return error(
            StatusCode::NOT_FOUND,
            "calibrate only answers chat completions",
        );
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body is not JSON");
    };
    let is_title = body["messages"][0]["role"] == "system"
        && body["messages"][1]["content"] == "Generate a title for this conversation:\n";
    let model = body["model"].as_str().unwrap_or("calibrate").to_owned();
    let stream = body["stream"].as_bool().unwrap_or(false);
    if let Ok(mut captures) = shared.captures.lock() {
        captures.push(Capture { path, body });
        let has_title = captures.iter().any(|c| extract::is_title(&c.body));
        let has_main = captures
            .iter()
            .any(|c| extract::main_system(&c.body).is_some());
        if has_title && has_main {
            shared.complete.notify_one();
        }
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
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

/// Writes the prompt files under `out/opencode/`, then reports on them.
pub fn write(out: &Path, captures: &[Capture], host: &HostInfo) -> Result<Outcome, CalibrateError> {
    let machine = Machine {
        shell: host.shell.clone(),
        temp_dir: Path::new(&host.temp_dir)
            .join("opencode")
            .display()
            .to_string(),
    };
    let files = extract::extract(captures, &machine)?;
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
    } = &files;
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
    let differences = report::differences(&files, &builtin);
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
