//! Clients that send no conversation id (aider, `llm`, scripts), through the real server: two
//! sessions that start with the same words are two conversations, each found again from its
//! second turn on by its first exchange, titled once between them (the second takes the title the
//! first got from the same words), and aider's first real turn is titled although its first
//! request already holds the few-shot answers it wrote itself.

use serde_json::{Value, json};

use crate::support::sse::{DONE, data_lines, finish_chunk, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// Title requests get a title; every main request a different answer (as a model's would be).
async fn upstream() -> FakeUpstream {
    FakeUpstream::start(|r: &Recorded, n| {
        let text = if r.is_title() {
            "Login fix".to_owned()
        } else {
            format!("Looking into it (answer {n}).")
        };
        Reply::sse(&[&text_chunk(&text), &finish_chunk("stop"), DONE])
    })
    .await
}

/// One turn without any conversation id header; returns (conversation id, title url, answer).
async fn turn(app: &TestApp, token: &str, messages: &[Value]) -> (String, Option<String>, String) {
    let response = app
        .post("/v1/chat/completions")
        .bearer_auth(token)
        .json(&json!({"model": "mock-model", "stream": true, "messages": messages}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let id = header("x-conversation-id").expect("a conversation id");
    let title_url = header("x-title-url");
    let answer: String = data_lines(&read_all(response).await)
        .iter()
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| {
            let chunk: Value = serde_json::from_str(d).unwrap();
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    (id, title_url, answer)
}

/// Reads the title stream of `id` to its end: the title is recorded then.
async fn title_of(app: &TestApp, token: &str, id: &str) -> Value {
    let stream = app
        .get(&format!("/titles/{id}/stream"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    read_all(stream).await;
    app.get_json(&format!("/titles/{id}"), token).await
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn titles_of(upstream: &FakeUpstream) -> Vec<Recorded> {
    upstream
        .requests()
        .into_iter()
        .filter(Recorded::is_title)
        .collect()
}

#[tokio::test]
async fn two_sessions_starting_alike_are_two_conversations_and_each_goes_on() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let system = json!({"role": "system", "content": "You are a helpful assistant."});
    let first = [system.clone(), user("Fix the login bug")];

    let (a, a_title, a_answer) = turn(&app, "k", &first).await;
    assert_eq!(title_of(&app, "k", &a).await["title"], "Login fix");
    let (b, b_title, b_answer) = turn(&app, "k", &first).await;
    assert_ne!(a, b, "same first words, two sessions");
    assert_eq!(a_title, Some(format!("/titles/{a}")));
    assert_eq!(b_title, Some(format!("/titles/{b}")));
    // The same words make the same title request: asked once, recorded for both.
    let b_record = title_of(&app, "k", &b).await;
    assert_eq!(
        (&b_record["status"], &b_record["title"]),
        (&json!("done"), &json!("Login fix"))
    );
    assert_eq!(titles_of(&upstream).len(), 1);

    // Each session's later turns carry its first exchange and land in its conversation.
    let a_second = [
        system.clone(),
        user("Fix the login bug"),
        assistant(&a_answer),
        user("thanks"),
    ];
    let (a2, a2_title, a2_answer) = turn(&app, "k", &a_second).await;
    assert_eq!((a2.as_str(), a2_title), (a.as_str(), None));
    let b_second = [
        system.clone(),
        user("Fix the login bug"),
        assistant(&b_answer),
        user("thanks"),
    ];
    assert_eq!(turn(&app, "k", &b_second).await.0, b);
    let mut a_third = a_second.to_vec();
    a_third.extend([assistant(&a2_answer), user("and the logout bug?")]);
    assert_eq!(turn(&app, "k", &a_third).await.0, a);
    assert_eq!(titles_of(&upstream).len(), 1, "later turns are not titled");

    // Upstream, each conversation is one session.
    let sessions: Vec<String> = upstream
        .main_requests()
        .iter()
        .map(|r| r.header("session-id").unwrap().to_owned())
        .collect();
    assert_eq!(sessions, [&a, &b, &a, &b, &a].map(String::as_str));

    // Another caller with the same history is not in that conversation.
    let (other, _, _) = turn(&app, "other-key", &a_second).await;
    assert_ne!(other, a);
}

/// aider's request shape: its system prompt, example exchanges it wrote itself, then the real
/// question (aider 0.86, `--no-git`, an empty repository).
fn aider_first_request(question: &str) -> Vec<Value> {
    vec![
        json!({"role": "system", "content": "Act as an expert software developer.\nAlways use best practices when coding."}),
        user("Change get_factorial() to use math.factorial"),
        assistant(
            "To make this change we need to modify `mathweb/flask/app.py` to:\n\n1. Import the math package.\n2. Remove the existing factorial() function.",
        ),
        user(
            "I switched to a new code base. Please don't consider the above files or try to edit them any longer.",
        ),
        assistant("Ok."),
        user(question),
    ]
}

#[tokio::test]
async fn aider_first_real_turn_is_titled_and_two_aider_sessions_stay_apart() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let first = aider_first_request("Add a --verbose flag to cli.py");

    let (a, a_title, a_answer) = turn(&app, "k", &first).await;
    assert_eq!(a_title, Some(format!("/titles/{a}")));
    let titles = titles_of(&upstream);
    assert_eq!(titles.len(), 1);
    // The title is asked about the real question, not the examples before it.
    let asked = titles[0].json()["messages"].clone();
    assert_eq!(asked[2]["content"], "\"Add a --verbose flag to cli.py\"");
    assert!(!asked.to_string().contains("factorial"), "{asked}");

    title_of(&app, "k", &a).await;
    let (b, b_title, _) = turn(&app, "k", &first).await;
    assert_ne!(a, b);
    assert!(b_title.is_some());
    assert_eq!(title_of(&app, "k", &b).await["title"], "Login fix");

    let mut second = first.clone();
    second.extend([assistant(&a_answer), user("now add a test for it")]);
    let (a2, a2_title, _) = turn(&app, "k", &second).await;
    assert_eq!((a2, a2_title), (a, None));
    assert_eq!(titles_of(&upstream).len(), 1);

    // Another question is another title request.
    let (c, _, _) = turn(&app, "k", &aider_first_request("Remove the --quiet flag")).await;
    title_of(&app, "k", &c).await;
    assert_eq!(titles_of(&upstream).len(), 2);
}

/// aider's `--restore-chat-history` (0.86, seen through the proxy): a new session's first request
/// holds the earlier session's exchange read back from its markdown history, the user's words with
/// aider's trailing `  \n` and the answer with blank lines around it, between its own examples.
/// It is the earlier conversation, found again: no second conversation, no second title.
#[tokio::test]
async fn aider_s_restored_history_continues_its_conversation() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let (a, a_title, a_answer) =
        turn(&app, "k", &aider_first_request("remember the word banana")).await;
    assert!(a_title.is_some());
    title_of(&app, "k", &a).await;

    let mut restored = aider_first_request("what word did I ask you to remember");
    let question = restored.pop().expect("the question");
    restored.insert(5, user("remember the word banana  \n"));
    restored.insert(6, assistant(&format!("\n{a_answer}\n\n")));
    restored.push(question);
    let (b, b_title, _) = turn(&app, "k", &restored).await;
    assert_eq!(
        (b, b_title),
        (a, None),
        "the restored conversation, not a new one"
    );
    assert_eq!(titles_of(&upstream).len(), 1);
}

/// A script that does not stream, and whose first answer is a tool call with no text: the call's
/// id (unique per answer) anchors the conversation.
#[tokio::test]
async fn a_non_streaming_tool_call_answer_anchors_the_conversation() {
    let call = |n: usize| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"call_{n}\",\"type\":\"function\",\"function\":{{\"name\":\"bash\",\"arguments\":\"{{}}\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let upstream = FakeUpstream::start(move |r: &Recorded, n| {
        if r.is_title() {
            Reply::sse(&[&text_chunk("Listing"), &finish_chunk("stop"), DONE])
        } else {
            Reply::sse(&[&call(n), &finish_chunk("tool_calls"), DONE])
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let ask = |messages: Vec<Value>| {
        app.post("/v1/chat/completions")
            .bearer_auth("k")
            .json(&json!({"model": "mock-model", "messages": messages,
                "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]}))
            .send()
    };
    let first = vec![user("list the files")];
    let response = ask(first.clone()).await.unwrap();
    let id = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer: Value = response.json().await.unwrap();
    let message = answer["choices"][0]["message"].clone();
    let call_id = message["tool_calls"][0]["id"].as_str().unwrap().to_owned();

    let mut second = first.clone();
    second.extend([
        message,
        json!({"role": "tool", "tool_call_id": call_id, "content": "a.txt"}),
    ]);
    let response = ask(second).await.unwrap();
    assert_eq!(response.headers()["x-conversation-id"], id.as_str());
    // A new session asking the same gets its own conversation.
    let response = ask(first).await.unwrap();
    assert_ne!(response.headers()["x-conversation-id"], id.as_str());
}
