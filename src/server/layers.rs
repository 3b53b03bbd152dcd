//! The two layers a proxied request passes, written as tower services: `Outer` around every route
//! (the request id and access-log line, framework errors in the route's shape) and `Proxied`
//! around each proxied route (the front's say, the browser guard, the key gate, admission, in that
//! order). Each is one service with one boxed future. As six axum `from_fn` layers, every call
//! cloned the whole stack of services below it and boxed it again for its `Next`: 12.6k of the
//! 100k instructions passthrough adds to a small chat over a bare relay (BENCHMARKS.md, "The
//! proxied routes' layers as two services").

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use tower::{Layer, Service, ServiceExt};

use super::browser_guard::BrowserPolicy;
use super::{access_log, admit, inbound_auth, json_errors};
use crate::error::{InternalError, ProxyError};
use crate::routes::error_response::ErrorShape;
use crate::routes::front::{self, Front};
use crate::state::AppState;

type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// Around every route: the access log (outermost), then framework errors re-rendered.
#[derive(Clone)]
pub(super) struct Outer(pub AppState);

impl<S> Layer<S> for Outer {
    type Service = OuterService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OuterService {
            inner,
            state: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(super) struct OuterService<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for OuterService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Answer {
        let logged = access_log::begin(&self.state, &mut request);
        // The route's future does nothing until polled, and it is polled in the request's span.
        // A panic in the route, calling it or polling its future, is answered here: a 500 in our
        // shape that the access log records as such (tower-http's `CatchPanic` outside this layer
        // logged it as a client gone away, and boxed every answer's body twice more).
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request)));
        Box::pin(async move {
            let handled = async {
                let response = match answer {
                    Ok(answer) => match AssertUnwindSafe(answer).catch_unwind().await {
                        Ok(Ok(response)) => response,
                        Err(_) => panicked(),
                    },
                    Err(_) => panicked(),
                };
                json_errors::reshape(response).await
            };
            let response = tracing::Instrument::instrument(handled, logged.span()).await;
            Ok(logged.answered(response))
        })
    }
}

/// What a route that panicked answers (the panic's message went to the log by the panic hook).
fn panicked() -> Response {
    ProxyError::Internal(InternalError::Panicked).into_response()
}

/// Around each proxied route: `front` (when the route is a client protocol's) has its say, then
/// the browser guard, the key gate and admission may refuse, each in the front's shape.
#[derive(Clone)]
pub(super) struct Proxied(Arc<Checks>);

struct Checks {
    front: Option<Front>,
    policy: Arc<BrowserPolicy>,
    state: AppState,
}

impl Proxied {
    pub(super) fn new(front: Option<Front>, policy: Arc<BrowserPolicy>, state: AppState) -> Self {
        Self(Arc::new(Checks {
            front,
            policy,
            state,
        }))
    }
}

impl<S> Layer<S> for Proxied {
    type Service = ProxiedService<S>;

    fn layer(&self, route: S) -> Self::Service {
        ProxiedService {
            route,
            checks: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(super) struct ProxiedService<S> {
    route: S,
    checks: Arc<Checks>,
}

impl<S> Service<Request> for ProxiedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    /// Ready at once: the route is called only after admission, on a clone made ready then.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Answer {
        let route = self.route.clone();
        let checks = self.checks.clone();
        Box::pin(async move { Ok(checks.run(request, route).await) })
    }
}

impl Checks {
    async fn run<S>(&self, request: Request, route: S) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let (mut parts, body) = request.into_parts();
        if let Some(front) = &self.front {
            front::enter(front, &mut parts);
        }
        let shape = ErrorShape::of(&parts.extensions);
        let refusal = self
            .policy
            .check(&parts.method, &parts.uri, &parts.headers)
            .map_err(ProxyError::from)
            .and_then(|()| inbound_auth::require_key(&self.state, &parts.headers));
        let mut response = match refusal {
            Err(err) => shape.render(err),
            Ok(()) => {
                let route = |request| async move {
                    let Ok(response) = route.oneshot(request).await;
                    response
                };
                admit::admit(&self.state, shape, parts, body, route).await
            }
        };
        if let Some(front) = &self.front {
            front::leave(front, &mut response);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::StatusCode;
    use http_body_util::BodyExt;

    use crate::config::Config;
    use crate::state::Host;

    /// `route` behind `Outer`, asked once: the answer's status, its `x-request-id` and body.
    async fn through_outer<S>(route: S) -> (StatusCode, bool, serde_json::Value)
    where
        S: Service<Request, Response = Response, Error = Infallible>,
        S::Future: Send + 'static,
    {
        let state = AppState::build(Config::default(), Host::bare()).expect("state");
        let mut outer = Outer(state).layer(route);
        let request = Request::post("/v1/chat/completions")
            .body(Body::empty())
            .expect("request");
        let Ok(response) = outer.call(request).await;
        let status = response.status();
        let has_id = response.headers().contains_key("x-request-id");
        let body = response.into_body().collect().await.expect("body");
        let json = serde_json::from_slice(&body.to_bytes()).expect("JSON");
        (status, has_id, json)
    }

    #[tokio::test]
    async fn a_route_that_panics_while_answering_gets_a_500_in_our_shape_through_the_log() {
        let route = tower::service_fn(|_: Request| async {
            if true {
                panic!("planted panic while answering");
            }
            Ok::<Response, Infallible>(Response::new(Body::empty()))
        });
        let (status, logged, body) = through_outer(route).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        // The answer went through the access log's step (which gives every answer its id).
        assert!(logged);
        assert_eq!(body["error"]["code"], "internal_error", "{body}");
        assert!(!body.to_string().contains("planted"), "{body}");
    }

    #[tokio::test]
    async fn a_route_that_panics_when_called_gets_a_500_too() {
        let route = tower::service_fn(
            |_: Request| -> std::future::Ready<Result<Response, Infallible>> {
                panic!("planted panic in call")
            },
        );
        let (status, logged, body) = through_outer(route).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(logged);
        assert_eq!(body["error"]["code"], "internal_error", "{body}");
    }
}
