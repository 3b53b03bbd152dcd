//! The Gemini API front (Gemini CLI): `POST /v1beta/models/{model}:streamGenerateContent`
//! (and `:generateContent`) through the one pipeline (`pipeline::serve`), `:countTokens` answered
//! locally (of the request as its harness rebuilds it), `GET /v1beta/models[/{model}]` from the
//! upstream's `/models`; the same under `/harness/{name}/` and with `/v1/` (POST only there:
//! `GET /v1/models/{id}` is OpenAI's and is forwarded). `GeminiError` renders the proxy's errors
//! once in Google's shape.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use bytes::Bytes;

use crate::error::ProxyError;
use crate::protocols::gemini::{self, error as google, models};
use crate::routes::answer::{Bounds, collect};
use crate::routes::count_tokens::{self, Counting};
use crate::routes::error_response;
use crate::routes::front::{Call, Front, Mount};
use crate::routes::headers::client_authorization;
use crate::routes::pipeline;
use crate::routes::render::upstream_failed;
use crate::state::AppState;
use crate::upstream::Outbound;

pub const FRONT: Front = Front {
    protocol: gemini::PROTOCOL,
    routes,
    parse: gemini::parse,
    upstream_path: gemini::upstream_path,
    error: |err| GeminiError(err).into_response(),
    upstream_error: Some(|status, body| google::reshape(status.as_u16(), body)),
    stream_error: google::stream_error,
    adopt: gemini::adopt,
    passthrough_key: Some(gemini::KEY_HEADER),
};

/// The front's routes.
fn routes(_: &Mount<'_>) -> Router<AppState> {
    let model = || post(generate).get(one_model);
    Router::new()
        .route("/v1beta/models", get(list_models))
        .route("/v1beta/models/{target}", model())
        .route(
            "/v1/models/{target}",
            post(generate).get(crate::routes::forward::default_route),
        )
        .route("/harness/{name}/v1beta/models", get(list_models))
        .route("/harness/{name}/v1beta/models/{target}", model())
        .route(
            "/harness/{name}/v1/models/{target}",
            post(generate).get(crate::routes::forward::path_route),
        )
        // pi's Google client with a base URL that has no version posts `/models/…` itself.
        .route("/models/{target}", post(generate))
        .route("/harness/{name}/models/{target}", post(generate))
        // The rest of the Gemini API (files, caches, embeddings) is not served: 404 in its shape.
        .route("/v1beta/{*rest}", any(not_served))
        .route("/harness/{name}/v1beta/{*rest}", any(not_served))
}

async fn not_served(call: Call) -> Response {
    GeminiError(ProxyError::NotFound {
        method: call.method.to_string(),
        path: call.path,
    })
    .into_response()
}

/// A `ProxyError` in Google's shape `{"error":{"code","message","status"}}`, rendered once.
pub struct GeminiError(pub ProxyError);

impl From<ProxyError> for GeminiError {
    fn from(err: ProxyError) -> Self {
        Self(err)
    }
}

impl IntoResponse for GeminiError {
    fn into_response(self) -> Response {
        error_response::render(&self.0, |facts| {
            (
                facts.status,
                google::body(facts.status.as_u16(), facts.message),
            )
        })
    }
}

/// `{model}:{action}` → the path parameters `model`, `action` and the API `version`. The model
/// (decoded) goes into a passthrough's upstream path: only a plain name is one (no `/`, no
/// leading `.`), anything else is no route.
fn split_target(call: &mut Call) -> Option<String> {
    let target = call.params.iter().find(|(k, _)| k == "target")?.1.clone();
    let (model, action) = target.rsplit_once(':')?;
    let plain = |name: &str| {
        !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    if !plain(model) || !plain(action) {
        return None;
    }
    let version = if call.path.contains("/v1beta/") {
        "v1beta"
    } else {
        "v1"
    };
    call.params.push(("model".into(), model.to_owned()));
    call.params.push(("version".into(), version.to_owned()));
    call.params.push(("action".into(), action.to_owned()));
    Some(action.to_owned())
}

async fn generate(State(state): State<AppState>, mut call: Call, body: Body) -> Response {
    match split_target(&mut call).as_deref() {
        Some(gemini::STREAM | gemini::GENERATE) => pipeline::serve(state, FRONT, call, body).await,
        Some(gemini::COUNT_TOKENS) => count_tokens(&state, call, body)
            .await
            .unwrap_or_else(IntoResponse::into_response),
        _ => not_served(call).await,
    }
}

/// `:countTokens`: `{"totalTokens": N}`, of the request as its harness sends it upstream
/// (`routes::count_tokens`), within its bound (`limits.max_token_counts`; beyond it 503, to be
/// retried).
async fn count_tokens(state: &AppState, call: Call, body: Body) -> Result<Response, GeminiError> {
    let counting = Counting {
        as_sent: |body| gemini::count_tokens(body),
        conversation: |call, body| {
            let request = call.request(body);
            gemini::count_conversation(body, request.param("model").unwrap_or_default())
        },
    };
    let tokens = count_tokens::count(state, call, body, counting).await?;
    Ok(json(&serde_json::json!({ "totalTokens": tokens })))
}

fn json(value: &serde_json::Value) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        value.to_string(),
    )
        .into_response()
}

async fn list_models(State(state): State<AppState>, call: Call) -> Response {
    match upstream_models(&state, &call).await {
        Ok(ids) => json(&models::list(&ids)),
        Err(response) => response,
    }
}

async fn one_model(State(state): State<AppState>, call: Call) -> Response {
    let Some(wanted) = call
        .params
        .iter()
        .find(|(k, _)| k == "target")
        .map(|(_, v)| v.clone())
    else {
        return GeminiError(ProxyError::ResourceNotFound {
            what: "model".into(),
        })
        .into_response();
    };
    match upstream_models(&state, &call).await {
        Ok(ids) if ids.contains(&wanted) => json(&models::model(&wanted)),
        Ok(_) => GeminiError(ProxyError::ResourceNotFound {
            what: format!("model `{wanted}`"),
        })
        .into_response(),
        Err(response) => response,
    }
}

/// The most of the upstream's model list read.
const MAX_MODEL_LIST: usize = 4 * 1024 * 1024;

/// The ids of the upstream's `GET /models`; its error answer in Google's shape, as the pipeline
/// reshapes one (`render::upstream_failed`).
async fn upstream_models(state: &AppState, call: &Call) -> Result<Vec<String>, Response> {
    let mut headers = HeaderMap::new();
    if let Ok(id) = HeaderValue::from_str(&call.id.0) {
        headers.insert("x-request-id", id);
    }
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let outbound = Outbound {
        method: Method::GET,
        path: "/models".to_owned(),
        headers,
        body: Bytes::new().into(),
        client_authorization: client_authorization(&call.headers, true),
        dispatched: None,
        messages: false,
    };
    let upstream = state
        .upstream
        .send(outbound)
        .await
        .map_err(|e| GeminiError(e.into()).into_response())?;
    if !upstream.status.is_success() {
        // Read and reshaped as the pipeline reads an upstream's error answer.
        let failed = upstream_failed(
            upstream.status,
            &upstream.headers,
            upstream.body,
            FRONT.upstream_error,
        );
        return Err(failed
            .await
            .unwrap_or_else(|e| GeminiError(e).into_response()));
    }
    let bounds = Bounds {
        max_event: MAX_MODEL_LIST,
        max_answer: MAX_MODEL_LIST,
    };
    let body = collect(upstream.body, bounds)
        .await
        .map_err(|e| GeminiError(e).into_response())?;
    Ok(models::ids(&body))
}
