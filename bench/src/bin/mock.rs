//! The mock model server: `POST …/chat/completions` answers the scenario named by the request's
//! model (see the library) as one JSON or as SSE, one write per event, paced as asked (a title
//! request gets a title's length of it, `TITLE_DELTAS`); TCP_NODELAY
//! on every connection (a server without it stalls multi-write streams ~40 ms on Nagle). Any other
//! path is 404, `GET …/models` lists nothing. Single-threaded on purpose: it is pinned to one core.
//!
//! Usage: `mock --listen 127.0.0.1:0 --addr-file FILE` (writes the bound address to FILE).

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use harness_proxy_bench::{Kind, Scenario, Shell, scan_string, scan_true};

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut addr_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().ok_or("--listen needs a value")?,
            "--addr-file" => addr_file = Some(args.next().ok_or("--addr-file needs a value")?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(listen.parse()?, addr_file))
}

async fn serve(
    listen: std::net::SocketAddr,
    addr_file: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(listen)?;
    // Thousands of streams connect at once in the sustained phase.
    let listener = socket.listen(8192)?;
    let addr = listener.local_addr()?;
    if let Some(path) = addr_file {
        std::fs::write(path, addr.to_string())?;
    }
    eprintln!("mock listening on {addr}");
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                eprintln!("accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service_fn(handle))
                .await;
        });
    }
}

async fn handle(request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(plain(StatusCode::BAD_REQUEST, "unreadable body")),
    };
    if method == hyper::Method::GET && path.ends_with("/models") {
        return Ok(json(r#"{"object":"list","data":[]}"#.to_owned()));
    }
    if method != hyper::Method::POST || !path.ends_with("/chat/completions") {
        return Ok(plain(StatusCode::NOT_FOUND, "no such route on the mock"));
    }
    let model = scan_string(&body, "model").unwrap_or("m").to_owned();
    let mut scenario = Scenario::parse(&model);
    if is_title_request(&body) {
        // A title model answers in a few words, not at the length of the turn's answer.
        scenario = Scenario::text(TITLE_DELTAS.min(scenario.deltas), scenario.pace_us);
    }
    if scenario.kind == Kind::Bash {
        scenario.shell = Shell::offered(&body);
    }
    if !scan_true(&body, "stream") {
        return Ok(json(scenario.completion(&model)));
    }
    let events = scenario.events(&model, scan_true(&body, "include_usage"));
    let pace = Duration::from_micros(scenario.pace_us);
    let stream = futures_util::stream::iter(events.into_iter().enumerate()).then(
        move |(i, event)| async move {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            Ok::<_, Infallible>(Frame::data(Bytes::from(event)))
        },
    );
    let body: Pin<Box<dyn futures_util::Stream<Item = _> + Send>> = Box::pin(stream);
    let response = Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(body).boxed_unsync());
    Ok(response.unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "response")))
}

/// How many deltas a title request is answered with: a title of a few words.
const TITLE_DELTAS: u32 = 8;

/// A title request: opencode's title prompt, as the proxy sends it for a conversation's first
/// turn. Until 2026-12-05 the mock answered it with the turn's whole scenario (256 deltas in the
/// burst and fold phases), so a row titling every id-less first turn read a second stream as long
/// as the turn's (`bench/history/2026-12-04.md` and earlier).
fn is_title_request(body: &[u8]) -> bool {
    memchr::memmem::find(body, b"You are a title generator").is_some()
}

fn json(text: String) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(text)).boxed_unsync())
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "response"))
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync());
    *response.status_mut() = status;
    response
}
