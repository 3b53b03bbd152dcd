//! The idle timeout between an upstream body's chunks: a body that stays silent too long ends with
//! `UpstreamError::Timeout`. Owns only that timer; the body's bytes pass through untouched.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::time::Sleep;

use super::UpstreamError;

/// Ends the stream with `Timeout` when the inner stream stays silent longer than `idle`.
///
/// A chunk only sets a flag: reading the clock and re-arming the timer for every chunk cost
/// about as much as forwarding it. Instead the timer ticks every `idle / TICKS` and counts
/// silent ticks, so the timeout fires between `idle` and `idle + idle / TICKS` after the last chunk.
/// Nor is the timer polled after every chunk: it already holds the waker of the task that reads
/// the body, and it is polled again only once it has fired or another task reads.
pub(super) struct IdleTimeout<S> {
    inner: S,
    idle: Duration,
    tick: Duration,
    sleep: Pin<Box<Sleep>>,
    /// The waker the timer was last polled with (it wakes that task when it fires).
    armed: Option<Waker>,
    /// A chunk arrived since the last tick.
    active: bool,
    /// Silence so far, in whole ticks.
    silent: Duration,
    finished: bool,
}

/// How finely the silence is measured.
const TICKS: u32 = 8;

impl<S> IdleTimeout<S> {
    pub(super) fn new(inner: S, idle: Duration) -> Self {
        let tick = (idle / TICKS).max(Duration::from_millis(1));
        Self {
            inner,
            idle,
            tick,
            sleep: Box::pin(tokio::time::sleep(tick)),
            armed: None,
            active: false,
            silent: Duration::ZERO,
            finished: false,
        }
    }
}

impl<S> Stream for IdleTimeout<S>
where
    S: Stream<Item = Result<Bytes, UpstreamError>> + Unpin,
{
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        match this.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(item)) => {
                if item.is_err() {
                    this.finished = true;
                } else {
                    this.active = true;
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                this.finished = true;
                Poll::Ready(None)
            }
            Poll::Pending
                if !this.sleep.is_elapsed()
                    && this.armed.as_ref().is_some_and(|w| w.will_wake(cx.waker())) =>
            {
                Poll::Pending
            }
            Poll::Pending => loop {
                // Out of budget, the timer answers `Pending` without keeping the waker.
                let kept = tokio::task::coop::has_budget_remaining();
                match this.sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        if std::mem::take(&mut this.active) {
                            this.silent = Duration::ZERO;
                        } else {
                            this.silent += this.tick;
                        }
                        if this.silent >= this.idle {
                            this.finished = true;
                            return Poll::Ready(Some(Err(UpstreamError::Timeout(
                                "idle between stream chunks",
                            ))));
                        }
                        let next = this.sleep.deadline() + this.tick;
                        this.sleep.as_mut().reset(next);
                    }
                    Poll::Pending => {
                        this.armed = kept.then(|| cx.waker().clone());
                        return Poll::Pending;
                    }
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_longer_than_idle_ends_with_a_timeout_within_one_tick() {
        let idle = Duration::from_secs(8);
        let chunk_then_silence = futures_util::stream::iter([Ok(Bytes::from_static(b"a"))])
            .chain(futures_util::stream::pending());
        let mut stream = IdleTimeout::new(chunk_then_silence, idle);
        assert!(stream.next().await.is_some_and(|c| c.is_ok()));
        let started = tokio::time::Instant::now();
        let item = stream.next().await;
        assert!(matches!(item, Some(Err(UpstreamError::Timeout(_)))));
        let waited = started.elapsed();
        assert!(
            waited >= idle && waited <= idle + idle / TICKS,
            "timed out after {waited:?}"
        );
        assert!(stream.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_timeout_wakes_whichever_task_reads_the_body() {
        let idle = Duration::from_secs(8);
        let chunk_then_silence = futures_util::stream::iter([Ok(Bytes::from_static(b"a"))])
            .chain(futures_util::stream::pending());
        let mut stream = IdleTimeout::new(chunk_then_silence, idle);
        assert!(stream.next().await.is_some_and(|c| c.is_ok()));
        // Polled once with another waker: the timer holds that one.
        assert!(futures_util::FutureExt::now_or_never(stream.next()).is_none());
        let reader = tokio::spawn(async move { stream.next().await });
        let item = tokio::time::timeout(idle * 2, reader)
            .await
            .expect("the reading task was woken by the timeout")
            .expect("task");
        assert!(matches!(item, Some(Err(UpstreamError::Timeout(_)))));
    }

    #[tokio::test(start_paused = true)]
    async fn chunks_closer_than_idle_keep_the_stream_alive() {
        // A chunk every 5 s for a minute, idle 8 s: never a timeout.
        let chunks = futures_util::stream::unfold(0u32, |n| async move {
            (n < 12).then_some(())?;
            tokio::time::sleep(Duration::from_secs(5)).await;
            Some((Ok(Bytes::from_static(b"x")), n + 1))
        });
        let stream = IdleTimeout::new(Box::pin(chunks), Duration::from_secs(8));
        let items: Vec<Result<Bytes, UpstreamError>> = stream.collect().await;
        assert_eq!(items.len(), 12);
        assert!(items.iter().all(Result::is_ok));
    }
}
