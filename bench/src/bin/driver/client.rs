//! One HTTP/1.1 connection per simulated client (TCP_NODELAY, kept alive), and what one request
//! looked like from outside: status, total time, time to the first SSE event, each event's arrival.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderName, HeaderValue};
use hyper_util::rt::TokioIo;

/// Where requests go and with which headers.
#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub authority: String,
    /// Path of the chat (or Responses / Messages) route, query included.
    pub path: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// One request a phase sends: its body, and its own path when the protocol names the model in
/// the path (Gemini's `models/{model}:generateContent`).
#[derive(Clone)]
pub struct Request {
    pub body: Bytes,
    pub path: Option<String>,
}

impl Target {
    pub fn parse(url: &str, headers: &[String]) -> Result<Self, String> {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("bad url {url}: {e}"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| format!("url {url} has no host"))?
            .to_string();
        let addr = authority
            .parse::<SocketAddr>()
            .or_else(|_| authority.replace("localhost", "127.0.0.1").parse())
            .map_err(|e| format!("url {url}: host must be an ip:port ({e})"))?;
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), ToString::to_string);
        let mut parsed = Vec::new();
        for header in headers {
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| format!("header {header}: expected K:V"))?;
            parsed.push((
                HeaderName::from_bytes(name.trim().as_bytes()).map_err(|e| e.to_string())?,
                HeaderValue::from_str(value.trim()).map_err(|e| e.to_string())?,
            ));
        }
        Ok(Self {
            addr,
            authority,
            path,
            headers: parsed,
        })
    }
}

/// What one request looked like.
#[derive(Default)]
pub struct Outcome {
    pub status: u16,
    pub total: Duration,
    /// Time until the first complete SSE event (a blank-line terminator) arrived.
    pub first_event: Option<Duration>,
    pub events: u32,
    /// Arrival of each event, when asked for.
    pub arrivals: Vec<Duration>,
    /// The start of a failed answer's body, for the report.
    pub error_body: Option<String>,
}

pub struct Conn {
    sender: Option<SendRequest<Full<Bytes>>>,
    addr: SocketAddr,
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Self {
        Self { sender: None, addr }
    }

    async fn ready(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, String> {
        if let Some(sender) = &mut self.sender
            && sender.ready().await.is_ok()
        {
            // Borrow again: the checker cannot see through the `if let` above.
            return self
                .sender
                .as_mut()
                .ok_or_else(|| "no connection".to_owned());
        }
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        self.sender = Some(sender);
        self.sender
            .as_mut()
            .ok_or_else(|| "no connection".to_owned())
    }

    /// Sends one POST and reads the whole answer, timing it.
    pub async fn post(
        &mut self,
        target: &Target,
        payload: &Request,
        extra: &[(HeaderName, HeaderValue)],
        record_arrivals: bool,
    ) -> Result<Outcome, String> {
        let path = payload.path.as_deref().unwrap_or(target.path.as_str());
        let mut request = hyper::Request::post(path)
            .header(hyper::header::HOST, target.authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::AUTHORIZATION, "Bearer sk-bench-not-a-key");
        for (name, value) in target.headers.iter().chain(extra) {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(payload.body.clone()))
            .map_err(|e| e.to_string())?;
        let sender = self.ready().await?;
        let started = Instant::now();
        let response = match sender.send_request(request).await {
            Ok(response) => response,
            Err(err) => {
                self.sender = None;
                return Err(format!("send: {err}"));
            }
        };
        let mut outcome = Outcome {
            status: response.status().as_u16(),
            ..Outcome::default()
        };
        let mut body = response.into_body();
        let mut last = [0u8; 2];
        let mut head = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                self.sender = None;
                format!("body: {e}")
            })?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            let now = started.elapsed();
            if outcome.status != 200 && head.len() < 400 {
                head.extend_from_slice(&data[..data.len().min(400 - head.len())]);
            }
            let ends = count_event_ends(last, data);
            if ends > 0 {
                outcome.first_event.get_or_insert(now);
                outcome.events += ends;
                if record_arrivals {
                    outcome.arrivals.push(now);
                }
            }
            match &data[..] {
                [.., a, b] => last = [*a, *b],
                [b] => last = [last[1], *b],
                [] => {}
            }
        }
        outcome.total = started.elapsed();
        if outcome.status != 200 {
            outcome.error_body = Some(String::from_utf8_lossy(&head).into_owned());
        }
        Ok(outcome)
    }
}

/// Blank-line event terminators (`\n\n`, or `\r\n\r\n` as Google's API ends its events) in
/// `data`, counting one split across frames (`previous`: the last two bytes before `data`).
fn count_event_ends(previous: [u8; 2], data: &[u8]) -> u32 {
    let mut count = 0;
    let [mut before, mut prev] = previous;
    for &byte in data {
        if byte == b'\n' && (prev == b'\n' || (prev == b'\r' && before == b'\n')) {
            count += 1;
        }
        before = prev;
        prev = byte;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::count_event_ends;

    #[test]
    fn event_ends_split_across_frames_count_once() {
        assert_eq!(count_event_ends([0, 0], b"data: a\n\ndata: b\n"), 1);
        assert_eq!(count_event_ends([b'b', b'\n'], b"\ndata: c\n\n"), 2);
        assert_eq!(count_event_ends([0, 0], b"data: a\r\n\r\ndata: b\r\n"), 1);
        assert_eq!(count_event_ends([b'\n', b'\r'], b"\ndata: c\r\n\r\n"), 2);
    }
}
