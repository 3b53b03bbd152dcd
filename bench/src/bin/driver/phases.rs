//! The measurements, in the order they run against one target: idle memory, warm-up, c=1 latency
//! (small chat, 32 KB agent turn), throughput at c=32 (JSON, then streamed), time to first event,
//! the 64-event stream's total, per-event cost (burst, folded, paced), and sustained concurrent
//! paced streams with memory sampled throughout. Every phase is bounded in count and time, so a
//! slow peer cannot hold the run hostage.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::client::{Conn, Outcome, Request, Target};
use crate::procfs::{CpuMark, rss_kib};
use crate::stats::Summary;
use harness_proxy_bench::Scenario;

/// The client protocol a target speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Chat,
    Responses,
    Messages,
    /// Google's Gemini API (Gemini CLI): the model and the method in the path.
    Gemini,
}

pub struct Plan {
    pub target: Target,
    pub pid: Option<u32>,
    pub quick: bool,
    /// Only the paced-streams phase, with this many streams.
    pub only_sustained: Option<usize>,
    /// Only the small chat and then `turn` (the 32 KB turn) or `ttft` (the first-event phase).
    pub only: Option<String>,
    pub protocol: Protocol,
    /// `{}` is replaced by the scenario's model name (peers route by their own model names).
    pub model_format: String,
    pub small_chat: Value,
    pub agent_turn: Value,
}

const SMALL: Scenario = Scenario::text(64, 0);
const TTFT: Scenario = Scenario::text(16, 0);
const BURST: Scenario = Scenario::text(256, 0);
const PACED: Scenario = Scenario::text(64, 1000);
const PACED_ONE: Scenario = Scenario::text(1, 1000);
const TURN: Scenario = Scenario::bash(64);
const TURN_LONG: Scenario = Scenario::bash(256);
const SUSTAINED: Scenario = Scenario::text(20, 50_000);
const SUSTAINED_QUICK: Scenario = Scenario::text(5, 20_000);
/// A gap this many times the pacing is a stall.
const STALL_FACTOR: u64 = 10;

impl Plan {
    fn model(&self, scenario: Scenario) -> String {
        self.model_format.replace("{}", &scenario.model())
    }

    fn body(&self, scenario: Scenario, stream: bool) -> Request {
        let model = self.model(scenario);
        let path = (self.protocol == Protocol::Gemini).then(|| {
            let method = if stream {
                "streamGenerateContent?alt=sse"
            } else {
                "generateContent"
            };
            format!(
                "{}/{model}:{method}",
                self.target.path.trim_end_matches('/')
            )
        });
        let value = match self.protocol {
            Protocol::Chat => {
                let mut body = if scenario.kind == harness_proxy_bench::Kind::Bash {
                    self.agent_turn.clone()
                } else {
                    self.small_chat.clone()
                };
                body["model"] = json!(model);
                body["stream"] = json!(stream);
                body
            }
            Protocol::Responses => json!({
                "model": model,
                "instructions": "You are a helpful coding assistant. Answer briefly.",
                "input": [{"role": "user", "content": "Write a one-line shell command that counts the lines of every .rs file under src/."}],
                "stream": stream,
            }),
            Protocol::Messages => json!({
                "model": model,
                "max_tokens": 1024,
                "system": "You are a helpful coding assistant. Answer briefly.",
                "messages": [{"role": "user", "content": "Write a one-line shell command that counts the lines of every .rs file under src/."}],
                "stream": stream,
            }),
            Protocol::Gemini => json!({
                "systemInstruction": {"parts": [{"text": "You are a helpful coding assistant. Answer briefly."}]},
                "contents": [{"role": "user", "parts": [{"text": "Write a one-line shell command that counts the lines of every .rs file under src/."}]}],
            }),
        };
        Request {
            body: Bytes::from(value.to_string()),
            path,
        }
    }

    fn cap(&self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }

    fn time_cap(&self) -> Duration {
        Duration::from_secs(if self.quick { 5 } else { 40 })
    }

    /// Runs every phase; returns the target's figures as one JSON object.
    pub async fn run(&self) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("rss_idle_kib".into(), json!(self.pid.and_then(rss_kib)));
        if let Some(streams) = self.only_sustained {
            let body = self.body(SUSTAINED, true);
            let result = self.sustained(&body, streams, SUSTAINED.pace_us).await;
            out.insert(format!("sustained_{streams}"), result);
            return Value::Object(out);
        }
        let mut conn = Conn::new(self.target.addr);
        let small = self.body(SMALL, false);
        self.sequential(&mut conn, &small, &[], self.cap(300, 30), false)
            .await;

        let small_phase = self
            .sequential(&mut conn, &small, &[], self.cap(2000, 100), false)
            .await;
        out.insert("small".into(), small_phase.latency());
        out.insert("small_cpu_ns".into(), json!(small_phase.cpu_per_request()));

        let ttft_only = self.only.as_deref() == Some("ttft");
        if self.protocol == Protocol::Chat && !ttft_only {
            let turn = self.body(TURN, false);
            // A Codex CLI turn: its User-Agent selects the proxy's Codex tool profile.
            let codex = [(
                hyper::header::USER_AGENT,
                HeaderValue::from_static(
                    "codex_exec/0.94.0 (Debian 12; x86_64) dumb (codex-exec; 0.94.0)",
                ),
            )];
            let turn_phase = self
                .sequential(&mut conn, &turn, &codex, self.cap(1000, 50), false)
                .await;
            out.insert("turn".into(), turn_phase.latency());
            out.insert("turn_body_bytes".into(), json!(turn.body.len()));
            if self.only.as_deref() == Some("turn") {
                return Value::Object(out);
            }
            // The same turn streamed: a `bash` call of 64 vs 256 argument deltas, which a Codex
            // client gets back translated into its own `shell` call.
            let short = self
                .sequential(
                    &mut conn,
                    &self.body(TURN, true),
                    &codex,
                    self.cap(200, 10),
                    false,
                )
                .await;
            let long = self
                .sequential(
                    &mut conn,
                    &self.body(TURN_LONG, true),
                    &codex,
                    self.cap(200, 10),
                    false,
                )
                .await;
            out.insert(
                "translated_event_cpu_ns".into(),
                json!(
                    long.cpu_per_request()
                        .zip(short.cpu_per_request())
                        .map(|(l, s)| (l - s) / f64::from(TURN_LONG.deltas - TURN.deltas))
                ),
            );
        }
        out.insert("small_body_bytes".into(), json!(small.body.len()));
        if !ttft_only {
            self.throughput(&small, &mut out).await;
        }

        let ttft = self
            .sequential(
                &mut conn,
                &self.body(TTFT, true),
                &[],
                self.cap(1000, 50),
                false,
            )
            .await;
        out.insert("ttft".into(), ttft.first_event());
        if ttft_only {
            return Value::Object(out);
        }
        // The small chat's 64 deltas streamed unpaced: the whole stream's time, first byte to
        // `[DONE]` (issue 36: the 64-event total).
        let stream64 = self
            .sequential(
                &mut conn,
                &self.body(SMALL, true),
                &[],
                self.cap(1000, 50),
                false,
            )
            .await;
        out.insert("stream64".into(), stream64.latency());
        let burst = self
            .sequential(
                &mut conn,
                &self.body(BURST, true),
                &[],
                self.cap(200, 10),
                false,
            )
            .await;
        out.insert("burst".into(), burst.latency());
        out.insert("burst_events".into(), json!(burst.events_per_request()));
        out.insert(
            "stream_event_cpu_ns".into(),
            json!(per_event(&burst, &ttft)),
        );
        // Folded (non-streaming client) with 256 vs 64 upstream deltas: the difference is the
        // cost of 192 upstream events for a harness that folds (the upstream streams for it).
        let fold = self
            .sequential(
                &mut conn,
                &self.body(BURST, false),
                &[],
                self.cap(300, 10),
                false,
            )
            .await;
        out.insert("fold256".into(), fold.latency());
        out.insert(
            "fold_event_cpu_ns".into(),
            json!(
                fold.cpu_per_request()
                    .zip(small_phase.cpu_per_request())
                    .map(|(f, s)| (f - s) / f64::from(BURST.deltas - SMALL.deltas))
            ),
        );
        let paced = self
            .sequential(
                &mut conn,
                &self.body(PACED, true),
                &[],
                self.cap(40, 3),
                true,
            )
            .await;
        let paced_one = self
            .sequential(
                &mut conn,
                &self.body(PACED_ONE, true),
                &[],
                self.cap(40, 3),
                false,
            )
            .await;
        out.insert(
            "paced_event_cpu_ns".into(),
            json!(per_event(&paced, &paced_one)),
        );
        out.insert("paced_gaps".into(), paced.gaps(PACED.pace_us));
        drop(conn);

        if self.protocol == Protocol::Chat {
            let (scenario, counts): (Scenario, &[usize]) = if self.quick {
                (SUSTAINED_QUICK, &[64])
            } else {
                (SUSTAINED, &[512, 1024, 2048])
            };
            let body = self.body(scenario, true);
            for &streams in counts {
                let result = self.sustained(&body, streams, scenario.pace_us).await;
                out.insert(format!("sustained_{streams}"), result);
            }
            tokio::time::sleep(Duration::from_secs(if self.quick { 1 } else { 3 })).await;
            out.insert("rss_after_kib".into(), json!(self.pid.and_then(rss_kib)));
        }
        Value::Object(out)
    }

    /// `count` requests one after another on one kept-alive connection (c=1).
    /// Requests/s at c=32, JSON then streamed.
    async fn throughput(&self, small: &Request, out: &mut serde_json::Map<String, Value>) {
        let (rps, cpu_per_req, errors) = self.concurrent(small, 32).await;
        out.insert("rps_c32".into(), json!(rps));
        out.insert("rps_cpu_ns".into(), json!(cpu_per_req));
        out.insert("rps_errors".into(), json!(errors));
        // The same 64-event answer streamed to 32 clients, each reading it to its end: how every
        // agent talks (the JSON phase above folds it for the client).
        let (rps, cpu_per_req, errors) = self.concurrent(&self.body(SMALL, true), 32).await;
        out.insert("stream_rps_c32".into(), json!(rps));
        out.insert("stream_rps_cpu_ns".into(), json!(cpu_per_req));
        out.insert("stream_rps_errors".into(), json!(errors));
    }

    async fn sequential(
        &self,
        conn: &mut Conn,
        body: &Request,
        extra: &[(HeaderName, HeaderValue)],
        count: usize,
        record_arrivals: bool,
    ) -> Phase {
        let deadline = Instant::now() + self.time_cap();
        let before = CpuMark::take(self.pid);
        let mut phase = Phase::default();
        for _ in 0..count {
            if Instant::now() > deadline {
                phase.truncated = true;
                break;
            }
            let sent = tokio::time::timeout(
                Duration::from_secs(30),
                conn.post(&self.target, body, extra, record_arrivals),
            )
            .await;
            match sent {
                Ok(Ok(outcome)) if outcome.status == 200 => phase.outcomes.push(outcome),
                Ok(Ok(outcome)) => phase.fail(format!(
                    "status {}: {}",
                    outcome.status,
                    outcome.error_body.unwrap_or_default()
                )),
                Ok(Err(err)) => phase.fail(err),
                Err(_) => {
                    *conn = Conn::new(self.target.addr);
                    phase.fail("timed out after 30 s".into());
                }
            }
        }
        phase.cpu_ns = CpuMark::take(self.pid).since(&before);
        phase
    }

    /// Requests/s with `clients` connections each sending back to back for the phase's duration.
    async fn concurrent(&self, body: &Request, clients: usize) -> (f64, Option<f64>, u64) {
        let duration = Duration::from_secs(if self.quick { 1 } else { 5 });
        let before = CpuMark::take(self.pid);
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..clients {
            let target = self.target.clone();
            let body = body.clone();
            tasks.spawn(async move {
                let mut conn = Conn::new(target.addr);
                let (mut ok, mut failed) = (0u64, 0u64);
                while started.elapsed() < duration {
                    match tokio::time::timeout(
                        Duration::from_secs(30),
                        conn.post(&target, &body, &[], false),
                    )
                    .await
                    {
                        Ok(Ok(outcome)) if outcome.status == 200 => ok += 1,
                        _ => failed += 1,
                    }
                }
                (ok, failed)
            });
        }
        let (mut ok, mut failed) = (0u64, 0u64);
        while let Some(done) = tasks.join_next().await {
            if let Ok((o, f)) = done {
                ok += o;
                failed += f;
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let cpu = CpuMark::take(self.pid).since(&before);
        let per_request = cpu.filter(|_| ok > 0).map(|ns| ns as f64 / ok as f64);
        (ok as f64 / elapsed, per_request, failed)
    }

    /// `streams` paced streams open at once (starts spread over one pacing interval); memory
    /// sampled every 50 ms; a gap above `STALL_FACTOR` × pacing is a stall.
    async fn sustained(&self, body: &Request, streams: usize, pace_us: u64) -> Value {
        let started = Instant::now();
        let limit = Duration::from_secs(if self.quick { 20 } else { 90 });
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..streams {
            let target = self.target.clone();
            let body = body.clone();
            let delay = Duration::from_micros(pace_us * i as u64 / streams as u64);
            tasks.spawn(async move {
                tokio::time::sleep(delay).await;
                let mut conn = Conn::new(target.addr);
                tokio::time::timeout(limit, conn.post(&target, &body, &[], true)).await
            });
        }
        let pid = self.pid;
        // The peak lives outside the sampler: the sampler is aborted when the streams end, and an
        // aborted task returns nothing (reading its result would give the RSS after, not the peak).
        let peak_kib = Arc::new(AtomicU64::new(0));
        let sampler = tokio::spawn({
            let peak_kib = peak_kib.clone();
            async move {
                loop {
                    if let Some(kib) = pid.and_then(rss_kib) {
                        peak_kib.fetch_max(kib, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        let stall = Duration::from_micros(pace_us * STALL_FACTOR);
        let (mut ok, mut failed, mut stalls) = (0u64, 0u64, 0u64);
        let mut max_gap = Duration::ZERO;
        let mut max_first = Duration::ZERO;
        // Per stream: its worst gap and its first event, for the medians and p99s issue 36 asks.
        let (mut worst_gaps, mut firsts) = (Vec::new(), Vec::new());
        let mut first_error = None;
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok(Ok(Ok(outcome))) if outcome.status == 200 => {
                    ok += 1;
                    let first = outcome.first_event.unwrap_or_default();
                    max_first = max_first.max(first);
                    firsts.push(first);
                    let mut worst = Duration::ZERO;
                    for pair in outcome.arrivals.windows(2) {
                        let gap = pair[1] - pair[0];
                        worst = worst.max(gap);
                        if gap > stall {
                            stalls += 1;
                        }
                    }
                    max_gap = max_gap.max(worst);
                    worst_gaps.push(worst);
                }
                Ok(Ok(Ok(outcome))) => {
                    failed += 1;
                    first_error.get_or_insert(format!(
                        "status {}: {}",
                        outcome.status,
                        outcome.error_body.unwrap_or_default()
                    ));
                }
                Ok(Ok(Err(err))) => {
                    failed += 1;
                    first_error.get_or_insert(err);
                }
                Ok(Err(_)) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| "stream not finished in time".into());
                }
                Err(err) => {
                    failed += 1;
                    first_error.get_or_insert(err.to_string());
                }
            }
        }
        sampler.abort();
        let _ = sampler.await;
        if let Some(kib) = self.pid.and_then(rss_kib) {
            peak_kib.fetch_max(kib, Ordering::Relaxed);
        }
        let peak = self.pid.map(|_| peak_kib.load(Ordering::Relaxed));
        // A stream with a gap over 200 ms is lost to its user (issue 36's "sustained").
        let lost = worst_gaps
            .iter()
            .filter(|gap| **gap > Duration::from_millis(200))
            .count();
        json!({
            "streams": streams, "ok": ok, "failed": failed, "stalls": stalls,
            "max_gap_us": max_gap.as_micros() as u64, "max_first_event_us": max_first.as_micros() as u64,
            "worst_gap_p50_us": quantile_us(&mut worst_gaps, 0.5),
            "first_event_p99_us": quantile_us(&mut firsts, 0.99),
            "lost": lost,
            "rss_peak_kib": peak, "first_error": first_error,
            "seconds": started.elapsed().as_secs_f64(),
        })
    }
}

/// The `q` quantile of `values` in µs (nearest rank), `None` when there are none.
fn quantile_us(values: &mut [Duration], q: f64) -> Option<u64> {
    values.sort_unstable();
    let last = values.len().checked_sub(1)?;
    let rank = ((last as f64) * q).round() as usize;
    values.get(rank).map(|d| d.as_micros() as u64)
}

/// CPU per event from two phases that differ only in the number of events per answer.
fn per_event(long: &Phase, short: &Phase) -> Option<f64> {
    let (l, s) = (long.cpu_per_request()?, short.cpu_per_request()?);
    let events = long.events_per_request()? - short.events_per_request()?;
    (events > 0.0).then(|| (l - s) / events)
}

/// The outcomes of one phase.
#[derive(Default)]
pub struct Phase {
    outcomes: Vec<Outcome>,
    failed: u64,
    first_error: Option<String>,
    truncated: bool,
    cpu_ns: Option<u64>,
}

impl Phase {
    fn fail(&mut self, error: String) {
        self.failed += 1;
        self.first_error.get_or_insert(error);
    }

    fn cpu_per_request(&self) -> Option<f64> {
        let n = self.outcomes.len();
        (n > 0).then_some(())?;
        self.cpu_ns.map(|ns| ns as f64 / n as f64)
    }

    fn events_per_request(&self) -> Option<f64> {
        let n = self.outcomes.len();
        (n > 0).then(|| {
            self.outcomes
                .iter()
                .map(|o| f64::from(o.events))
                .sum::<f64>()
                / n as f64
        })
    }

    fn describe(&self, summary: Summary) -> Value {
        json!({
            "n": self.outcomes.len(), "failed": self.failed, "first_error": self.first_error,
            "truncated": self.truncated, "p50_us": summary.p50, "p99_us": summary.p99,
            "mean_us": summary.mean, "max_us": summary.max,
        })
    }

    fn latency(&self) -> Value {
        self.describe(Summary::of(self.outcomes.iter().map(|o| o.total)))
    }

    fn first_event(&self) -> Value {
        self.describe(Summary::of(
            self.outcomes.iter().filter_map(|o| o.first_event),
        ))
    }

    /// Gaps between events beyond the pacing, over every request of the phase.
    fn gaps(&self, pace_us: u64) -> Value {
        let pace = Duration::from_micros(pace_us);
        let gaps = self.outcomes.iter().flat_map(|o| {
            o.arrivals
                .windows(2)
                .map(move |w| (w[1] - w[0]).saturating_sub(pace))
        });
        let summary = Summary::of(gaps);
        json!({"p50_over_pace_us": summary.p50, "p99_over_pace_us": summary.p99, "max_over_pace_us": summary.max})
    }
}
