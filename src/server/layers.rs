//! The two layers a proxied request passes, written as tower services: `Outer` around every route
//! (the request id and access-log line, framework errors in the route's shape) and `Proxied`
//! around each proxied route (the front's say, the browser guard, the key gate, admission, in that
//! order). Each is one service with one boxed future. As six axum `from_fn` layers, every call
//! cloned the whole stack of services below it and boxed it again for its `Next`: 12.6k of the
//! 100k instructions passthrough adds to a small chat over a bare relay (BENCHMARKS.md, "The
//! proxied routes' layers as two services").

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use tower::{Layer, Service, ServiceExt};

use super::browser_guard::BrowserPolicy;
use super::{access_log, admit, inbound_auth, json_errors};
use crate::error::ProxyError;
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
        let answer = self.inner.call(request);
        Box::pin(async move {
            let handled = async {
                let Ok(response) = answer.await;
                json_errors::reshape(response).await
            };
            let response = tracing::Instrument::instrument(handled, logged.span()).await;
            Ok(logged.answered(response))
        })
    }
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
