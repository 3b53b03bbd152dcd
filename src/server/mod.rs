//! The HTTP server: `router(state)` and `run(listener, state, shutdown)`. Takes an already-bound
//! listener so tests can use port 0; shutdown is any future, so tests need no signals.
//!
//! The router mounts every front of `routes::FRONTS` (behind `layers::Proxied`), forwards the rest of
//! `/v1/*`, and serves the probes, the titles API and the console. Its parts: `listen` (the accept
//! loop, connection cap, drain and cut), `activity` (each connection's idle timer), `open_files`
//! (`max_connections` fitted to the open-file limit), `layers` (the proxied routes' checks and the
//! access log around every route, as two services), `admit` (body bounds, then a request slot),
//! `access_log`, `browser_guard`, `inbound_auth` (the `auth.keys` gate) and `json_errors`. It
//! reads only what `routes` publishes for it (handlers, `FRONTS`, `RequestId`, `ResponseFacts`,
//! `ConnectionScope`, `AnswerFinished`).

pub mod access_log;
mod activity;
mod admit;
pub mod browser_guard;
pub mod inbound_auth;
pub mod json_errors;
mod layers;
mod listen;
pub mod open_files;
mod opening;

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::routing::{any, get};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::error::ProxyError;
use crate::routes;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    // Every route but `/healthz` (it says only "ok") refuses web pages first, inside the route's
    // own error shaping: `browser_guard`.
    let policy = std::sync::Arc::new(browser_guard::BrowserPolicy::new(
        state.config.listen,
        &state.config.server,
    ));
    let guard = || axum::middleware::from_fn_with_state(policy.clone(), browser_guard::guard);
    // The proxied routes' checks (`layers::Proxied`): a front's own say first, then the browser
    // guard, the key gate and admission.
    let proxied = |front| layers::Proxied::new(front, policy.clone(), state.clone());
    // Every client protocol's routes (`routes::FRONTS`).
    let mut fronts = Router::new();
    for &front in routes::FRONTS {
        let layered = |routes: Router<AppState>| {
            outer(routes.route_layer(proxied(Some(front))), state.clone())
        };
        let mount = routes::front::Mount { layered: &layered };
        fronts = fronts.merge((front.routes)(&mount).route_layer(proxied(Some(front))));
    }
    // The rest of `/v1/*` (`/v1/models`, `/v1/embeddings`, …), forwarded unchanged.
    let forwarded = Router::new()
        .route("/v1/{*rest}", any(routes::forward::default_route))
        .route(
            "/harness/{name}/v1/{*rest}",
            any(routes::forward::path_route),
        );
    let forwarded = forwarded.route_layer(proxied(None));
    let probes = Router::new()
        // Base-URL probes (Claude Code: `HEAD /api/hello` without its no-traffic flags).
        .route("/", get(routes::messages::hello))
        .route("/api/hello", get(routes::messages::hello))
        .route("/harness/{name}", get(routes::messages::hello))
        .route("/harness/{name}/", get(routes::messages::hello))
        .route("/harness/{name}/api/hello", get(routes::messages::hello))
        .route_layer(guard());
    let titles = Router::new()
        .route("/titles", get(routes::titles::list))
        .route("/titles/{id}", get(routes::titles::get_one))
        .route("/titles/{id}/stream", get(routes::titles::stream))
        // The inspector shows bodies: the same gate and scoping as the titles.
        .route("/ui/api/inspect", get(routes::ui::inspect))
        // What every caller sent and how the proxy fares is the operator's: with `auth.keys`,
        // a listed key or the admin token reads it.
        .route("/metrics", get(routes::health::metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            inbound_auth::require_key_or_admin,
        ))
        .route_layer(guard());
    let console = Router::new()
        .route("/ui", get(routes::ui::page))
        .route("/ui/app.js", get(routes::ui::script))
        .route("/ui/style.css", get(routes::ui::style))
        .route("/readyz", get(routes::health::readyz))
        .route_layer(guard());
    let app = Router::new()
        .merge(console)
        .merge(fronts)
        .merge(forwarded)
        .merge(probes)
        .merge(titles)
        .route("/healthz", get(routes::health::healthz))
        .fallback(not_found)
        .method_not_allowed_fallback(routes::front::method_not_allowed);
    outer(app, state)
}

/// The layer around every route: the request id and access log, framework errors in our shape,
/// a panic caught as a 500 (`layers::Outer`).
fn outer(routes: Router<AppState>, state: AppState) -> Router {
    routes.layer(layers::Outer(state.clone())).with_state(state)
}

async fn not_found(method: Method, request: Request) -> ProxyError {
    ProxyError::NotFound {
        method: method.to_string(),
        path: request.uri().path().to_owned(),
    }
}

/// Serves until `shutdown` resolves, then stops accepting and lets in-flight requests finish for
/// up to `shutdown_grace`. Returns once everything has finished or the grace period ran out (then
/// the connections still open are cut, and their access-log lines say `shutdown`).
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = state.config.shutdown_grace;
    state.titles.recover().await;
    state.titles.spawn_maintenance();
    let memory_upkeep = CancellationToken::new();
    state.memory.spawn_maintenance(memory_upkeep.clone());
    let stopping = CancellationToken::new();
    let trigger = stopping.clone();
    let draining_state = state.clone();
    let signalled_at = std::sync::Arc::new(std::sync::OnceLock::new());
    let signalled = signalled_at.clone();
    tokio::spawn(async move {
        shutdown.await;
        let _ = signalled.set(tokio::time::Instant::now());
        draining_state.start_draining();
        tracing::info!("shutdown requested; draining in-flight requests");
        trigger.cancel();
    });
    let stop = listen::Stop {
        stopping: stopping.clone(),
        cut: CancellationToken::new(),
        tracker: tokio_util::task::TaskTracker::new(),
    };
    let serve = listen::serve(
        listener,
        router(state.clone()),
        &state.config.limits,
        stop.clone(),
    );
    let deadline = async {
        stopping.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        result = serve => result?,
        () = deadline => {
            tracing::warn!(grace = ?grace, "grace period over; closing remaining connections");
            state.start_cutting();
            stop.cut.cancel();
            // The cut connections drop their bodies (and write their access-log lines) at once.
            let _ = tokio::time::timeout(BACKGROUND_FLUSH, stop.tracker.wait()).await;
        }
    }
    // Title tasks get what is left of the grace period (at least a moment to record themselves).
    let spent = signalled_at
        .get()
        .map(tokio::time::Instant::elapsed)
        .unwrap_or_default();
    let left = grace.saturating_sub(spent).max(BACKGROUND_FLUSH);
    state.titles.shutdown(left).await;
    memory_upkeep.cancel();
    state.memory.shutdown(BACKGROUND_FLUSH).await;
    Ok(())
}

/// How long `run` may still wait after the grace period for background work (title tasks).
pub const BACKGROUND_FLUSH: Duration = Duration::from_secs(1);

pub(crate) fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        200..=299 => "2xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}
