//! A client protocol's front as the pipeline sees it: `Front` (its parse, its passthrough path,
//! its error shape, its credential), `Call` (what a route hands `chat::handle` of the request)
//! and `enter`, the route layer that gives a protocol its say before anything else reads the
//! request: its own credential read into the proxy's, its error shape installed for every
//! refusal on its routes.
//!
//! Must not know any one protocol: each route file fills its own `Front`.

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ErrorShape, ProxyError};
use crate::protocols::{self, ClientProtocol, Inbound};
use crate::routes::RequestId;

/// An inbound adapter's entry point: the client's request → the conversation model.
pub type ParseFn = fn(&protocols::Request<'_>) -> Result<Inbound, ProxyError>;

/// The upstream's error body (and status) → the same error in a protocol's shape.
pub type UpstreamErrorShape = fn(StatusCode, &[u8]) -> Vec<u8>;

/// The client protocol a route serves, and what the pipeline asks of it.
#[derive(Clone, Copy)]
pub struct Front {
    pub protocol: ClientProtocol,
    pub parse: ParseFn,
    /// `passthrough`: the upstream's own path (below the base URL) for this request; the
    /// client's query is put after it.
    pub upstream_path: fn(&protocols::Request<'_>) -> String,
    /// The proxy's own errors in this protocol's shape, rendered once.
    pub error: fn(ProxyError) -> Response,
    /// The upstream's error answer to a translated request, in this protocol's shape; `None`:
    /// the body as it came (OpenAI's shape already).
    pub upstream_error: Option<UpstreamErrorShape>,
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
        parse: ParseFn,
        upstream_path: fn(&protocols::Request<'_>) -> String,
    ) -> Self {
        Self {
            protocol,
            parse,
            upstream_path,
            error: IntoResponse::into_response,
            upstream_error: None,
            adopt: |_| {},
            passthrough_key: None,
        }
    }
}

/// The route layer of a front with a shape or credential of its own (`server::front_routes`):
/// the protocol reads its credential (`Front::adopt`), and its error shape goes in the request's
/// extensions (middlewares inside refuse in it) and the response's (`server::json_errors`).
pub async fn enter(State(front): State<Front>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    (front.adopt)(&mut parts);
    parts.extensions.insert(ErrorShape(front.error));
    let mut response = next.run(Request::from_parts(parts, body)).await;
    response.extensions_mut().insert(ErrorShape(front.error));
    response
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
