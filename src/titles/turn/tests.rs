//! The order policy and a turn's claims, without a server: waits run on tokio's paused clock,
//! and the service's `after` order keeps title requests from going upstream unless a test
//! starts one (then nothing listens where it goes).

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use http::StatusCode;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::*;
use crate::config::{Config, StoreUrl, TitlesConfig};
use crate::memory::facts::exchange_digest;
use crate::titles::TitleRequest;
use crate::titles::store::Status;
use crate::titles::store::memory::MemoryStore;
use crate::upstream::Upstream;
use http::HeaderMap;

fn titles(order: TitleOrder) -> Arc<TitleService> {
    let mut config = Config::default();
    // Nothing listens there: a title request that does go out fails at once, offline.
    config.upstream.base_url = "http://127.0.0.1:1/v1".to_owned();
    let titles = TitlesConfig {
        order,
        store: StoreUrl::Memory,
        ..config.titles.clone()
    };
    let upstream =
        Arc::new(Upstream::new(&config.upstream, Arc::new(|_: &str| None)).expect("upstream"));
    let store = Arc::new(MemoryStore::new(100));
    Arc::new(TitleService::new(titles, store, upstream).expect("service"))
}

fn facts(title_request: bool, initial_turn: bool) -> ConversationFacts {
    ConversationFacts {
        model: "m".to_owned(),
        initial_turn,
        first_user_text: "first question".to_owned(),
        title_request,
        last_user_text: "last question".to_owned(),
        exchanges: Vec::new(),
    }
}

fn info<'a>(conversation: &'a str, facts: &'a ConversationFacts, started: bool) -> TurnInfo<'a> {
    TurnInfo {
        owner: "owner",
        conversation,
        facts: Some(facts),
        started,
        subagent: false,
        harness: "opencode",
        protocol: "chat",
        title_request: &no_request,
        client_authorization: None,
        titles_itself: false,
        title_thread: false,
    }
}

/// A writer of title requests with nothing in them (nothing listens where they would go).
fn no_request(_model: &str) -> TitleWriter {
    Box::new(|_| {
        Ok(TitleRequest {
            body: Bytes::new(),
            headers: HeaderMap::new(),
            path: "/chat/completions",
            messages: false,
        })
    })
}

/// `no_request`, counting in `built` how many title requests a turn writes.
fn counted(built: Arc<AtomicUsize>) -> impl Fn(&str) -> TitleWriter + Sync {
    move |model| {
        let write = no_request(model);
        let built = built.clone();
        Box::new(move |words| {
            built.fetch_add(1, Ordering::Relaxed);
            write(words)
        })
    }
}

/// Waits for every title task the service spawned, then reads the record.
async fn settled(service: &Arc<TitleService>, id: &str) -> crate::titles::store::TitleRecord {
    service.tracker.close();
    service.tracker.wait().await;
    service
        .get(Some("owner"), id)
        .await
        .expect("store")
        .expect("record")
}

fn answer(status: StatusCode, sse: bool, chunks: &[&'static str]) -> UpstreamResponse {
    let mut headers = HeaderMap::new();
    let kind = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(kind));
    let items: Vec<Result<Bytes, UpstreamError>> = chunks
        .iter()
        .map(|c| Ok(Bytes::from_static(c.as_bytes())))
        .collect();
    UpstreamResponse {
        status,
        headers,
        body: Box::pin(futures_util::stream::iter(items)),
    }
}

/// The answer's bytes read for its witness, as a route does when nothing else parses them.
fn tapped(witness: Option<AnswerWitness>, upstream: &mut UpstreamResponse) {
    if let Some(witness) = witness {
        let body = std::mem::replace(&mut upstream.body, Box::pin(futures_util::stream::empty()));
        let sse = is_event_stream(&upstream.headers);
        upstream.body = Box::pin(witness.tap(body, sse));
    }
}

async fn drain(upstream: UpstreamResponse) {
    upstream.body.for_each(|_| async {}).await;
}

#[test]
fn each_order_has_its_moment() {
    let timeout = Duration::from_secs(10);
    assert_eq!(
        Moment::of(TitleOrder::Parallel, timeout),
        Moment::Now {
            until: Signal::Dispatched,
            at_most: Duration::from_millis(500)
        }
    );
    assert_eq!(
        Moment::of(TitleOrder::Before, timeout),
        Moment::Now {
            until: Signal::Finished,
            at_most: Duration::from_millis(10_100)
        }
    );
    assert_eq!(Moment::of(TitleOrder::After, timeout), Moment::AfterAnswer);
    assert_eq!(Moment::of(TitleOrder::Off, timeout), Moment::Never);
}

/// Signals as a title task sends them; the senders are handed back to be fired or dropped.
fn signals() -> (Started, oneshot::Sender<()>, oneshot::Sender<()>) {
    let (dispatched_tx, dispatched) = oneshot::channel();
    let (finished_tx, finished) = oneshot::channel();
    let started = Started {
        dispatched,
        finished,
    };
    (started, dispatched_tx, finished_tx)
}

#[tokio::test(start_paused = true)]
async fn parallel_holds_the_main_request_until_the_title_request_is_on_its_way() {
    let (started, dispatched, _finished) = signals();
    let at = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let _ = dispatched.send(());
    });
    hold(started, Signal::Dispatched, DISPATCH_WAIT).await;
    assert_eq!(at.elapsed(), Duration::from_millis(30));
}

#[tokio::test(start_paused = true)]
async fn parallel_gives_up_waiting_at_its_bound() {
    let (started, _dispatched, finished) = signals();
    // The title finishing is not what `parallel` waits for.
    let _ = finished.send(());
    let at = Instant::now();
    hold(started, Signal::Dispatched, DISPATCH_WAIT).await;
    assert_eq!(at.elapsed(), Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn before_waits_for_the_outcome_not_the_dispatch() {
    let (started, dispatched, finished) = signals();
    let _ = dispatched.send(());
    let at = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let _ = finished.send(());
    });
    hold(started, Signal::Finished, Duration::from_millis(10_100)).await;
    assert_eq!(at.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn before_gives_up_at_the_title_timeout_and_its_slack() {
    let order = Moment::of(TitleOrder::Before, Duration::from_secs(2));
    let Moment::Now { until, at_most } = order else {
        panic!("`before` starts the title now: {order:?}");
    };
    let (started, _dispatched, _finished) = signals();
    let at = Instant::now();
    hold(started, until, at_most).await;
    assert_eq!(at.elapsed(), Duration::from_millis(2_100));
}

#[tokio::test(start_paused = true)]
async fn a_task_that_ends_without_signalling_ends_the_wait() {
    let (started, dispatched, finished) = signals();
    drop((dispatched, finished));
    let at = Instant::now();
    hold(started, Signal::Finished, Duration::from_secs(10)).await;
    assert_eq!(at.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn a_first_turn_claims_a_job_that_after_defers_to_the_answers_end() {
    let service = titles(TitleOrder::After);
    let first = facts(false, true);
    let built = Arc::new(AtomicUsize::new(0));
    let request = counted(built.clone());
    let mut turn = service
        .begin(TurnInfo {
            title_request: &request,
            ..info("c1", &first, false)
        })
        .await;
    assert_eq!(turn.url(), Some("/titles/c1"));
    assert_eq!(
        built.load(Ordering::Relaxed),
        0,
        "the title request is written by its task, not by the turn that claims it"
    );
    let job = turn
        .job
        .as_ref()
        .map(|(_, job)| job.first_user_text.as_str());
    assert_eq!(job, Some("first question"));
    let after = turn.before_upstream().await;
    assert!(after.is_some(), "`after` hands the job back");
    assert!(
        service.live(Some("owner"), "c1").is_some(),
        "still pending until the answer ends"
    );

    // A second turn of the same conversation finds it claimed.
    let again = service.begin(info("c1", &first, false)).await;
    assert_eq!(again.url(), None);
    drop((again, after));
    settled(&service, "c1").await;
    assert_eq!(
        built.load(Ordering::Relaxed),
        1,
        "the title request is written once, when its task runs"
    );
}

#[tokio::test]
async fn a_started_conversation_titles_from_what_this_turn_asks() {
    let service = titles(TitleOrder::After);
    // Not an initial turn (aider's few-shot examples), but it starts the conversation.
    let few_shot = facts(false, false);
    let turn = service.begin(info("c2", &few_shot, true)).await;
    let job = turn
        .job
        .as_ref()
        .map(|(_, job)| job.first_user_text.as_str());
    assert_eq!(job, Some("last question"));
    assert!(turn.anchor.is_some());
}

#[tokio::test]
async fn a_fresh_conversation_with_recently_titled_words_takes_that_title_at_once() {
    let service = titles(TitleOrder::Parallel);
    let first = facts(false, true);
    service.memory().recent.remember(
        crate::memory::recent::Source {
            owner: "owner",
            model: "m",
            text: "first question",
        },
        "Known title",
    );
    let built = Arc::new(AtomicUsize::new(0));
    let request = counted(built.clone());
    let mut turn = service
        .begin(TurnInfo {
            title_request: &request,
            ..info("c3", &first, true)
        })
        .await;
    assert_eq!(turn.url(), Some("/titles/c3"));
    assert!(
        turn.before_upstream().await.is_none() && turn.job.is_none(),
        "nothing is left for the main request to wait on"
    );
    let record = settled(&service, "c3").await;
    assert_eq!(
        built.load(Ordering::Relaxed),
        0,
        "no title request is written"
    );
    assert_eq!(
        (record.status, record.title.as_deref()),
        (Status::Done, Some("Known title"))
    );
}

#[tokio::test]
async fn a_later_turn_or_an_untitled_harness_claims_nothing() {
    let service = titles(TitleOrder::After);
    let later = facts(false, false);
    let turn = service.begin(info("c3", &later, false)).await;
    assert_eq!(turn.url(), None);
    assert!(turn.job.is_none() && turn.anchor.is_none());

    let first = facts(false, true);
    let turn = service
        .begin(TurnInfo {
            harness: "passthrough",
            ..info("c4", &first, true)
        })
        .await;
    assert_eq!(turn.url(), None);
    assert!(turn.job.is_none(), "no title through an untitled harness");
    assert!(turn.anchor.is_some(), "its answer is still remembered");

    let off = titles(TitleOrder::Off);
    let turn = off.begin(info("c5", &first, false)).await;
    assert_eq!(turn.url(), None);
}

#[tokio::test]
async fn the_clients_own_title_request_is_teed_into_the_title() {
    let service = titles(TitleOrder::After);
    let title_request = facts(true, true);
    let mut turn = service.begin(info("c6", &title_request, false)).await;
    assert_eq!(turn.url(), Some("/titles/c6"));
    assert!(turn.before_upstream().await.is_none(), "nothing to start");
    let mut upstream = answer(
        StatusCode::OK,
        true,
        &[
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Fixing \"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"the build\"}}]}\n\n",
            "data: [DONE]\n\n",
        ],
    );
    tapped(turn.watch_answer(&mut upstream, None), &mut upstream);
    drain(upstream).await;
    let record = settled(&service, "c6").await;
    assert_eq!(record.status, Status::Done);
    assert_eq!(record.title.as_deref(), Some("Fixing the build"));
}

#[tokio::test]
async fn a_refused_title_request_fails_the_title() {
    let service = titles(TitleOrder::After);
    let title_request = facts(true, true);
    let mut turn = service.begin(info("c7", &title_request, false)).await;
    let mut upstream = answer(StatusCode::TOO_MANY_REQUESTS, false, &["{}"]);
    tapped(turn.watch_answer(&mut upstream, None), &mut upstream);
    drain(upstream).await;
    let record = settled(&service, "c7").await;
    assert_eq!(record.status, Status::Failed);
    assert_eq!(record.error.as_deref(), Some("upstream answered 429"));
}

#[tokio::test]
async fn an_upstream_failure_fails_the_clients_own_title() {
    let service = titles(TitleOrder::After);
    let title_request = facts(true, true);
    let turn = service.begin(info("c8", &title_request, false)).await;
    turn.upstream_failed(&UpstreamError::Timeout("first byte"));
    let record = settled(&service, "c8").await;
    assert_eq!(record.status, Status::Failed);
    assert_eq!(
        record.error.as_deref(),
        Some("the upstream did not answer in time (first byte)")
    );
}

#[tokio::test]
async fn a_turn_dropped_before_its_answer_still_gives_its_claim_an_outcome() {
    let service = titles(TitleOrder::After);
    let title_request = facts(true, true);
    drop(service.begin(info("c9", &title_request, false)).await);
    let record = settled(&service, "c9").await;
    assert_eq!(record.status, Status::Failed);
    assert_eq!(
        record.error.as_deref(),
        Some("the request ended before its answer")
    );
}

/// A whole streamed answer: "Hi", a finish reason, `[DONE]`.
const CLEAN_HI: &[&str] = &[
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
];

#[tokio::test]
async fn a_started_conversations_clean_answer_becomes_its_anchor() {
    let service = titles(TitleOrder::After);
    let later = facts(false, false);
    let mut turn = service
        .begin(TurnInfo {
            harness: "passthrough",
            ..info("c10", &later, true)
        })
        .await;
    let mut upstream = answer(StatusCode::OK, true, CLEAN_HI);
    tapped(turn.watch_answer(&mut upstream, None), &mut upstream);
    drain(upstream).await;
    let digest = exchange_digest("last question", "Hi", &[]).expect("digest");
    assert_eq!(
        service.memory().anchors.find("owner", &[digest]).as_deref(),
        Some("c10")
    );

    // A refused answer is not one, even if its body reads like an answer.
    let other = ConversationFacts {
        last_user_text: "other question".to_owned(),
        ..later
    };
    let mut turn = service
        .begin(TurnInfo {
            harness: "passthrough",
            ..info("c11", &other, true)
        })
        .await;
    let mut refused = answer(StatusCode::BAD_GATEWAY, true, CLEAN_HI);
    tapped(turn.watch_answer(&mut refused, None), &mut refused);
    drain(refused).await;
    let digest = exchange_digest("other question", "Hi", &[]).expect("digest");
    assert_eq!(service.memory().anchors.find("owner", &[digest]), None);
}

#[tokio::test]
async fn an_after_title_dropped_unstarted_still_starts() {
    let service = titles(TitleOrder::After);
    // No text to title from: the title task fails before any request goes out.
    let empty = ConversationFacts {
        first_user_text: String::new(),
        ..facts(false, true)
    };
    let mut turn = service.begin(info("c12", &empty, false)).await;
    let after = turn.before_upstream().await;
    assert!(after.is_some());
    drop((turn, after));
    let record = settled(&service, "c12").await;
    assert_eq!(record.status, Status::Failed);
    assert_eq!(record.error.as_deref(), Some("no input to title from"));
}

/// A client that titles itself on a thread of its own: its first turn sends no title request
/// and holds its claim; if the client's title request never comes, the proxy's own job runs
/// once `threads::WAIT` has passed.
#[tokio::test(start_paused = true)]
async fn a_self_titling_client_s_claim_waits_for_its_title_request_then_falls_back() {
    let service = titles(TitleOrder::Parallel);
    let first = facts(false, true);
    let mut turn = service
        .begin(TurnInfo {
            titles_itself: true,
            ..info("c-tui", &first, false)
        })
        .await;
    assert_eq!(turn.url(), Some("/titles/c-tui"));
    assert!(
        turn.job.is_none(),
        "no title request of the proxy's own yet"
    );
    assert!(turn.before_upstream().await.is_none());
    drop(turn);
    assert!(
        service.live(Some("owner"), "c-tui").is_some(),
        "pending, waiting"
    );

    tokio::time::sleep(crate::titles::threads::WAIT).await;
    // The fallback job ran (its upstream is unreachable here, so it fails, but it ran).
    let record = settled(&service, "c-tui").await;
    assert_eq!(record.status, Status::Failed, "{record:?}");
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| !e.contains("shut down")),
        "{record:?}"
    );
}

/// The title request quoting the first words takes the waiting claim: observed, no job.
#[tokio::test]
async fn the_title_thread_s_request_takes_the_claim_of_the_words_it_quotes() {
    let service = titles(TitleOrder::Parallel);
    let first = ConversationFacts {
        first_user_text: "fix the login bug in auth.rs please".to_owned(),
        ..facts(false, true)
    };
    let turn = service
        .begin(TurnInfo {
            titles_itself: true,
            ..info("c-main", &first, false)
        })
        .await;
    drop(turn);
    let asked = ConversationFacts {
        first_user_text: "Generate a title.\n\nUser prompt:\nfix the login".to_owned(),
        ..facts(true, false)
    };
    let other = service
        .begin(TurnInfo {
            title_thread: true,
            owner: "someone else",
            ..info("c-thread", &asked, false)
        })
        .await;
    assert_eq!(
        other.url(),
        Some("/titles/c-thread"),
        "another caller's claim is not taken"
    );
    drop(other);
    let mut thread = service
        .begin(TurnInfo {
            title_thread: true,
            ..info("c-thread", &asked, false)
        })
        .await;
    assert_eq!(thread.url(), Some("/titles/c-main"));
    assert!(thread.job.is_none());
    let observed = thread.observed.take().expect("observed");
    assert_eq!(observed.record.id, "c-main");
    service.record_observed(observed, Ok(r#"{"title":"Fix login bug"}"#.to_owned()));
    let record = settled(&service, "c-main").await;
    assert_eq!(record.title.as_deref(), Some("Fix login bug"));
}
