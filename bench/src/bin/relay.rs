//! The rig's floor: a bare relay that forwards every request to the mock and streams the answer
//! back, with no work of its own (no parsing, logging, limits or metrics). Built on the same hyper
//! the proxy serves with, and hyper-util's pooled client, it costs one more loopback hop and the
//! wake-ups of one more process: what any relay on this machine pays at least. Its row in
//! `run.sh` ("bare hyper relay (rig floor)") tells which part of the proxy's added time is the
//! hop itself (BENCHMARKS.md, issue 36).
//!
//! Usage: `relay --upstream HOST:PORT --addr-file FILE` (binds 127.0.0.1:0, writes the address).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = UnsyncBoxBody<Bytes, hyper::Error>;
type Upstream = Client<HttpConnector, Incoming>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut upstream = None;
    let mut addr_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--upstream" => upstream = Some(args.next().ok_or("--upstream needs a value")?),
            "--addr-file" => addr_file = Some(args.next().ok_or("--addr-file needs a value")?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let upstream = upstream.ok_or("--upstream HOST:PORT is required")?;
    // One thread, as the proxy pinned to one core effectively has.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(upstream, addr_file))
}

async fn serve(
    upstream: String,
    addr_file: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind("127.0.0.1:0".parse()?)?;
    let listener = socket.listen(8192)?;
    let addr = listener.local_addr()?;
    if let Some(path) = addr_file {
        std::fs::write(path, addr.to_string())?;
    }
    eprintln!("relay listening on {addr}, forwarding to {upstream}");
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Upstream = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(4096)
        .build(connector);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let service =
                service_fn(move |request| relay(client.clone(), upstream.clone(), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}

/// The request as it came, to the same path on the upstream; the answer's head and body as they
/// come back, frame by frame.
async fn relay(
    client: Upstream,
    upstream: String,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!("http://{upstream}{path}").parse::<Uri>() else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    parts.uri = uri;
    parts.headers.remove(hyper::header::HOST);
    match client.request(Request::from_parts(parts, body)).await {
        Ok(answer) => Ok(answer.map(BodyExt::boxed_unsync)),
        Err(_) => Ok(status(StatusCode::BAD_GATEWAY)),
    }
}

fn status(code: StatusCode) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = code;
    response
}
