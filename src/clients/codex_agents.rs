//! Codex's sub-agents (0.171, the `multi_agent_v1` tools; captured, docs/agents.md): one sub-agent
//! is two calls on Codex's side, where a harness's sub-agent tool (opencode's `task`) is one. The
//! model's call goes out as `spawn_agent{message}`, whose result names the agent
//! (`{"agent_id": …, "nickname": …}`); the proxy then answers Codex itself, without the upstream,
//! with `wait_agent{targets}` (`pending_wait`), again while a wait times out; and the history folds
//! the pair back into the one call whose result is the sub-agent's answer (`fold`), the waits and
//! Codex's `<subagent_notification>` gone. Without the wait, `codex exec` ends before its
//! sub-agent does.
//!
//! Owns: the pair's structure. Must not: know a harness or a wire.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::subagent::LocalCall;
use crate::conversation::{Content, Item, Role, ToolResult};

/// Codex's tool that starts a sub-agent.
pub const SPAWN: &str = "spawn_agent";
/// Codex's tool that waits for sub-agents' answers.
pub const WAIT: &str = "wait_agent";
/// The longest wait Codex allows (its schema: at most 3 600 000 ms).
const WAIT_MS: u64 = 3_600_000;

/// The wait to answer with now: the conversation ends on results, and a spawned sub-agent's
/// answer has not come back yet.
pub fn pending_wait(items: &[Item]) -> Option<LocalCall> {
    // Only right after results: a turn that ends on the user's words or an answer is not ours.
    let tail_is_result = items
        .iter()
        .rev()
        .find(|item| !is_notification(item))
        .is_some_and(|item| matches!(item, Item::ToolResult(_)));
    if !tail_is_result {
        return None;
    }
    let pairs = Pairs::read(items);
    let waiting: Vec<&str> = pairs
        .spawned
        .iter()
        .map(|(_, agent)| agent.as_str())
        .filter(|agent| !pairs.answers.contains_key(*agent))
        .collect();
    if waiting.is_empty() {
        return None;
    }
    let seed = format!("{}\0{}", waiting.join(","), pairs.waits.len());
    let digest = Sha256::digest(seed.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    Some(LocalCall {
        id: format!("call_wait_{hex}"),
        name: WAIT.to_owned(),
        arguments: json!({"targets": waiting, "timeout_ms": WAIT_MS}).to_string(),
    })
}

/// The history with each spawn's result replaced by its sub-agent's answer (a final state that
/// is not an answer, such as an error, as its JSON), and the waits, their results and Codex's
/// notifications left out.
pub fn fold(items: Vec<Item>) -> Vec<Item> {
    let pairs = Pairs::read(&items);
    if pairs.spawned.is_empty() && pairs.waits.is_empty() {
        return items;
    }
    let agent_of: HashMap<&str, &str> = pairs
        .spawned
        .iter()
        .map(|(call, agent)| (call.as_str(), agent.as_str()))
        .collect();
    let mut out = Vec::with_capacity(items.len());
    for item in &items {
        match item {
            Item::ToolCall(call)
                if call
                    .id
                    .as_deref()
                    .is_some_and(|id| pairs.waits.contains(id)) => {}
            Item::ToolResult(result)
                if result
                    .call_id
                    .as_deref()
                    .is_some_and(|id| pairs.waits.contains(id)) => {}
            item if is_notification(item) => {}
            Item::ToolResult(result) => {
                let answer = result
                    .call_id
                    .as_deref()
                    .and_then(|id| agent_of.get(id))
                    .and_then(|agent| pairs.answers.get(*agent));
                match answer {
                    Some(answer) => out.push(Item::ToolResult(ToolResult {
                        call_id: result.call_id.clone(),
                        content: Content::Text(answer.clone()),
                        is_error: result.is_error,
                    })),
                    None => out.push(item.clone()),
                }
            }
            item => out.push(item.clone()),
        }
    }
    out
}

/// What a history says of its sub-agents.
#[derive(Default)]
struct Pairs {
    /// (spawn call id, agent id), in order.
    spawned: Vec<(String, String)>,
    /// The ids of the wait calls.
    waits: HashSet<String>,
    /// Agent id → its final answer (or final state's JSON).
    answers: HashMap<String, String>,
}

impl Pairs {
    fn read(items: &[Item]) -> Self {
        let mut pairs = Self::default();
        let mut names: HashMap<&str, &str> = HashMap::new();
        for item in items {
            match item {
                Item::ToolCall(call) => {
                    if let Some(id) = call.id.as_deref() {
                        names.insert(id, call.name.as_str());
                        if call.name == WAIT {
                            pairs.waits.insert(id.to_owned());
                        }
                    }
                }
                Item::ToolResult(result) => {
                    let Some(id) = result.call_id.as_deref() else {
                        continue;
                    };
                    match names.get(id).copied() {
                        Some(SPAWN) => {
                            if let Some(agent) = spawned_agent(&result.text()) {
                                pairs.spawned.push((id.to_owned(), agent));
                            }
                        }
                        Some(WAIT) => pairs.answers.extend(final_states(&result.text())),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        pairs
    }
}

/// `{"agent_id": "…", "nickname": "…"}` → the agent id.
fn spawned_agent(output: &str) -> Option<String> {
    let value: Value = serde_json::from_str(output).ok()?;
    value.get("agent_id")?.as_str().map(str::to_owned)
}

/// `{"status": {"<agent>": {"completed": "…"}}, "timed_out": false}` → (agent, answer) for every
/// agent in a final state: its answer when completed, the state's JSON otherwise (`errored`, …).
fn final_states(output: &str) -> Vec<(String, String)> {
    let Ok(value) = serde_json::from_str::<Value>(output) else {
        return Vec::new();
    };
    let Some(status) = value.get("status").and_then(Value::as_object) else {
        return Vec::new();
    };
    status
        .iter()
        .filter_map(|(agent, state)| {
            let answer = match state.get("completed") {
                Some(Value::String(answer)) => answer.clone(),
                Some(Value::Null) => String::new(),
                _ if state.as_str() == Some("running") || state.get("running").is_some() => {
                    return None;
                }
                _ => state.to_string(),
            };
            Some((agent.clone(), answer))
        })
        .collect()
}

/// Codex's `<subagent_notification>` user message, which follows a wait's result.
fn is_notification(item: &Item) -> bool {
    matches!(item, Item::Message(m) if m.role == Role::User
        && m.content.text().trim_start().starts_with("<subagent_notification>"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Message, ToolCall};

    fn call(id: &str, name: &str, arguments: &str) -> Item {
        Item::ToolCall(ToolCall {
            id: Some(id.into()),
            name: name.into(),
            input: CallInput::Arguments(arguments.into()),
        })
    }

    fn result(id: &str, text: &str) -> Item {
        Item::ToolResult(ToolResult {
            call_id: Some(id.into()),
            content: Content::Text(text.into()),
            is_error: false,
        })
    }

    fn spawned() -> Vec<Item> {
        vec![
            Item::Message(Message::text(Role::User, "find the files")),
            call("call_s", SPAWN, r#"{"message":"list the files"}"#),
            result("call_s", r#"{"agent_id":"01a2","nickname":"Nietzsche"}"#),
        ]
    }

    #[test]
    fn a_spawn_s_result_is_answered_with_a_wait_for_its_agent() {
        let wait = pending_wait(&spawned()).expect("a wait");
        assert_eq!(wait.name, "wait_agent");
        assert_eq!(
            serde_json::from_str::<Value>(&wait.arguments).expect("json"),
            json!({"targets": ["01a2"], "timeout_ms": 3_600_000})
        );
        assert!(wait.id.starts_with("call_wait_"));
        assert_eq!(pending_wait(&spawned()), Some(wait), "stable");
    }

    #[test]
    fn a_timed_out_wait_is_answered_with_another_until_the_answer_comes() {
        let mut items = spawned();
        items.push(call("call_w1", WAIT, r#"{"targets":["01a2"]}"#));
        items.push(result("call_w1", r#"{"status":{},"timed_out":true}"#));
        let again = pending_wait(&items).expect("another wait");
        assert_ne!(Some(&again), pending_wait(&spawned()).as_ref(), "a new id");
        items.push(call("call_w2", WAIT, r#"{"targets":["01a2"]}"#));
        items.push(result(
            "call_w2",
            r#"{"status":{"01a2":{"completed":"Found: a.txt\n  b.txt"}},"timed_out":false}"#,
        ));
        items.push(Item::Message(Message::text(
            Role::User,
            "<subagent_notification>\n{}\n</subagent_notification>",
        )));
        assert_eq!(pending_wait(&items), None, "answered");
        let folded = fold(items);
        assert_eq!(
            folded,
            vec![
                Item::Message(Message::text(Role::User, "find the files")),
                call("call_s", SPAWN, r#"{"message":"list the files"}"#),
                result("call_s", "Found: a.txt\n  b.txt"),
            ]
        );
    }

    #[test]
    fn a_turn_that_does_not_end_on_results_is_not_answered_here() {
        let mut items = spawned();
        items.push(Item::Message(Message::text(Role::User, "never mind")));
        assert_eq!(pending_wait(&items), None);
        let plain = vec![
            call("call_x", "exec_command", r#"{"cmd":"ls"}"#),
            result("call_x", "a.txt"),
        ];
        assert_eq!(pending_wait(&plain), None);
        assert_eq!(fold(plain.clone()), plain);
    }

    #[test]
    fn a_final_state_other_than_completed_is_the_answer_as_json() {
        let mut items = spawned();
        items.push(call("call_w", WAIT, "{}"));
        items.push(result(
            "call_w",
            r#"{"status":{"01a2":{"errored":"boom"}},"timed_out":false}"#,
        ));
        assert_eq!(pending_wait(&items), None);
        let folded = fold(items);
        assert_eq!(folded[2], result("call_s", r#"{"errored":"boom"}"#));
    }
}
