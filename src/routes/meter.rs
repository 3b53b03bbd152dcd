//! What one proxied request reports to Prometheus beyond the access log's count: requests and
//! streams in flight per harness and client protocol, the upstream's time to the response head,
//! and the proxy's own overhead — the request's wall time minus the time it spent waiting on
//! someone else (the client's body, the upstream's head and body, the client reading the answer).
//!
//! Overhead is measured, not derived: before the response head it is the elapsed time minus the
//! recorded waits (tokio's clock); after it, the time spent inside the response body's polls
//! (where shaping, translating and rendering happen), read off quanta's TSC clock, which is
//! cheap enough to read twice a poll. Waiting for the client to read is in neither.

use std::cell::RefCell;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;
use http_body::{Frame, SizeHint};
use metrics::{Gauge, Histogram};
// tokio's clock, so a test with paused time measures exactly.
use tokio::time::Instant;

use crate::upstream::{BodyStream, UpstreamError};

const REQUESTS_IN_FLIGHT: &str = "harness_proxy_proxied_requests_in_flight";
const STREAMS_IN_FLIGHT: &str = "harness_proxy_proxied_streams_in_flight";
const UPSTREAM_FIRST_BYTE: &str = "harness_proxy_upstream_first_byte_seconds";
const OVERHEAD: &str = "harness_proxy_overhead_seconds";

/// The labels every pipeline metric carries: a fixed, small set of values each.
#[derive(Clone, Copy)]
struct Labels {
    harness: &'static str,
    protocol: &'static str,
}

impl Labels {
    /// The same static names (harnesses and protocols name themselves with constants).
    fn is(&self, other: &Labels) -> bool {
        std::ptr::eq(self.harness, other.harness) && std::ptr::eq(self.protocol, other.protocol)
    }
}

/// One label set's handles. Looking a series up by name and labels costs about 300
/// instructions in the recorder's registry (hashing the key, building and dropping its labels),
/// and a request did it six times; a handle is the series itself.
#[derive(Clone)]
struct Series {
    requests_in_flight: Gauge,
    streams_in_flight: Gauge,
    upstream_first_byte: Histogram,
    overhead: Histogram,
}

impl Series {
    fn register(labels: Labels) -> Self {
        let Labels { harness, protocol } = labels;
        Self {
            requests_in_flight: metrics::gauge!(REQUESTS_IN_FLIGHT, "harness" => harness, "protocol" => protocol),
            streams_in_flight: metrics::gauge!(STREAMS_IN_FLIGHT, "harness" => harness, "protocol" => protocol),
            upstream_first_byte: metrics::histogram!(UPSTREAM_FIRST_BYTE, "harness" => harness, "protocol" => protocol),
            overhead: metrics::histogram!(OVERHEAD, "harness" => harness, "protocol" => protocol),
        }
    }

    /// This thread's handles for `labels`, registered on first use. Per thread, not global: the
    /// handles belong to the recorder that was current when they were registered, which a test
    /// sets for its own thread only (`metrics::with_local_recorder`). A proxy's threads see one
    /// recorder, installed before they serve. At most one entry per harness and protocol.
    fn of(labels: Labels) -> Self {
        thread_local! {
            static KNOWN: RefCell<Vec<(Labels, Series)>> = const { RefCell::new(Vec::new()) };
        }
        KNOWN.with_borrow_mut(|known| {
            if let Some((_, series)) = known.iter().find(|(l, _)| l.is(&labels)) {
                return series.clone();
            }
            let series = Series::register(labels);
            known.push((labels, series.clone()));
            series
        })
    }
}

/// Raises a gauge while alive.
struct Raised(Gauge);

impl Raised {
    fn new(gauge: &Gauge) -> Self {
        gauge.increment(1.0);
        Self(gauge.clone())
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// One request's meter, from the moment its harness is known until its response body ends.
pub struct Meter {
    series: Series,
    started: Instant,
    waits: Arc<Waits>,
    in_flight: Raised,
}

/// Time spent waiting on the client or the upstream before the response head.
#[derive(Default)]
struct Waits {
    nanos: AtomicU64,
    /// The head has gone: what is waited for after it is in no figure, so it is not timed (two
    /// clock reads per upstream chunk of a streamed answer).
    headed: AtomicBool,
}

impl Waits {
    fn add(&self, time: Duration) {
        let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl Meter {
    pub fn start(harness: &'static str, protocol: &'static str) -> Self {
        let series = Series::of(Labels { harness, protocol });
        Self {
            in_flight: Raised::new(&series.requests_in_flight),
            series,
            started: Instant::now(),
            waits: Arc::default(),
        }
    }

    /// Time spent waiting on someone else (the client's body, a title the answer waits for).
    pub fn waited(&self, time: Duration) {
        self.waits.add(time);
    }

    /// The upstream's response head arrived `time` after the request was sent (retries included).
    pub fn upstream_head(&self, time: Duration) {
        self.series.upstream_first_byte.record(time.as_secs_f64());
        self.waited(time);
    }

    /// The upstream body, with the time spent waiting for its chunks counted as waiting.
    pub fn watch_upstream(&self, body: BodyStream) -> BodyStream {
        Box::pin(UpstreamWait {
            inner: body,
            waits: self.waits.clone(),
            pending_since: None,
        })
    }

    /// Hands the meter to the response body, which records the overhead when it ends.
    pub fn attach(self, response: &mut Response) {
        self.waits.headed.store(true, Ordering::Relaxed);
        let before_head = self.started.elapsed().saturating_sub(Duration::from_nanos(
            self.waits.nanos.load(Ordering::Relaxed),
        ));
        let stream = crate::upstream::is_event_stream(response.headers())
            .then(|| Raised::new(&self.series.streams_in_flight));
        let inner = std::mem::take(response.body_mut());
        *response.body_mut() = Body::new(MeteredBody {
            inner,
            overhead: before_head,
            histogram: self.series.overhead,
            recorded: false,
            _stream: stream,
            _in_flight: self.in_flight,
        });
    }
}

/// Counts the time from a `Pending` poll of the upstream body to its next chunk, until the
/// response head goes (a folded answer reads the whole body before it).
struct UpstreamWait {
    inner: BodyStream,
    waits: Arc<Waits>,
    pending_since: Option<Instant>,
}

impl Stream for UpstreamWait {
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if self.waits.headed.load(Ordering::Relaxed) {
            return polled;
        }
        match &polled {
            Poll::Pending => {
                if self.pending_since.is_none() {
                    self.pending_since = Some(Instant::now());
                }
            }
            Poll::Ready(_) => {
                if let Some(since) = self.pending_since.take() {
                    self.waits.add(since.elapsed());
                }
            }
        }
        polled
    }
}

/// The response body, timed: every poll's duration is the proxy's own work.
struct MeteredBody {
    inner: Body,
    /// Overhead so far: the part before the head, plus each poll.
    overhead: Duration,
    histogram: Histogram,
    recorded: bool,
    _stream: Option<Raised>,
    _in_flight: Raised,
}

impl MeteredBody {
    fn record(&mut self) {
        if std::mem::replace(&mut self.recorded, true) {
            return;
        }
        self.histogram.record(self.overhead.as_secs_f64());
    }
}

impl http_body::Body for MeteredBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        // The TSC clock: two std clock reads and their subtraction were about 330 instructions
        // an event of a stream (BENCHMARKS.md, "Panics caught in the log's layer").
        let started = quanta::Instant::now();
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        self.overhead += quanta::Instant::now().saturating_duration_since(started);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.record();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for MeteredBody {
    /// A body dropped early (the client went away, or it was never polled) still counts.
    fn drop(&mut self) {
        self.record();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

    /// A runtime whose clock moves only when told, so waits are exact.
    fn paused_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime")
    }

    /// The value of the line `name{labels} value` in a Prometheus text.
    fn sample(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{series}` in\n{text}"))
    }

    #[test]
    fn overhead_is_wall_time_minus_waits_on_the_client_and_the_upstream() {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &[0.1, 1.0, 10.0])
            .expect("buckets")
            .build_recorder();
        let handle = recorder.handle();
        // The body's polls are timed on quanta's clock: held still, they take no time.
        let (still, _) = quanta::Clock::mock();
        let during = metrics::with_local_recorder(&recorder, || {
            quanta::with_clock(&still, || {
                paused_runtime().block_on(async {
                    let meter = Meter::start("opencode", "responses");
                    // The client takes 3 s to send its body.
                    tokio::time::advance(Duration::from_secs(3)).await;
                    meter.waited(Duration::from_secs(3));
                    // The proxy's own work before sending: 250 ms.
                    tokio::time::advance(Duration::from_millis(250)).await;
                    // The upstream head after 2 s.
                    tokio::time::advance(Duration::from_secs(2)).await;
                    meter.upstream_head(Duration::from_secs(2));
                    // A non-streaming answer is read whole before the head: 10 s of upstream body.
                    let body: BodyStream = Box::pin(futures_util::stream::once(async {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        Ok(Bytes::from_static(b"{}"))
                    }));
                    let mut body = meter.watch_upstream(body);
                    while futures_util::StreamExt::next(&mut body).await.is_some() {}
                    // Folding it: 100 ms.
                    tokio::time::advance(Duration::from_millis(100)).await;
                    let mut response = Response::new(Body::from("{}"));
                    response.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("text/event-stream"),
                    );
                    meter.attach(&mut response);
                    let during = handle.render();
                    response.into_body().collect().await.expect("body");
                    during
                })
            })
        });
        let labels = r#"{harness="opencode",protocol="responses"}"#;
        assert_eq!(
            sample(&during, &format!("{REQUESTS_IN_FLIGHT}{labels}")),
            1.0
        );
        assert_eq!(
            sample(&during, &format!("{STREAMS_IN_FLIGHT}{labels}")),
            1.0
        );
        let after = handle.render();
        assert_eq!(
            sample(&after, &format!("{REQUESTS_IN_FLIGHT}{labels}")),
            0.0
        );
        assert_eq!(sample(&after, &format!("{STREAMS_IN_FLIGHT}{labels}")), 0.0);
        assert_eq!(
            sample(&after, &format!("{UPSTREAM_FIRST_BYTE}_sum{labels}")),
            2.0
        );
        assert_eq!(sample(&after, &format!("{OVERHEAD}_count{labels}")), 1.0);
        let overhead = sample(&after, &format!("{OVERHEAD}_sum{labels}"));
        assert!((overhead - 0.35).abs() < 1e-9, "{overhead}");
    }

    #[test]
    fn the_time_inside_the_answer_body_s_polls_is_overhead() {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &[0.1, 1.0, 10.0])
            .expect("buckets")
            .build_recorder();
        let handle = recorder.handle();
        let (clock, mock) = quanta::Clock::mock();
        metrics::with_local_recorder(&recorder, || {
            quanta::with_clock(&clock, || {
                paused_runtime().block_on(async {
                    let meter = Meter::start("passthrough", "chat");
                    // Each poll of the answer's body works 5 ms: two chunks, then its end.
                    let mut chunks = 2;
                    let body = Body::from_stream(futures_util::stream::poll_fn(move |_| {
                        mock.increment(Duration::from_millis(5));
                        if chunks == 0 {
                            return Poll::Ready(None);
                        }
                        chunks -= 1;
                        Poll::Ready(Some(Ok::<_, std::io::Error>(Bytes::from_static(b"x"))))
                    }));
                    let mut response = Response::new(body);
                    meter.attach(&mut response);
                    response.into_body().collect().await.expect("body");
                });
            });
        });
        let labels = r#"{harness="passthrough",protocol="chat"}"#;
        let overhead = sample(&handle.render(), &format!("{OVERHEAD}_sum{labels}"));
        assert!((overhead - 0.015).abs() < 1e-9, "{overhead}");
    }

    #[test]
    fn each_harness_and_protocol_keeps_its_own_series_across_requests() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let during = metrics::with_local_recorder(&recorder, || {
            let first = Meter::start("passthrough", "chat");
            let second = Meter::start("passthrough", "chat");
            let other = Meter::start("opencode", "chat");
            let during = handle.render();
            for meter in [first, second, other] {
                meter.attach(&mut Response::new(Body::empty()));
            }
            during
        });
        let passthrough = r#"{harness="passthrough",protocol="chat"}"#;
        let opencode = r#"{harness="opencode",protocol="chat"}"#;
        let in_flight =
            |text: &str, labels: &str| sample(text, &format!("{REQUESTS_IN_FLIGHT}{labels}"));
        assert_eq!(in_flight(&during, passthrough), 2.0);
        assert_eq!(in_flight(&during, opencode), 1.0);
        let after = handle.render();
        // All three answered (their bodies dropped), each counted once in its own series.
        assert_eq!(in_flight(&after, passthrough), 0.0);
        assert_eq!(in_flight(&after, opencode), 0.0);
        assert_eq!(
            sample(&after, &format!("{OVERHEAD}_count{passthrough}")),
            2.0
        );
        assert_eq!(sample(&after, &format!("{OVERHEAD}_count{opencode}")), 1.0);
    }

    #[test]
    fn upstream_waits_after_the_head_are_not_timed() {
        paused_runtime().block_on(async {
            let meter = Meter::start("passthrough", "chat");
            let waits = meter.waits.clone();
            let body: BodyStream = Box::pin(futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(Bytes::from_static(b"data: {}\n\n"))
            }));
            let mut body = meter.watch_upstream(body);
            meter.attach(&mut Response::new(Body::empty()));
            // A streamed answer: its body is read after the head went.
            while futures_util::StreamExt::next(&mut body).await.is_some() {}
            assert_eq!(waits.nanos.load(Ordering::Relaxed), 0);
        });
    }
}
