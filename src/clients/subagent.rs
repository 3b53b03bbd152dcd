//! A client's sub-agents, as the dialect layer sees them: how a sub-agent's requests are told
//! from its main thread's (`Markers`, a profile's `[subagent]` table: the headers and system
//! text each agent's sub-agents send, captured from the agents), and the neutral form of a
//! sub-agent's answer as it goes back to the model (`task_result`: opencode's task result, the
//! first harness's words).
//!
//! Owns: the markers and the result form. Must not: know a harness or a protocol.

use std::collections::BTreeMap;

use http::HeaderMap;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::conversation::Item;
use crate::conversation::action::{
    ActionReader, Answer, Attempts, HarnessCall, Retry, RetryKind, Verdict,
};

/// How one agent's sub-agent requests say what they are. Any marker that matches is enough;
/// none set: the agent's sub-agents are not told apart.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Markers {
    /// Header name → values that mark a sub-agent's request (empty: any value).
    #[serde(default)]
    pub headers: BTreeMap<String, Vec<String>>,
    /// How the agent's sub-agent system texts open (its main prompt opens otherwise).
    #[serde(default)]
    pub system_openings: Vec<String>,
    /// Tools only the agent's sub-agents are offered (Gemini CLI's `complete_task`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Client tools a sub-agent keeps beside the harness's: the one it must end with (Gemini
    /// CLI's `complete_task`, without which its answer never reaches the main thread).
    #[serde(default)]
    pub keep: Vec<String>,
    /// The collector of an agent whose sub-agent takes more than one call (`Collector`), by name.
    #[serde(default)]
    pub collect: Option<String>,
    /// The call a sub-agent must end with, made of its model's final words (`Finish`).
    #[serde(default)]
    pub finish: Option<Finish>,
}

/// The call an agent's sub-agent must end with, when its model answers in words instead (Gemini
/// CLI's `complete_task{result: {response}}`: a sub-agent that ends in text fails there, and a
/// harness's search agent, which answers in text, knows nothing of it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finish {
    pub tool: String,
    /// Where the words go in its arguments, key by key.
    pub path: Vec<String>,
}

/// The rule of a sub-agent's answers with a `Finish`: its model's calls go as they are; its
/// final words become the finishing call (delivered as any call, checked against the client's
/// schema); a finishing call the client cannot run gets one plain turn asking for it.
pub struct FinishReader {
    pub harness: &'static str,
    pub finish: Finish,
}

impl ActionReader for FinishReader {
    fn harness(&self) -> &'static str {
        self.harness
    }

    fn read(&self, answer: &Answer<'_>, _attempts: Attempts) -> Verdict {
        if !answer.calls.is_empty() {
            return Verdict::Calls;
        }
        let words = answer.text.trim();
        if words.is_empty() {
            return Verdict::Final;
        }
        let arguments = self.finish.path.iter().rev().fold(
            serde_json::Value::from(words),
            |inner, key| serde_json::json!({ key: inner }),
        );
        Verdict::Act(vec![HarnessCall {
            name: self.finish.tool.clone(),
            arguments: arguments.to_string(),
        }])
    }

    fn cannot_run(&self, _action: &HarnessCall) -> Retry {
        Retry {
            kind: RetryKind::Correction,
            keep_answer: true,
            turn: format!(
                "Finish by calling the `{}` tool with your answer.",
                self.finish.tool
            ),
            replaces_earlier: false,
        }
    }
}

/// A call the proxy makes on the client's side, in the client's own tool, without the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// For a client whose sub-agent is started by one call and collected by another (Codex's
/// `spawn_agent` and `wait_agent`): the collecting call the proxy makes itself when the history
/// waits for it, and the history with each pair folded into the one call whose result is the
/// sub-agent's answer.
#[derive(Debug)]
pub struct Collector {
    pub name: &'static str,
    pub pending: fn(&[Item]) -> Option<LocalCall>,
    pub fold: fn(Vec<Item>) -> Vec<Item>,
}

impl Markers {
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.system_openings.is_empty() && self.tools.is_empty()
    }

    /// Whether a request with these headers, system texts and offered tools is one of the
    /// agent's sub-agents'.
    pub fn matches(&self, headers: &HeaderMap, system_texts: &[&str], offered: &[&str]) -> bool {
        let by_header = self.headers.iter().any(|(name, values)| {
            headers.get_all(name.as_str()).iter().any(|value| {
                let value = value.to_str().unwrap_or_default().trim();
                values.is_empty() || values.iter().any(|v| v == value)
            })
        });
        by_header
            || offered
                .iter()
                .any(|tool| self.tools.iter().any(|t| t == tool))
            || system_texts.iter().any(|text| {
                let text = text.trim_start();
                self.system_openings
                    .iter()
                    .any(|opening| text.starts_with(opening.as_str()))
            })
    }
}

/// How a task result opens: the sub-agent's id, for a later resume.
const TASK_ID_OPENING: &str = "task_id: ";
const RESULT_OPEN: &str = "<task_result>";
const RESULT_CLOSE: &str = "</task_result>";

/// A sub-agent's id as the model sees it: `ses_` and 32 hex digits, stable for the client's call
/// that started it (its history carries the call id on every later turn).
pub fn task_id(call_id: &str) -> String {
    let digest = Sha256::digest(format!("subagent\0{call_id}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("ses_{hex}")
}

/// A sub-agent's answer in the neutral words: its id line, then the answer whole inside
/// `<task_result>` (opencode's form).
pub fn task_result(task_id: &str, answer: &str) -> String {
    format!(
        "{TASK_ID_OPENING}{task_id} (for resuming to continue this task if needed)\n\n{RESULT_OPEN}\n{}\n{RESULT_CLOSE}",
        answer.trim_end()
    )
}

/// Whether a result already is a task result (opencode's own `task` as the client): kept as it is.
pub fn is_task_result(text: &str) -> bool {
    text.starts_with(TASK_ID_OPENING)
        && text.contains(RESULT_OPEN)
        && text.trim_end().ends_with(RESULT_CLOSE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn a_header_or_a_system_opening_marks_a_sub_agent() {
        let markers: Markers = toml::from_str(
            r#"
            system_openings = ["You are a sub-agent"]
            [headers]
            x-openai-subagent = ["collab_spawn"]
            x-any = []
            "#,
        )
        .expect("markers");
        let mut headers = HeaderMap::new();
        assert!(!markers.matches(&headers, &["You are the main agent"], &["bash"]));
        assert!(markers.matches(
            &headers,
            &["main", "\n You are a sub-agent for search"],
            &[]
        ));
        headers.insert("x-openai-subagent", HeaderValue::from_static("review"));
        assert!(!markers.matches(&headers, &[], &[]), "another label");
        headers.insert(
            "x-openai-subagent",
            HeaderValue::from_static("collab_spawn"),
        );
        assert!(markers.matches(&headers, &[], &[]));
        let mut any = HeaderMap::new();
        any.insert("x-any", HeaderValue::from_static("whatever"));
        assert!(markers.matches(&any, &[], &[]));
        assert!(Markers::default().is_empty());
        assert!(!Markers::default().matches(&any, &["You are a sub-agent"], &[]));
        let by_tool: Markers = toml::from_str(r#"tools = ["complete_task"]"#).expect("markers");
        assert!(by_tool.matches(&HeaderMap::new(), &[], &["read_file", "complete_task"]));
        assert!(!by_tool.matches(&HeaderMap::new(), &[], &["read_file", "invoke_agent"]));
    }

    #[test]
    fn a_sub_agent_that_must_finish_with_a_call_gets_its_words_as_that_call() {
        let reader = FinishReader {
            harness: "opencode",
            finish: Finish {
                tool: "complete_task".into(),
                path: vec!["result".into(), "response".into()],
            },
        };
        let words = Answer {
            text: " Found: a.txt\n",
            calls: &[],
        };
        assert_eq!(
            reader.read(&words, Attempts::default()),
            Verdict::Act(vec![HarnessCall {
                name: "complete_task".into(),
                arguments: r#"{"result":{"response":"Found: a.txt"}}"#.into(),
            }])
        );
        let calls = [crate::conversation::action::AnswerCall {
            name: "read_file",
            arguments: "{}",
        }];
        let calling = Answer {
            text: "",
            calls: &calls,
        };
        assert_eq!(reader.read(&calling, Attempts::default()), Verdict::Calls);
        let nothing = Answer {
            text: " ",
            calls: &[],
        };
        assert_eq!(reader.read(&nothing, Attempts::default()), Verdict::Final);
    }

    #[test]
    fn the_task_result_names_a_stable_id_and_keeps_the_answer_whole() {
        let id = task_id("toolu_01");
        assert_eq!(id, task_id("toolu_01"), "stable");
        assert_ne!(id, task_id("toolu_02"));
        assert!(id.starts_with("ses_") && id.len() == 4 + 32, "{id}");
        let result = task_result(&id, "Found: a.txt\nand b.txt\n");
        assert_eq!(
            result,
            format!(
                "task_id: {id} (for resuming to continue this task if needed)\n\n<task_result>\nFound: a.txt\nand b.txt\n</task_result>"
            )
        );
        assert!(is_task_result(&result));
        assert!(!is_task_result("Found: a.txt"));
    }
}
