//! `calibrate pi` and `calibrate qwen-code`: the same capture endpoint, pointed at by a real pi or
//! Qwen Code, turned into the prompt files of the harness of that name (`prompts/<harness>/`), the
//! values of this run (date, working directory, OS, listing) turned back into the harness's
//! placeholders; then the check that the harness, given those files, rewrites the captured request
//! to the system text and tools the agent sent.
//!
//! Pure text work but for `check`, which builds the harness from the written directory.

use std::path::Path;

use serde_json::Value;

use super::extract::Capture;
use crate::config::Config;
use crate::harness::opencode::tools::HostInfo;
use crate::harness::{HarnessRequest, Registry, Setup};

/// An agent whose harness can be calibrated from it (besides opencode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Pi,
    QwenCode,
}

/// The files one calibration makes, by path under the harness's folder, and what to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFiles {
    pub files: Vec<(&'static str, String)>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    #[error("no main request of {0} was captured (a request with tools and {1})")]
    NoMainRequest(&'static str, &'static str),
    #[error("the main request's tools are not a list")]
    BadTools,
}

impl Agent {
    pub fn harness(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::QwenCode => "qwen-code",
        }
    }

    /// How to point the agent at the capture endpoint.
    pub fn how_to_point(self, base: &str) -> String {
        match self {
            Self::Pi => format!(
                "  add a provider to ~/.pi/agent/models.json: {{\"providers\":{{\"calibrate\":{{\"baseUrl\":\"{base}\",\"api\":\"openai-completions\",\"apiKey\":\"x\",\"models\":[{{\"id\":\"m\"}}]}}}}}}\n  run `pi --model calibrate/m -p \"say hi\"` in an empty directory; stops once pi sent its request (or on Ctrl-C)"
            ),
            Self::QwenCode => format!(
                "  run `OPENAI_BASE_URL={base} OPENAI_API_KEY=x OPENAI_MODEL=m qwen -p \"say hi\"` in an empty directory;\n  stops once Qwen Code sent its request (or on Ctrl-C)"
            ),
        }
    }

    /// The agent's main request among the captures: tools, and its system text.
    fn main(self, captures: &[Capture]) -> Option<&Value> {
        captures.iter().map(|c| &c.body).find(|body| {
            let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
            let system = body["messages"][0]["role"] == "system";
            tools
                && system
                && match self {
                    Self::Pi => text_of(&body["messages"][0]).contains(PI_CWD),
                    Self::QwenCode => text_of(&body["messages"][1]).contains(QWEN_DATE),
                }
        })
    }

    /// Whether the capture has what this agent's calibration needs.
    pub fn done(self, captures: &[Capture]) -> bool {
        self.main(captures).is_some()
    }

    pub fn extract(self, captures: &[Capture]) -> Result<AgentFiles, AgentError> {
        let main = self.main(captures).ok_or(match self {
            Self::Pi => {
                AgentError::NoMainRequest("pi", "a system text naming `Current working directory:`")
            }
            Self::QwenCode => {
                AgentError::NoMainRequest("Qwen Code", "its setup turn naming `Today's date is`")
            }
        })?;
        let tools = tools_file(main)?;
        let mut notes = Vec::new();
        let files = match self {
            Self::Pi => vec![
                (
                    "system.md",
                    pi_system(&text_of(&main["messages"][0]), &mut notes),
                ),
                ("tools.json", tools),
            ],
            Self::QwenCode => {
                let system = escape(&text_of(&main["messages"][0]));
                notes.push("Qwen Code's prompt may name this machine's paths (its memory file): they are left as captured".to_owned());
                vec![
                    ("system.md", format!("{system}\n")),
                    (
                        "setup.md",
                        qwen_setup(&text_of(&main["messages"][1]), &mut notes),
                    ),
                    (
                        "setup_reply.md",
                        format!("{}\n", escape(&text_of(&main["messages"][2]))),
                    ),
                    ("tools.json", tools),
                ]
            }
        };
        Ok(AgentFiles { files, notes })
    }
}

const PI_DATE: &str = "\nCurrent date: ";
const PI_CWD: &str = "\nCurrent working directory: ";
const QWEN_DATE: &str = "Today's date is ";
const QWEN_DATE_END: &str = " (formatted";
const QWEN_OS: &str = "My operating system is: ";
const QWEN_CWD: &str = "I'm currently working in the directory: ";

/// A message's text: a string, or its text parts joined.
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// `{{` and `}}` as the template syntax writes them literally.
fn escape(text: &str) -> String {
    text.replace("{{", "{{{{").replace("}}", "}}}}")
}

/// The value after `label` up to the end of its line, replaced by `{{hole}}`.
fn hole_after(text: &str, label: &str, end: &str, hole: &str, notes: &mut Vec<String>) -> String {
    let Some(at) = text.find(label) else {
        notes.push(format!(
            "`{}` was not found: {{{{{hole}}}}} is not in the file",
            label.trim()
        ));
        return text.to_owned();
    };
    let start = at + label.len();
    let stop = text[start..].find(end).map_or(text.len(), |n| start + n);
    format!("{}{{{{{hole}}}}}{}", &text[..start], &text[stop..])
}

/// pi's prompt: its last two lines hold the day and the working directory.
fn pi_system(system: &str, notes: &mut Vec<String>) -> String {
    let text = escape(system);
    let text = hole_after(&text, PI_DATE, "\n", "date", notes);
    let text = hole_after(&text, PI_CWD, "\n", "cwd", notes);
    if text.contains("/node_modules/") {
        notes.push("pi's prompt names where pi is installed on this machine (its docs paths): left as captured".to_owned());
    }
    format!("{text}\n")
}

/// Qwen Code's setup turn: the day, the OS, the working directory, then its listing to the end.
fn qwen_setup(setup: &str, notes: &mut Vec<String>) -> String {
    let cwd = setup.find(QWEN_CWD).map(|at| {
        setup[at + QWEN_CWD.len()..]
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    });
    let text = escape(setup);
    let text = hole_after(&text, QWEN_DATE, QWEN_DATE_END, "today", notes);
    let text = hole_after(&text, QWEN_OS, "\n", "operating_system", notes);
    let mut text = hole_after(&text, QWEN_CWD, "\n", "cwd_display", notes);
    // The listing starts at the line naming the working directory with a slash.
    match cwd.and_then(|cwd| text.find(&format!("\n{}/", escape(&cwd)))) {
        Some(at) => text = format!("{}\n{{{{folder_listing}}}}", &text[..at]),
        None => notes.push(
            "the folder listing was not found: {{folder_listing}} is not in setup.md".to_owned(),
        ),
    }
    format!("{text}\n")
}

fn tools_file(main: &Value) -> Result<String, AgentError> {
    let tools = main["tools"].as_array().ok_or(AgentError::BadTools)?;
    let mut text = serde_json::to_string_pretty(tools).map_err(|_| AgentError::BadTools)?;
    text.push('\n');
    Ok(text)
}

/// Rewrites the captured request with the prompts under `dir` through the agent's harness, the
/// agent itself as the client, and says where the system text, Qwen Code's setup turn and reply,
/// or the tools differ from what the agent sent (nothing: the harness speaks as this agent does;
/// Qwen Code's folder listing is not compared, the proxy never lists the client's disk).
pub fn check(agent: Agent, dir: &Path, captures: &[Capture], host: HostInfo) -> Vec<String> {
    let Some(main) = agent.main(captures) else {
        return vec!["no main request to check".to_owned()];
    };
    let prompts = match crate::prompts::Prompts::load(Some(dir)) {
        Ok(prompts) => prompts,
        Err(err) => return vec![format!("the written prompts do not load: {err}")],
    };
    let config = Config::default();
    let registry = match crate::clients::profiles::Profiles::load(&[])
        .map_err(|e| e.to_string())
        .and_then(|profiles| {
            Registry::build(&Setup {
                config: &config,
                prompts: &prompts,
                host,
                profiles,
            })
            .map_err(|e| e.to_string())
        }) {
        Ok(registry) => registry,
        Err(err) => return vec![format!("the harness does not build: {err}")],
    };
    let Some(harness) = registry.get(agent.harness()) else {
        return vec![format!("no harness {}", agent.harness())];
    };
    let body = bytes::Bytes::from(serde_json::to_vec(main).unwrap_or_default());
    let Ok(conversation) = crate::protocols::chat::request::parse_conversation(&body) else {
        return vec!["the captured request does not parse".to_owned()];
    };
    let (headers, now) = run_values(agent, main);
    let Ok(prepared) = harness.prepare(HarnessRequest {
        conversation,
        chat_body: Some(&body),
        headers: &headers,
        now,
    }) else {
        return vec!["the harness refused the captured request".to_owned()];
    };
    let rewritten: Value = serde_json::from_slice(&prepared.upstream_body).unwrap_or_default();
    let mut differences = Vec::new();
    let upto = if agent == Agent::QwenCode { 3 } else { 1 };
    for n in 0..upto {
        let (mut sent, mut made) = (
            text_of(&main["messages"][n]),
            text_of(&rewritten["messages"][n]),
        );
        if agent == Agent::QwenCode && n == 1 {
            // The listing under the working directory's line is the client's disk, which the
            // proxy never reads: only what comes before it is compared.
            for text in [&mut sent, &mut made] {
                if let Some(cwd) = line_after(text, QWEN_CWD)
                    && let Some(at) = text.find(&format!("\n{cwd}/"))
                {
                    text.truncate(at);
                }
            }
        }
        if sent != made {
            differences.push(format!(
                "message {n} ({}) differs",
                main["messages"][n]["role"]
            ));
        }
    }
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    if names(&rewritten) != names(main) {
        differences.push(format!(
            "tools: the harness offered {:?}",
            names(&rewritten)
        ));
    }
    differences
}

/// The run's own values, as the proxy's headers give them: its working directory and day.
fn run_values(agent: Agent, main: &Value) -> (http::HeaderMap, chrono::DateTime<chrono::Utc>) {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-harness-client",
        http::HeaderValue::from_static(match agent {
            Agent::Pi => "pi",
            Agent::QwenCode => "qwen-code",
        }),
    );
    let (cwd, date) = match agent {
        Agent::Pi => {
            let system = text_of(&main["messages"][0]);
            (
                line_after(&system, PI_CWD),
                line_after(&system, PI_DATE)
                    .and_then(|d| chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()),
            )
        }
        Agent::QwenCode => {
            let setup = text_of(&main["messages"][1]);
            let date = setup.find(QWEN_DATE).and_then(|at| {
                let rest = &setup[at + QWEN_DATE.len()..];
                let end = rest.find(QWEN_DATE_END).unwrap_or(rest.len());
                chrono::NaiveDate::parse_from_str(&rest[..end], "%A, %B %-d, %Y").ok()
            });
            (line_after(&setup, QWEN_CWD), date)
        }
    };
    if let Some(value) = cwd.and_then(|c| http::HeaderValue::from_str(&c).ok()) {
        headers.insert("x-harness-cwd", value);
    }
    if let Some(value) =
        date.and_then(|d| http::HeaderValue::from_str(&d.format("%a %b %-d %Y").to_string()).ok())
    {
        headers.insert("x-harness-date", value);
    }
    let now = date
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .map_or_else(chrono::Utc::now, |t| t.and_utc());
    (headers, now)
}

fn line_after(text: &str, label: &str) -> Option<String> {
    let at = text.find(label)? + label.len();
    Some(text[at..].lines().next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn capture(body: Value) -> Vec<Capture> {
        vec![Capture {
            path: "/v1/chat/completions".into(),
            body,
        }]
    }

    /// A hand-made pi-shaped request (not a copy of pi's prompt).
    #[test]
    fn pi_s_day_and_working_directory_become_placeholders() {
        let body = json!({"model": "m", "messages": [
            {"role": "system", "content": "You are Acme.\nUse {{braces}} literally.\nCurrent date: 2026-12-02\nCurrent working directory: /home/ann/app"},
            {"role": "user", "content": [{"type": "text", "text": "say hi"}]}
        ], "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}, "strict": false}}]});
        let files = Agent::Pi.extract(&capture(body)).expect("extracts");
        assert_eq!(files.files[0], ("system.md", "You are Acme.\nUse {{{{braces}}}} literally.\nCurrent date: {{date}}\nCurrent working directory: {{cwd}}\n".to_owned()));
        assert!(files.files[1].1.contains("\"strict\": false"));
    }

    /// A hand-made Qwen-shaped setup turn (not Qwen Code's words).
    #[test]
    fn qwen_code_s_setup_turn_becomes_its_template() {
        let setup = "Setting up.\nToday's date is Wednesday, December 2, 2026 (formatted for you).\nMy operating system is: linux\nI'm currently working in the directory: /w\nListing:\n\n/w/\n└───README.md";
        let body = json!({"model": "m", "messages": [
            {"role": "system", "content": "You are Acme."},
            {"role": "user", "content": [{"type": "text", "text": setup}]},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "say hi"}
        ], "tools": [{"type": "function", "function": {"name": "glob", "parameters": {"type": "object"}}}]});
        let files = Agent::QwenCode.extract(&capture(body)).expect("extracts");
        let setup = &files
            .files
            .iter()
            .find(|(p, _)| *p == "setup.md")
            .expect("setup")
            .1;
        assert_eq!(
            setup,
            "Setting up.\nToday's date is {{today}} (formatted for you).\nMy operating system is: {{operating_system}}\nI'm currently working in the directory: {{cwd_display}}\nListing:\n\n{{folder_listing}}\n"
        );
        assert_eq!(
            files
                .files
                .iter()
                .find(|(p, _)| *p == "setup_reply.md")
                .expect("reply")
                .1,
            "Noted.\n"
        );
    }

    #[test]
    fn without_the_agent_s_main_request_it_says_what_it_looked_for() {
        let err = Agent::Pi
            .extract(&capture(json!({"messages": []})))
            .expect_err("nothing");
        assert!(
            err.to_string().contains("Current working directory:"),
            "{err}"
        );
    }
}
