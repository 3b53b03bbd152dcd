//! One chat turn's part in titling, so the chat route only says where it is in its flow: `begin`
//! claims what this turn titles (the client's own title request, teed on the way back; or a
//! conversation's first turn, which gets a title job), `before_upstream` applies `titles.order`
//! and its waits, `watch_answer` wraps the upstream body (`Observed`) and gives the answer's
//! witness (`AnswerWitness`), and `AfterAnswer` is what `after` leaves for when the answer's body
//! ends. A client that titles itself on a thread of its own (`threads`) has its first turn's
//! claim wait for that request.
//!
//! Owns the order policy and its timeouts; must not know axum or the routes: the headers the
//! title request needs are built by the route and handed in, and the route runs `AfterAnswer`
//! when its body ends.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;

use super::input::AnswerText;
use super::job::{JobRequest, TitleJob, TitleWriter};
use super::live::LiveTitle;
use super::observe::Observed;
use super::service::{Started, TitleService};
use super::threads::{WAIT, Waiting};
use crate::config::{TitleInput, TitleOrder};
use crate::memory::answer_witness::{Anchor, AnswerWitness, MemoSink, Taps};
use crate::memory::facts::ConversationFacts;

use crate::upstream::{UpstreamError, UpstreamResponse, is_event_stream};

/// Longest wait for a `parallel` title request to be on its way before the main one goes: with a
/// pooled connection it takes microseconds; a fresh TLS connection must not delay the answer long.
const DISPATCH_WAIT: Duration = Duration::from_millis(500);

/// Slack over `titles.timeout` for a `before` wait: the title task is itself bounded by the
/// timeout, and recording its outcome takes a moment more.
const RECORD_SLACK: Duration = Duration::from_millis(100);

/// What the title service needs to know of a turn.
pub struct TurnInfo<'a> {
    pub owner: &'a str,
    pub conversation: &'a str,
    /// `None` when the request was not read (passthrough of another protocol).
    pub facts: Option<&'a ConversationFacts>,
    /// This turn starts its conversation (no client id, no anchor found).
    pub started: bool,
    /// The request is a client's sub-agent's: never titled (its answer still anchors it).
    pub subagent: bool,
    pub harness: &'static str,
    pub protocol: &'static str,
    /// The writer of the title request for a model (its body and upstream headers, as the turn's
    /// harness writes them): made only when this turn starts a title job.
    pub title_request: &'a (dyn Fn(&str) -> TitleWriter + Sync),
    /// The credential the title request goes upstream with, as the main request's.
    pub client_authorization: Option<HeaderValue>,
    /// The client asks for its title itself after its first turn (`threads::titles_itself`).
    pub titles_itself: bool,
    /// This request is that title request (`threads::is_title_thread`).
    pub title_thread: bool,
}

/// What one turn does for titles, from its claim to the end of its answer. Whatever it claimed
/// gets an outcome: a turn dropped before its answer was watched records why.
#[must_use = "a claimed title needs `before_upstream` and `watch_answer`"]
pub struct TitleTurn {
    service: Arc<TitleService>,
    /// `/titles/{conversation}` when this turn titles the conversation, either way.
    url: Option<String>,
    /// The client's own title request: its answer becomes the title.
    observed: Option<Arc<LiveTitle>>,
    /// The title job this turn claimed, until `titles.order` says when it goes.
    job: Option<(Arc<LiveTitle>, TitleJob)>,
    /// The answer to remember as its conversation's anchor if it ends cleanly (a turn that
    /// started a conversation without a client id).
    anchor: Option<Anchor>,
    /// Where the answer's text goes for this turn's exchange title (`titles.input`).
    answer: Option<AnswerText>,
}

/// An `after` title job: started once the answer's body has ended (or failed, or was dropped).
/// Dropped unstarted (the request abandoned before its answer), it starts then: a claim always
/// gets an outcome.
pub struct AfterAnswer {
    claimed: Option<(Arc<TitleService>, Arc<LiveTitle>, TitleJob)>,
}

impl AfterAnswer {
    pub fn start(mut self) {
        self.go();
    }

    fn go(&mut self) {
        if let Some((service, live, job)) = self.claimed.take() {
            let _started = service.start(live, job);
        }
    }
}

impl Drop for AfterAnswer {
    fn drop(&mut self) {
        self.go();
    }
}

impl TitleService {
    /// Claims what `turn` titles. Only the claim waits on the store (bounded); a turn that does
    /// not claim still remembers a started conversation's answer.
    pub async fn begin(self: &Arc<Self>, turn: TurnInfo<'_>) -> TitleTurn {
        let mut out = TitleTurn {
            service: self.clone(),
            url: None,
            observed: None,
            job: None,
            anchor: None,
            answer: None,
        };
        let Some(facts) = turn.facts else {
            return out;
        };
        if turn.started {
            out.anchor = Some(Anchor {
                anchors: self.memory.anchors.clone(),
                owner: turn.owner.to_owned(),
                conversation: turn.conversation.to_owned(),
                user_text: facts.last_user_text.clone(),
            });
        }
        // A conversation started without a client id is titled on its first turn even when the
        // client wrote example exchanges before it (aider's few-shot): from what this turn asks.
        let due = facts.title_request || facts.initial_turn || turn.started;
        if !due || turn.subagent || !self.applies_to(turn.harness) {
            return out;
        }
        // A title thread's request titles the conversation whose first words it quotes.
        if facts.title_request
            && turn.title_thread
            && let Some(waiting) = self.threads.take_quoted(turn.owner, &facts.first_user_text)
        {
            out.url = Some(format!("/titles/{}", waiting.conversation));
            out.observed = Some(waiting.live);
            return out;
        }
        let claimed = if turn.started {
            self.claim_fresh(
                turn.owner,
                turn.conversation,
                &facts.model,
                turn.harness,
                turn.protocol,
            )
        } else {
            self.claim(
                turn.owner,
                turn.conversation,
                &facts.model,
                turn.harness,
                turn.protocol,
            )
            .await
        };
        let Some(live) = claimed else {
            return out;
        };
        out.url = Some(format!("/titles/{}", turn.conversation));
        if facts.title_request {
            // The client's own title request titles the conversation: observed, not repeated.
            out.observed = Some(live);
        } else {
            let words = if facts.initial_turn {
                &facts.first_user_text
            } else {
                &facts.last_user_text
            };
            // The same words from this caller were titled lately (`recent`): the title is known,
            // so no title request is written and the main request does not wait for a title task.
            if turn.started
                && let Some(title) = self.recent_title(&live.record, words)
            {
                self.settle_recent(live, title);
                return out;
            }
            let write = (turn.title_request)(&live.record.model);
            let request = match self.config.input {
                TitleInput::FirstUser => JobRequest::first_user(write, words),
                TitleInput::Exchange => {
                    let answer = AnswerText::default();
                    out.answer = Some(answer.clone());
                    JobRequest::Exchange {
                        write,
                        answer,
                        chars: self.config.input_chars,
                    }
                }
            };
            let job = TitleJob {
                fresh: turn.started,
                first_user_text: words.clone(),
                request,
                client_authorization: turn.client_authorization,
            };
            if turn.titles_itself && facts.initial_turn && !turn.started {
                self.await_title_thread(Waiting {
                    owner: turn.owner.to_owned(),
                    conversation: turn.conversation.to_owned(),
                    words: job.first_user_text.clone(),
                    live,
                    job,
                    taken: tokio_util::sync::CancellationToken::new(),
                });
            } else {
                out.job = Some((live, job));
            }
        }
        out
    }

    /// Parks a first turn's claim for the client's own title request (`threads`); if none takes
    /// it within `threads::WAIT`, the proxy's own title job runs.
    fn await_title_thread(self: &Arc<Self>, waiting: Waiting) {
        let (owner, conversation) = (waiting.owner.clone(), waiting.conversation.clone());
        let taken = waiting.taken.clone();
        if let Some(oldest) = self.threads.park(waiting) {
            let _started = self.start(oldest.live, oldest.job);
        }
        let this = self.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                () = taken.cancelled() => {}
                () = tokio::time::sleep(WAIT) => {
                    if let Some(waiting) = this.threads.take(&owner, &conversation) {
                        let _started = this.start(waiting.live, waiting.job);
                    }
                }
                () = this.cancel.cancelled() => {
                    if let Some(waiting) = this.threads.take(&owner, &conversation) {
                        this.record_observed(waiting.live, Err("the proxy shut down before the title".to_owned()));
                    }
                }
            }
        });
    }
}

impl TitleTurn {
    /// Applies `titles.order` to a claimed title job: `parallel` starts it and holds the main
    /// request until it is on its way, `before` until it is recorded, each at most a bounded
    /// time; `after` hands it back to be started when the answer's body ends.
    pub async fn before_upstream(&mut self) -> Option<AfterAnswer> {
        let (live, job) = self.job.take()?;
        let service = &self.service;
        match Moment::of(service.config.order, service.config.timeout) {
            Moment::Now { until, at_most } => {
                hold(service.start(live, job), until, at_most).await;
                None
            }
            Moment::AfterAnswer => Some(AfterAnswer {
                claimed: Some((service.clone(), live, job)),
            }),
            // Unreachable while `off` turns titles off (`applies_to`); a claim would need an
            // outcome, so it gets one.
            Moment::Never => {
                service.record_observed(live, Err("titles are off".to_owned()));
                None
            }
        }
    }

    /// The main request never got an answer: the client's own title fails with it.
    pub fn upstream_failed(mut self, err: &UpstreamError) {
        if let Some(live) = self.observed.take() {
            self.service.record_observed(live, Err(err.to_string()));
        }
    }

    /// What the proxy remembers of the answer, and the client's own title request's answer teed
    /// into its title (the body wrapped here). Returns the answer's witness, if anything is to be
    /// remembered: a started conversation's answer as its anchor if it ends cleanly, its
    /// reasoning under its call ids when `memo` is given, an exchange title's answer half. The
    /// route feeds it from the answer as the client gets it (`memory::answer_witness`).
    #[must_use = "the witness must be fed the answer (`AnswerWitness::tap` if nothing else reads it)"]
    pub fn watch_answer(
        &mut self,
        upstream: &mut UpstreamResponse,
        memo: Option<MemoSink>,
    ) -> Option<AnswerWitness> {
        let sse = is_event_stream(&upstream.headers);
        let success = upstream.status.is_success();
        let anchor = self.anchor.take().filter(|_| success);
        let memo = memo.filter(|_| success);
        // A refused answer has no text to title from: its exchange title is the user's half.
        let answer = self.answer.take().filter(|_| success);
        let witness = (anchor.is_some() || memo.is_some() || answer.is_some()).then(|| {
            let taps = Taps {
                anchor,
                memo,
                answer,
            };
            AnswerWitness::new(taps, sse)
        });
        if let Some(live) = self.observed.take() {
            let refused =
                (!success).then(|| format!("upstream answered {}", upstream.status.as_u16()));
            let body =
                std::mem::replace(&mut upstream.body, Box::pin(futures_util::stream::empty()));
            upstream.body = Box::pin(Observed::new(
                body,
                self.service.clone(),
                live,
                sse,
                refused,
            ));
        }
        witness
    }

    /// Where the client can follow the title this turn started, if any.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

impl Drop for TitleTurn {
    /// A turn that ends early (an error before its answer) still gives its claims an outcome, so
    /// no title stays pending until its lease runs out.
    fn drop(&mut self) {
        if let Some(live) = self.observed.take() {
            self.service
                .record_observed(live, Err("the request ended before its answer".to_owned()));
        }
        if let Some((live, _)) = self.job.take() {
            self.service
                .record_observed(live, Err("the request ended before its title".to_owned()));
        }
    }
}

/// When a claimed title job goes, relative to the main request (`titles.order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// Start it now and hold the main request until `until`, or `at_most`.
    Now {
        until: Signal,
        at_most: Duration,
    },
    /// Start it once the answer's body has ended.
    AfterAnswer,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// The title request is on its way (or the task gave up before sending).
    Dispatched,
    /// The title's outcome is recorded.
    Finished,
}

impl Moment {
    fn of(order: TitleOrder, title_timeout: Duration) -> Self {
        match order {
            TitleOrder::Parallel => Self::Now {
                until: Signal::Dispatched,
                at_most: DISPATCH_WAIT,
            },
            // The reference's order.
            TitleOrder::Before => Self::Now {
                until: Signal::Finished,
                at_most: title_timeout + RECORD_SLACK,
            },
            TitleOrder::After => Self::AfterAnswer,
            TitleOrder::Off => Self::Never,
        }
    }
}

/// Waits for `until` from a started title task, at most `at_most`; a task that ends without
/// signalling (its sender dropped) ends the wait too.
async fn hold(started: Started, until: Signal, at_most: Duration) {
    let signal = match until {
        Signal::Dispatched => started.dispatched,
        Signal::Finished => started.finished,
    };
    let _ = tokio::time::timeout(at_most, signal).await;
}

#[cfg(test)]
mod tests;
