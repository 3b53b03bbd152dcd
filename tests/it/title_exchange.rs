//! `titles.input = "exchange"` through the real server (docs/titles.md): a first turn is
//! titled, once its answer has ended, from its user words and its answer's text in one user
//! message; a missing half is left out and the other still asked; a compaction summary in first
//! place is skipped; with neither half no title request goes upstream.

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};
use crate::titles::{chat, first_turn, main_reply, settled, title_reply, titles_of};
use harness_proxy::config::{TitleInput, TitleOrder};

const TITLE_PROMPT: &str = include_str!("../../prompts/opencode/title.md");

/// Title requests get "Login redirect fix", every other request `main`.
async fn upstream(main: Reply) -> FakeUpstream {
    let title = title_reply("Login redirect fix");
    FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            title.clone()
        } else {
            main.clone()
        }
    })
    .await
}

async fn exchange_app(upstream: &FakeUpstream, input_chars: usize) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.titles.order = TitleOrder::After;
    config.titles.input = TitleInput::Exchange;
    config.titles.input_chars = input_chars;
    TestApp::start(config).await
}

/// The one title request's messages.
fn title_messages(upstream: &FakeUpstream) -> Value {
    let titles = titles_of(upstream);
    assert_eq!(titles.len(), 1, "one title request");
    titles[0].json()["messages"].clone()
}

fn asked(exchange: &str) -> Value {
    json!([
        {"role": "system", "content": TITLE_PROMPT},
        {"role": "user", "content": exchange}
    ])
}

#[tokio::test]
async fn both_halves_go_in_one_user_message_after_the_answer() {
    let upstream = upstream(main_reply()).await;
    let app = exchange_app(&upstream, 2000).await;
    let body = first_turn("Fix the login redirect");
    read_all(chat(&app, &body, "conv-x1", "k").await).await;
    let record = settled(&app, "conv-x1", "k").await;
    assert_eq!(record["title"], "Login redirect fix");
    assert_eq!(
        title_messages(&upstream),
        asked("USER:\nFix the login redirect\n\nASSISTANT:\nHello world")
    );
    let requests = upstream.requests();
    assert!(
        !requests[0].is_title() && requests[1].is_title(),
        "the title goes once the answer ended"
    );
    // The title request keeps opencode's parameters.
    let title = &titles_of(&upstream)[0].json();
    assert_eq!(
        (title["max_tokens"].clone(), title["stream"].clone()),
        (json!(32000), json!(true))
    );
}

#[tokio::test]
async fn an_answer_without_text_leaves_the_user_half_alone() {
    let upstream = upstream(Reply::sse(&[&finish_chunk("stop"), DONE])).await;
    let app = exchange_app(&upstream, 2000).await;
    read_all(chat(&app, &first_turn("Fix the login redirect"), "conv-x2", "k").await).await;
    assert_eq!(settled(&app, "conv-x2", "k").await["status"], "done");
    assert_eq!(
        title_messages(&upstream),
        asked("USER:\nFix the login redirect")
    );
}

#[tokio::test]
async fn no_user_words_leave_the_answer_half_alone() {
    let upstream = upstream(main_reply()).await;
    let app = exchange_app(&upstream, 2000).await;
    let body = json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"}
    ]});
    read_all(chat(&app, &body, "conv-x3", "k").await).await;
    assert_eq!(settled(&app, "conv-x3", "k").await["status"], "done");
    assert_eq!(title_messages(&upstream), asked("ASSISTANT:\nHello world"));
}

#[tokio::test]
async fn neither_half_means_no_title_request() {
    let upstream = upstream(Reply::sse(&[&finish_chunk("stop"), DONE])).await;
    let app = exchange_app(&upstream, 2000).await;
    let body = json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"}
    ]});
    read_all(chat(&app, &body, "conv-x4", "k").await).await;
    let record = settled(&app, "conv-x4", "k").await;
    assert_eq!(
        (record["status"].as_str(), record["error"].as_str()),
        (Some("failed"), Some("no input to title from"))
    );
    assert!(titles_of(&upstream).is_empty());
}

#[tokio::test]
async fn a_compaction_summary_in_first_place_is_skipped() {
    let upstream = upstream(main_reply()).await;
    let app = exchange_app(&upstream, 2000).await;
    let body = json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nWe fixed the login."},
        {"role": "user", "content": "Now add a test for it"}
    ]});
    read_all(chat(&app, &body, "conv-x5", "k").await).await;
    assert_eq!(settled(&app, "conv-x5", "k").await["status"], "done");
    assert_eq!(
        title_messages(&upstream),
        asked("USER:\nNow add a test for it\n\nASSISTANT:\nHello world")
    );
}

#[tokio::test]
async fn each_half_is_cut_to_input_chars_and_a_json_answer_counts() {
    let upstream = upstream(Reply::json(
        200,
        r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Redirect fixed in auth.ts"},"finish_reason":"stop"}]}"#,
    ))
    .await;
    let app = exchange_app(&upstream, 8).await;
    let mut body = first_turn("Fix the login redirect");
    body["stream"] = json!(false);
    let answer: Value = chat(&app, &body, "conv-x6", "k")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Redirect fixed in auth.ts"
    );
    assert_eq!(settled(&app, "conv-x6", "k").await["status"], "done");
    assert_eq!(
        title_messages(&upstream),
        asked("USER:\nFix the\n\nASSISTANT:\nRedirect")
    );
}

#[tokio::test]
async fn a_streamed_answer_s_text_is_the_half_even_in_pieces() {
    let upstream = upstream(Reply::sse(&[
        &text_chunk("<think>plan</think>Done: "),
        &text_chunk("the redirect"),
        &finish_chunk("stop"),
        DONE,
    ]))
    .await;
    let app = exchange_app(&upstream, 2000).await;
    read_all(chat(&app, &first_turn("Fix the login redirect"), "conv-x7", "k").await).await;
    assert_eq!(settled(&app, "conv-x7", "k").await["status"], "done");
    assert_eq!(
        title_messages(&upstream),
        asked("USER:\nFix the login redirect\n\nASSISTANT:\nDone: the redirect")
    );
}
