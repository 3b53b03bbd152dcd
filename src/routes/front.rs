//! A client protocol's front as the server and the pipeline see it: `Front` (its routes, its
//! parse, its passthrough path, its error shapes, its credential), `Mount` (what the server hands
//! a front's routes), `Call` (what a route hands `pipeline::serve` of the request), and `enter` and
//! `leave`, a protocol's say before anything else reads the request (its own credential read
//! into the proxy's, its error shape installed for every refusal on its routes) and on whatever
//! answer comes back. The server's proxied-route layer (`server::layers`) runs them.
//!
//! Must not know any one protocol: each route file fills its own `Front`, and `routes::FRONTS`
//! lists them.

use axum::Router;
use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::protocols::{self, ClientProtocol, Inbound};
use crate::routes::RequestId;
use crate::routes::error_response::ErrorShape;
use crate::state::AppState;

/// An inbound adapter's entry point: the client's request → the conversation model.
pub type ParseFn = fn(&protocols::Request<'_>) -> Result<Inbound, ProxyError>;

/// The upstream's error body (and status) → the same error in a protocol's shape.
pub type UpstreamErrorShape = fn(StatusCode, &[u8]) -> Vec<u8>;

/// The proxy's error code and message → the event that ends a stream in a protocol's shape.
pub type StreamErrorShape = fn(&str, &str) -> String;

/// What the server hands a front's routes when it mounts them.
pub struct Mount<'a> {
    /// `routes` behind every layer a request to the front passes (guard, key gate, admission,
    /// the front's own `enter`, access log): where the Responses WebSocket sends each message.
    pub layered: &'a dyn Fn(Router<AppState>) -> Router,
}

/// The client protocol a route serves, and what the server and the pipeline ask of it.
#[derive(Clone, Copy)]
pub struct Front {
    pub protocol: ClientProtocol,
    /// Its routes (the server puts them behind the proxied routes' layers and `enter`).
    pub routes: fn(&Mount<'_>) -> Router<AppState>,
    pub parse: ParseFn,
    /// `passthrough`: the upstream's own path (below the base URL) for this request; the
    /// client's query is put after it.
    pub upstream_path: fn(&protocols::Request<'_>) -> String,
    /// The proxy's own errors in this protocol's shape, rendered once.
    pub error: fn(ProxyError) -> Response,
    /// The upstream's error answer to a translated request, in this protocol's shape; `None`:
    /// the body as it came (OpenAI's shape already).
    pub upstream_error: Option<UpstreamErrorShape>,
    /// The event that ends a stream the proxy forwards as it came (passthrough's) when the
    /// upstream fails mid-way, in this protocol's shape. (A stream the proxy renders ends the
    /// renderer's way.)
    pub stream_error: StreamErrorShape,
    /// Reads the protocol's own credential into the proxy's (`Authorization` or `x-api-key`, what
    /// the key gate, the caller's identity and the upstream key read) and out of the URI; run
    /// by `enter`, before anything else sees the request. Only fronts that `enter` use it.
    pub adopt: fn(&mut Parts),
    /// `passthrough`: the header the client's `x-api-key` goes upstream under (`None`: as is).
    pub passthrough_key: Option<&'static str>,
}

impl Front {
    /// A front that renders errors in OpenAI's shape and reads credentials where the proxy does.
    pub const fn openai(
        protocol: ClientProtocol,
        routes: fn(&Mount<'_>) -> Router<AppState>,
        parse: ParseFn,
        upstream_path: fn(&protocols::Request<'_>) -> String,
    ) -> Self {
        Self {
            protocol,
            routes,
            parse,
            upstream_path,
            error: IntoResponse::into_response,
            upstream_error: None,
            stream_error: openai_stream_error,
            adopt: |_| {},
            passthrough_key: None,
        }
    }
}

/// OpenAI's `data: {"error": …}` event (Chat Completions, and the proxy's other `/v1/*` routes).
pub fn openai_stream_error(code: &str, message: &str) -> String {
    crate::api::error::sse_error_event(message, code)
}

/// A front's say on its request, first of every proxied route's checks (`server::layers`): the
/// protocol reads its credential (`Front::adopt`), and its error shape goes in the request's
/// extensions (every check after it refuses in that shape).
pub fn enter(front: &Front, parts: &mut Parts) {
    (front.adopt)(parts);
    parts.extensions.insert(ErrorShape(front.error));
}

/// The front's error shape on its answer, whoever made it (the framework's errors are rendered
/// in it on the way out: `server::json_errors`).
pub fn leave(front: &Front, response: &mut Response) {
    response.extensions_mut().insert(ErrorShape(front.error));
}

/// A wrong method on a front's route, in the route's protocol shape (`ErrorShape`).
pub async fn method_not_allowed(method: Method, request: Request) -> Response {
    ErrorShape::of(request.extensions()).render(ProxyError::MethodNotAllowed {
        method: method.to_string(),
        path: request.uri().path().to_owned(),
    })
}

/// What a route hands the pipeline of the request besides its body.
#[derive(Clone)]
pub struct Call {
    pub id: RequestId,
    pub method: Method,
    /// The request's path (no query), as the inspector shows it.
    pub path: String,
    /// The route's path parameters, decoded (a route may add its own, e.g. Gemini's model).
    pub params: Vec<(String, String)>,
    pub query: Option<String>,
    pub headers: HeaderMap,
}

impl Call {
    /// The request as its protocol's parse sees it.
    pub fn request<'a>(&'a self, body: &'a bytes::Bytes) -> protocols::Request<'a> {
        protocols::Request {
            method: &self.method,
            params: &self.params,
            query: self.query.as_deref(),
            headers: &self.headers,
            body,
        }
    }

    /// The harness the path names (`/harness/{name}/…`).
    pub fn path_harness(&self) -> Option<String> {
        self.params
            .iter()
            .find(|(key, _)| key == "name")
            .map(|(_, value)| value.clone())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Call {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let shape = ErrorShape::of(&parts.extensions);
        let params = match RawPathParams::from_request_parts(parts, state).await {
            Ok(raw) => raw
                .iter()
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect(),
            Err(rejection) => {
                return Err(shape.render(ProxyError::InvalidRequest {
                    message: format!("invalid path: {}", rejection.body_text()),
                    param: None,
                    code: "invalid_path",
                }));
            }
        };
        let id = parts
            .extensions
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(|| RequestId(uuid::Uuid::new_v4().to_string()));
        Ok(Self {
            id,
            method: parts.method.clone(),
            path: parts.uri.path().to_owned(),
            params,
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers.clone(),
        })
    }
}
