//! `calibrate pi`, `calibrate qwen-code`, `calibrate mini-swe-agent` and `calibrate claude-code`
//! (its own module, `claude_code`): the same capture endpoint, pointed at by a real pi, Qwen Code
//! or mini-swe-agent, turned into the prompt files of the harness of that name
//! (`prompts/<harness>/`), the values of this run (date, working directory, OS, listing) turned
//! back into the harness's placeholders. The check that the harness, given those files, rewrites
//! the captured request to the system text and tools the agent sent is `agents_check`.
//!
//! Pure text work.

use serde_json::Value;

use super::extract::Capture;

/// An agent whose harness can be calibrated from it (besides opencode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Pi,
    QwenCode,
    MiniSweAgent,
    ClaudeCode,
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
    #[error(
        "Claude Code's prompt has no `{0}` section: it cannot be split into the harness's files"
    )]
    NoSection(&'static str),
    #[error("a captured text holds Claude Code's billing line: nothing is written")]
    BillingLine,
}

impl Agent {
    pub fn harness(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::QwenCode => "qwen-code",
            Self::MiniSweAgent => "mini-swe-agent",
            Self::ClaudeCode => "claude-code",
        }
    }

    /// The base URL the agent is told: Claude Code adds `/v1/messages` itself, the others are
    /// given the `/v1` their Chat Completions paths follow.
    pub fn base_url(self, addr: std::net::SocketAddr, token: &str) -> String {
        match self {
            Self::ClaudeCode => format!("http://{addr}/{token}"),
            _ => format!("http://{addr}/{token}/v1"),
        }
    }

    /// When the capture holds what this agent's calibration needs (a plain `fn`, as the capture
    /// endpoint keeps it).
    pub fn done_fn(self) -> fn(&[Capture]) -> bool {
        match self {
            Self::Pi => |c| Self::Pi.done(c),
            Self::QwenCode => |c| Self::QwenCode.done(c),
            Self::MiniSweAgent => |c| Self::MiniSweAgent.done(c),
            Self::ClaudeCode => super::claude_code::done,
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
            Self::MiniSweAgent => format!(
                "  run `MSWEA_CONFIGURED=true MSWEA_COST_TRACKING=ignore_errors OPENAI_API_BASE={base} OPENAI_API_KEY=x mini -m openai/m -t \"{MINI_TASK}\" -y --exit-immediately </dev/null`\n  in an empty directory; calibrate answers without a tool call, so mini-swe-agent also sends its\n  correction turn; stops once it did (or on Ctrl-C). mini-swe-agent then retries against the\n  closed endpoint: end it with Ctrl-C"
            ),
            Self::ClaudeCode => super::claude_code::how_to_point(base),
        }
    }

    /// The agent's main request among the captures: tools, and its system text.
    pub(super) fn main(self, captures: &[Capture]) -> Option<&Value> {
        captures.iter().map(|c| &c.body).find(|body| {
            let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
            let system = body["messages"][0]["role"] == "system";
            tools
                && system
                && match self {
                    Self::Pi => text_of(&body["messages"][0]).contains(PI_CWD),
                    Self::QwenCode => text_of(&body["messages"][1]).contains(QWEN_DATE),
                    Self::MiniSweAgent => is_mini_main(body),
                    Self::ClaudeCode => false,
                }
        })
    }

    /// Whether the capture has what this agent's calibration needs: for mini-swe-agent also its
    /// correction turn, sent after calibrate's answer without a tool call.
    pub fn done(self, captures: &[Capture]) -> bool {
        if self == Self::ClaudeCode {
            return super::claude_code::done(captures);
        }
        self.main(captures).is_some()
            && (self != Self::MiniSweAgent || mini_correction(captures).is_some())
    }

    pub fn extract(self, captures: &[Capture]) -> Result<AgentFiles, AgentError> {
        if self == Self::ClaudeCode {
            return super::claude_code::extract(captures);
        }
        let main = self.main(captures).ok_or(match self {
            Self::Pi => {
                AgentError::NoMainRequest("pi", "a system text naming `Current working directory:`")
            }
            Self::QwenCode => {
                AgentError::NoMainRequest("Qwen Code", "its setup turn naming `Today's date is`")
            }
            Self::MiniSweAgent | Self::ClaudeCode => AgentError::NoMainRequest(
                "mini-swe-agent",
                "its first turn holding the task `say hi` and `<system_information>`",
            ),
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
            Self::MiniSweAgent | Self::ClaudeCode => mini_files(main, captures, tools, &mut notes),
        };
        Ok(AgentFiles { files, notes })
    }
}

pub(super) const PI_DATE: &str = "\nCurrent date: ";
pub(super) const PI_CWD: &str = "\nCurrent working directory: ";
pub(super) const QWEN_DATE: &str = "Today's date is ";
pub(super) const QWEN_DATE_END: &str = " (formatted";
pub(super) const QWEN_OS: &str = "My operating system is: ";
pub(super) const QWEN_CWD: &str = "I'm currently working in the directory: ";

/// A message's text: a string, or its text parts joined.
pub(super) fn text_of(message: &Value) -> String {
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

/// The task `how_to_point` gives mini-swe-agent, found again in its first turn.
pub(super) const MINI_TASK: &str = "say hi";
pub(super) const MINI_INFO_OPEN: &str = "<system_information>\n";
pub(super) const MINI_INFO_CLOSE: &str = "\n</system_information>";

/// mini-swe-agent's first request: a system line and one user turn, its task wrapped.
fn is_mini_main(body: &Value) -> bool {
    let first = text_of(&body["messages"][1]);
    body["messages"].as_array().is_some_and(|m| m.len() == 2)
        && first.contains(MINI_TASK)
        && first.contains(MINI_INFO_OPEN)
}

/// The turn mini-swe-agent sent after an answer without a tool call: the last user turn of a
/// later request of the same conversation.
fn mini_correction(captures: &[Capture]) -> Option<String> {
    captures.iter().map(|c| &c.body).find_map(|body| {
        let messages = body["messages"].as_array()?;
        let last = messages.last()?;
        (messages.len() > 2
            && last["role"] == "user"
            && text_of(&messages[1]).contains(MINI_INFO_OPEN))
        .then(|| text_of(last))
    })
}

/// mini-swe-agent's files: its system line; its first turn with the task, the system information
/// and the macOS `sed` note turned into placeholders; its correction turn; its tools.
fn mini_files(
    main: &Value,
    captures: &[Capture],
    tools: String,
    notes: &mut Vec<String>,
) -> Vec<(&'static str, String)> {
    let mut files = vec![(
        "system.md",
        format!("{}\n", escape(&text_of(&main["messages"][0]))),
    )];
    let (initial, sed_note) = mini_initial(&text_of(&main["messages"][1]), notes);
    files.push(("initial.md", initial));
    if let Some(note) = sed_note {
        files.push(("sed_note.md", format!("{note}\n")));
    }
    match mini_correction(captures) {
        Some(turn) => files.push(("no_tool_call.md", format!("{}\n", escape(&turn)))),
        None => notes.push(
            "no correction turn was captured: no_tool_call.md is not written (the built-in stays)"
                .to_owned(),
        ),
    }
    files.push(("tools.json", tools));
    files
}

/// The first turn as the harness's template: `{{task}}`, `{{system_information}}` (the proxy
/// fills it with `uname -s` of the client's platform; the agent's kernel version and machine
/// are not in a request), and `{{sed_note}}` where the macOS note goes, right before the fence
/// under the `sed` heading (captured on macOS, the note itself becomes `sed_note.md`).
fn mini_initial(first: &str, notes: &mut Vec<String>) -> (String, Option<String>) {
    let mut text = escape(first).replacen(MINI_TASK, "{{task}}", 1);
    text = hole_between(
        &text,
        MINI_INFO_OPEN,
        MINI_INFO_CLOSE,
        "system_information",
        notes,
    );
    let heading = text
        .match_indices("\n### ")
        .map(|(at, _)| at + 1)
        .find(|&at| {
            text[at..]
                .lines()
                .next()
                .is_some_and(|l| l.contains(" sed"))
        });
    let Some(heading) = heading else {
        notes.push(
            "no heading naming `sed` was found: {{sed_note}} is not in initial.md".to_owned(),
        );
        return (format!("{text}\n"), None);
    };
    let line_end = text[heading..]
        .find(':')
        .map_or(heading, |n| heading + n + 1);
    let Some(fence) = text[line_end..].find("```").map(|n| line_end + n) else {
        notes
            .push("no fence under the `sed` heading: {{sed_note}} is not in initial.md".to_owned());
        return (format!("{text}\n"), None);
    };
    let between = &text[line_end..fence];
    let sed_note = if between.trim().is_empty() {
        notes.push("the capture holds no macOS `sed` note (not run on macOS): sed_note.md is not written, the built-in stays".to_owned());
        None
    } else {
        Some(between.to_owned())
    };
    let initial = format!("{}{{{{sed_note}}}}{}\n", &text[..line_end], &text[fence..]);
    (initial, sed_note)
}

/// The text between `open` and `close`, replaced by `{{hole}}`.
pub(super) fn hole_between(
    text: &str,
    open: &str,
    close: &str,
    hole: &str,
    notes: &mut Vec<String>,
) -> String {
    let found = text.find(open).and_then(|at| {
        let start = at + open.len();
        text[start..].find(close).map(|n| (start, start + n))
    });
    match found {
        Some((start, stop)) => format!("{}{{{{{hole}}}}}{}", &text[..start], &text[stop..]),
        None => {
            notes.push(format!(
                "`{}` was not found: {{{{{hole}}}}} is not in the file",
                open.trim()
            ));
            text.to_owned()
        }
    }
}

fn tools_file(main: &Value) -> Result<String, AgentError> {
    let tools = main["tools"].as_array().ok_or(AgentError::BadTools)?;
    let mut text = serde_json::to_string_pretty(tools).map_err(|_| AgentError::BadTools)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
#[path = "agents_tests.rs"]
mod tests;
