//! End-to-end over loopback sockets: the same request sent straight to a fake model server and
//! through the proxy, so the difference is the proxy's own cost (parse, rewrite, one extra hop).
//!
//! - `unary/*`: a non-streaming request answered with a small JSON body;
//! - `stream_100/*`: a streamed answer of 100 SSE events, read to the end;
//! - `first_event/*`: time to the first SSE event (a Nagle/buffering stall would show as ~40 ms).
//!
//! Run: `cargo bench --bench end_to_end`. Titles are off so each proxied request is one upstream call.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use harness_proxy::config::{Config, TitleOrder};
use harness_proxy::state::AppState;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}"#;

fn event(i: usize) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// Streams `n` events, each its own write, then `[DONE]`; JSON when `stream` is false.
async fn upstream(request: axum::extract::Request) -> Response {
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let streaming = memchr::memmem::find(&body, b"\"stream\":true").is_some();
    if !streaming {
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(COMPLETION))
            .expect("response");
    }
    let events: Vec<Result<Bytes, std::io::Error>> = (0..100)
        .map(|i| Ok(Bytes::from(event(i))))
        .chain(std::iter::once(Ok(Bytes::from_static(b"data: [DONE]\n\n"))))
        .collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(futures_util::stream::iter(events)))
        .expect("response")
}

async fn serve_upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Model servers disable Nagle; a fake that does not would stall every multi-write stream ~40 ms.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, Router::new().fallback(upstream)).await;
    });
    addr
}

async fn serve_proxy(upstream: SocketAddr) -> SocketAddr {
    let mut config = Config::default();
    config.upstream.base_url = format!("http://{upstream}/v1");
    config.titles.order = TitleOrder::Off;
    config.titles.store = harness_proxy::config::StoreUrl::Memory;
    config.log_level = "warn".into();
    let state = AppState::build(config, harness_proxy::state::Host::bare()).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(harness_proxy::server::run(
        listener,
        state,
        std::future::pending(),
    ));
    addr
}

fn body(stream: bool) -> String {
    format!(
        r#"{{"model":"m","stream":{stream},"messages":[{{"role":"system","content":"You are an agent."}},{{"role":"user","content":"Say hello"}}]}}"#
    )
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (upstream, proxy) = runtime.block_on(async {
        let upstream = serve_upstream().await;
        (upstream, serve_proxy(upstream).await)
    });
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let targets = [
        (
            "direct",
            format!("http://{upstream}/v1/chat/completions"),
            None,
        ),
        (
            "passthrough",
            format!("http://{proxy}/v1/chat/completions"),
            Some("passthrough"),
        ),
        (
            "opencode",
            format!("http://{proxy}/v1/chat/completions"),
            Some("opencode"),
        ),
    ];
    let send = |url: &str, harness: Option<&str>, stream: bool| {
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .body(body(stream));
        if let Some(h) = harness {
            request = request.header("x-harness", h);
        }
        request.send()
    };

    // Whole answers: a unary request, then a 100-event stream read to the end.
    for (group_name, stream) in [("unary", false), ("stream_100", true)] {
        let mut group = c.benchmark_group(group_name);
        group.measurement_time(Duration::from_secs(5));
        for (name, url, harness) in &targets {
            group.bench_function(*name, |b| {
                b.iter(|| {
                    runtime.block_on(async {
                        send(url, *harness, stream)
                            .await
                            .expect("send")
                            .bytes()
                            .await
                            .expect("body")
                    })
                });
            });
        }
        group.finish();
    }

    let mut group = c.benchmark_group("first_event");
    group.measurement_time(Duration::from_secs(5));
    for (name, url, harness) in &targets {
        group.bench_function(*name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let mut response = send(url, *harness, true).await.expect("send");
                    let first = response.chunk().await.expect("chunk").expect("an event");
                    drop(response);
                    first
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
