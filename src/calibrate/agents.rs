//! `calibrate pi`, `calibrate qwen-code`, `calibrate mini-swe-agent` and `calibrate claude-code`
//! (its own module, `claude_code`): the same capture endpoint,
//! pointed at by a real pi, Qwen Code or mini-swe-agent, turned into the prompt files of the harness of that name (`prompts/<harness>/`), the
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
    fn main(self, captures: &[Capture]) -> Option<&Value> {
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

/// The task `how_to_point` gives mini-swe-agent, found again in its first turn.
const MINI_TASK: &str = "say hi";
const MINI_INFO_OPEN: &str = "<system_information>\n";
const MINI_INFO_CLOSE: &str = "\n</system_information>";

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
fn hole_between(
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

/// Rewrites the captured request with the prompts under `dir` through the agent's harness, the
/// agent itself as the client, and says where the system text, Qwen Code's setup turn and reply,
/// or the tools differ from what the agent sent (nothing: the harness speaks as this agent does;
/// Qwen Code's folder listing is not compared, the proxy never lists the client's disk).
pub fn check(agent: Agent, dir: &Path, captures: &[Capture], host: HostInfo) -> Vec<String> {
    if agent == Agent::ClaudeCode {
        return super::claude_code::check(dir, captures, host);
    }
    let Some(main) = agent.main(captures) else {
        return vec!["no main request to check".to_owned()];
    };
    let harness = match build_harness(agent.harness(), dir, host, &Config::default()) {
        Ok(harness) => harness,
        Err(err) => return vec![err],
    };
    let mut client_request = main.clone();
    if agent == Agent::MiniSweAgent {
        // Its first turn is already its template around the task: the harness is given the
        // task alone, as any other client would send it.
        client_request["messages"][1]["content"] = Value::from(MINI_TASK);
    }
    let body = match serde_json::to_vec(&client_request) {
        Ok(body) => bytes::Bytes::from(body),
        Err(err) => {
            return vec![format!(
                "the captured request cannot be written again: {err}"
            )];
        }
    };
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
    let upto = match agent {
        Agent::Pi => 1,
        Agent::MiniSweAgent => 2,
        Agent::QwenCode => 3,
        Agent::ClaudeCode => 0,
    };
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
        if agent == Agent::MiniSweAgent && n == 1 {
            // `uname -srvm` of the agent's machine against `uname -s` of the client's platform:
            // the kernel version and machine are not in a request.
            for text in [&mut sent, &mut made] {
                *text = hole_between(
                    text,
                    MINI_INFO_OPEN,
                    MINI_INFO_CLOSE,
                    "system_information",
                    &mut Vec::new(),
                );
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

/// The harness `name` as the proxy builds it from `config` and the prompts under `dir`; what
/// went wrong, said, when it does not build.
pub(super) fn build_harness(
    name: &str,
    dir: &Path,
    host: HostInfo,
    config: &Config,
) -> Result<std::sync::Arc<dyn crate::harness::Harness>, String> {
    let prompts = crate::prompts::Prompts::load(Some(dir))
        .map_err(|err| format!("the written prompts do not load: {err}"))?;
    let profiles = crate::clients::profiles::Profiles::load(&[])
        .map_err(|err| format!("the harness does not build: {err}"))?;
    let registry = Registry::build(&Setup {
        config,
        prompts: &prompts,
        host,
        profiles,
    })
    .map_err(|err| format!("the harness does not build: {err}"))?;
    registry
        .get(name)
        .cloned()
        .ok_or_else(|| format!("no harness {name}"))
}

/// The run's own values, as the proxy's headers give them: its working directory and day.
fn run_values(agent: Agent, main: &Value) -> (http::HeaderMap, chrono::DateTime<chrono::Utc>) {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-harness-client",
        http::HeaderValue::from_static(agent.harness()),
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
        Agent::MiniSweAgent | Agent::ClaudeCode => {
            // Its request names no directory and no day; its platform is the system line's
            // first word, which the harness turns back into that word.
            let first = text_of(&main["messages"][1]);
            let platform = line_after(&first, MINI_INFO_OPEN)
                .and_then(|line| line.split_whitespace().next().map(str::to_lowercase));
            if let Some(value) = platform.and_then(|p| http::HeaderValue::from_str(&p).ok()) {
                headers.insert("x-harness-platform", value);
            }
            (None, None)
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

    /// A hand-made mini-swe-agent-shaped first turn and correction (not its words).
    #[test]
    fn mini_swe_agent_s_task_system_and_sed_spot_become_placeholders() {
        let first = "Solve: say hi\n<system_information>\nLinux 6.1 #1 SMP x86_64\n</system_information>\n### Use {{x}}:\n```sh\nls\n```\n### Edit with sed:```bash\nsed -i s/a/b/ f\n```";
        let tools = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]);
        let main = json!({"model": "m", "tools": tools, "messages": [
            {"role": "system", "content": "You help."},
            {"role": "user", "content": first}
        ]});
        let retry = json!({"model": "m", "tools": tools, "messages": [
            {"role": "system", "content": "You help."},
            {"role": "user", "content": first},
            {"role": "user", "content": "Call a tool."}
        ]});
        let captures = vec![
            Capture {
                path: "/v1/chat/completions".into(),
                body: main,
            },
            Capture {
                path: "/v1/chat/completions".into(),
                body: retry,
            },
        ];
        assert!(
            !Agent::MiniSweAgent.done(&captures[..1]),
            "its correction turn is awaited"
        );
        assert!(Agent::MiniSweAgent.done(&captures));
        let files = Agent::MiniSweAgent.extract(&captures).expect("extracts");
        let file = |name: &str| {
            files
                .files
                .iter()
                .find(|(p, _)| *p == name)
                .map(|(_, t)| t.clone())
        };
        assert_eq!(file("system.md").as_deref(), Some("You help.\n"));
        assert_eq!(
            file("initial.md").as_deref(),
            Some(
                "Solve: {{task}}\n<system_information>\n{{system_information}}\n</system_information>\n### Use {{{{x}}}}:\n```sh\nls\n```\n### Edit with sed:{{sed_note}}```bash\nsed -i s/a/b/ f\n```\n"
            )
        );
        assert_eq!(file("no_tool_call.md").as_deref(), Some("Call a tool.\n"));
        assert_eq!(file("sed_note.md"), None, "a Linux capture holds no note");
        assert!(
            files
                .notes
                .iter()
                .any(|n| n.contains("sed_note.md is not written")),
            "{:?}",
            files.notes
        );
    }

    #[test]
    fn a_macos_capture_gives_the_sed_note_its_own_file() {
        let first = "Do say hi\n<system_information>\nDarwin 24.0 x\n</system_information>\n### Edit with sed:<important>\nmac\n</important>```bash\nsed\n```";
        let (initial, note) = mini_initial(first, &mut Vec::new());
        assert_eq!(note.as_deref(), Some("<important>\nmac\n</important>"));
        assert!(
            initial.contains("### Edit with sed:{{sed_note}}```bash"),
            "{initial}"
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
