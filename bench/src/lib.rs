//! What the mock answers, named so that every target can ask for it: the scenario travels in the
//! upstream model name (`m-d64-p0-text`), because peers rewrite or drop client headers but always
//! forward a model name their config maps. Shared by the mock (which answers it) and the driver
//! (which asks for it and lists the names peers must know).

use std::fmt::Write as _;

/// What the upstream answer looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text deltas, one short word each.
    Text,
    /// One `bash` tool call whose arguments arrive in `deltas` pieces.
    Bash,
}

/// The shell tool a `Bash` answer calls: the one the request offers, so that every harness's
/// row measures its rebuild, not the proxy correcting a call to a tool it does not have
/// (DeepSeek-TUI's shell is `exec_shell {command}`, with no `description`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    ExecShell,
}

impl Shell {
    /// `exec_shell` when the request offers it (a byte scan, as cheap as the mock must be),
    /// else `bash`.
    pub fn offered(body: &[u8]) -> Self {
        if memchr::memmem::find(body, br#""name":"exec_shell""#).is_some() {
            Self::ExecShell
        } else {
            Self::Bash
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::ExecShell => "exec_shell",
        }
    }

    /// The arguments' last piece: `bash` takes a description, `exec_shell` none.
    fn last_piece(self) -> &'static str {
        match self {
            Self::Bash => r#"","description":"Prints a sentence"}"#,
            Self::ExecShell => r#""}"#,
        }
    }
}

/// One answer shape: how many deltas, how far apart, and what they carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub deltas: u32,
    /// Pause before each streamed event after the first, in microseconds (0: as fast as possible).
    pub pace_us: u64,
    pub kind: Kind,
    /// The tool a `Bash` answer calls (not in the model name: the mock reads it off the request).
    pub shell: Shell,
}

impl Scenario {
    pub const fn text(deltas: u32, pace_us: u64) -> Self {
        Self {
            deltas,
            pace_us,
            kind: Kind::Text,
            shell: Shell::Bash,
        }
    }

    pub const fn bash(deltas: u32) -> Self {
        Self {
            deltas,
            pace_us: 0,
            kind: Kind::Bash,
            shell: Shell::Bash,
        }
    }

    /// The upstream model name carrying this scenario.
    pub fn model(&self) -> String {
        let kind = match self.kind {
            Kind::Text => "text",
            Kind::Bash => "bash",
        };
        format!("m-d{}-p{}-{kind}", self.deltas, self.pace_us)
    }

    /// Reads a model name; anything else gets 64 unpaced text deltas.
    pub fn parse(model: &str) -> Self {
        let fallback = Self::text(64, 0);
        let mut parts = model.rsplit('/').next().unwrap_or(model).split('-');
        if parts.next() != Some("m") {
            return fallback;
        }
        let number = |part: Option<&str>, tag: char| {
            part.and_then(|p| p.strip_prefix(tag))
                .and_then(|p| p.parse::<u64>().ok())
        };
        let (Some(deltas), Some(pace_us)) = (number(parts.next(), 'd'), number(parts.next(), 'p'))
        else {
            return fallback;
        };
        let kind = match parts.next() {
            Some("bash") => Kind::Bash,
            _ => Kind::Text,
        };
        Self {
            deltas: u32::try_from(deltas.max(1)).unwrap_or(u32::MAX),
            pace_us,
            kind,
            shell: Shell::Bash,
        }
    }

    /// SSE events the mock sends for this scenario (role, deltas, finish, usage when asked, DONE).
    pub fn events(&self, model: &str, include_usage: bool) -> Vec<String> {
        let mut out = Vec::with_capacity(self.deltas as usize + 4);
        match self.kind {
            Kind::Text => {
                out.push(chunk(model, r#"{"role":"assistant","content":""}"#, "null"));
                for i in 0..self.deltas {
                    let delta = format!(r#"{{"content":"{} "}}"#, word(i));
                    out.push(chunk(model, &delta, "null"));
                }
                out.push(chunk(model, "{}", r#""stop""#));
            }
            Kind::Bash => {
                let pieces = bash_pieces(self.deltas, self.shell);
                let first = format!(
                    r#"{{"role":"assistant","content":null,"tool_calls":[{{"index":0,"id":"call_bench","type":"function","function":{{"name":"{}","arguments":{}}}}}]}}"#,
                    self.shell.name(),
                    json_string(&pieces[0])
                );
                out.push(chunk(model, &first, "null"));
                for piece in &pieces[1..] {
                    let delta = format!(
                        r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
                        json_string(piece)
                    );
                    out.push(chunk(model, &delta, "null"));
                }
                out.push(chunk(model, "{}", r#""tool_calls""#));
            }
        }
        if include_usage {
            out.push(format!(
                "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"{model}\",\"choices\":[],\"usage\":{}}}\n\n",
                self.usage()
            ));
        }
        out.push("data: [DONE]\n\n".to_owned());
        out
    }

    /// The same answer as one `chat.completion` JSON.
    pub fn completion(&self, model: &str) -> String {
        let message = match self.kind {
            Kind::Text => {
                let mut text = String::new();
                for i in 0..self.deltas {
                    let _ = write!(text, "{} ", word(i));
                }
                format!(r#"{{"role":"assistant","content":{}}}"#, json_string(&text))
            }
            Kind::Bash => format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_bench","type":"function","function":{{"name":"{}","arguments":{}}}}}]}}"#,
                self.shell.name(),
                json_string(&bash_pieces(self.deltas, self.shell).concat())
            ),
        };
        let finish = match self.kind {
            Kind::Text => "stop",
            Kind::Bash => "tool_calls",
        };
        format!(
            r#"{{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"{model}","system_fingerprint":"fp_bench","choices":[{{"index":0,"message":{message},"logprobs":null,"finish_reason":"{finish}"}}],"usage":{}}}"#,
            self.usage()
        )
    }

    fn usage(&self) -> String {
        format!(
            r#"{{"prompt_tokens":1200,"completion_tokens":{d},"total_tokens":{t}}}"#,
            d = self.deltas,
            t = 1200 + self.deltas
        )
    }
}

/// Every scenario the driver asks for, so peers' configs can name each model.
pub const SCENARIOS: &[Scenario] = &[
    Scenario::text(64, 0),
    Scenario::text(16, 0),
    Scenario::text(256, 0),
    Scenario::text(64, 1000),
    Scenario::text(1, 1000),
    Scenario::text(20, 50_000),
    Scenario::text(5, 20_000),
    Scenario::bash(64),
    Scenario::bash(256),
];

const WORDS: &[&str] = &[
    "The", "build", "passes", "now;", "I", "changed", "the", "parser", "so", "it", "keeps", "its",
    "buffer", "between", "calls.",
];

fn word(i: u32) -> &'static str {
    WORDS[i as usize % WORDS.len()]
}

/// The shell call's arguments cut into `n` pieces that concatenate to one JSON object.
fn bash_pieces(n: u32, shell: Shell) -> Vec<String> {
    let n = n.max(2) as usize;
    let mut pieces = Vec::with_capacity(n);
    pieces.push(r#"{"command":"echo"#.to_owned());
    for i in 0..n - 2 {
        pieces.push(format!(" {}", word(i as u32).trim_end_matches([';', '.'])));
    }
    pieces.push(shell.last_piece().to_owned());
    pieces
}

fn chunk(model: &str, delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"{model}\",\"system_fingerprint\":\"fp_bench\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
    )
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// The value of the first `"key": "…"` string in a JSON body, without parsing all of it (the
/// mock is the baseline every target is measured against, so it must stay cheap).
pub fn scan_string<'a>(body: &'a [u8], key: &str) -> Option<&'a str> {
    let needle = format!("\"{key}\"");
    let at = memchr::memmem::find(body, needle.as_bytes())? + needle.len();
    let rest = body[at..].trim_ascii_start().strip_prefix(b":")?;
    let rest = rest.trim_ascii_start().strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', rest)?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// Whether `"key": true` appears in a JSON body.
pub fn scan_true(body: &[u8], key: &str) -> bool {
    let needle = format!("\"{key}\"");
    memchr::memmem::find_iter(body, needle.as_bytes()).any(|at| {
        body[at + needle.len()..]
            .trim_ascii_start()
            .strip_prefix(b":")
            .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"true"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_round_trip() {
        for scenario in SCENARIOS {
            assert_eq!(Scenario::parse(&scenario.model()), *scenario);
        }
        assert_eq!(Scenario::parse("gpt-4o"), Scenario::text(64, 0));
        assert_eq!(
            Scenario::parse("openai/m-d8-p5-bash"),
            Scenario {
                deltas: 8,
                pace_us: 5,
                kind: Kind::Bash,
                shell: Shell::Bash,
            }
        );
    }

    #[test]
    fn the_shell_offered_is_the_one_called_with_its_own_arguments() {
        assert_eq!(
            Shell::offered(br#"{"tools":[{"function":{"name":"bash"}}]}"#),
            Shell::Bash
        );
        let offered = br#"{"tools":[{"type":"function","function":{"name":"exec_shell"}}]}"#;
        let scenario = Scenario {
            shell: Shell::offered(offered),
            ..Scenario::bash(10)
        };
        let completion: serde_json::Value =
            serde_json::from_str(&scenario.completion("m")).expect("json");
        let call = &completion["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "exec_shell");
        let args: serde_json::Value =
            serde_json::from_str(call["arguments"].as_str().expect("text")).expect("json");
        assert!(args.get("description").is_none(), "{args}");
        assert!(
            args["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("echo "))
        );
    }

    #[test]
    fn bash_stream_arguments_are_one_json_object() {
        let events = Scenario::bash(10).events("m", false);
        let mut args = String::new();
        for event in &events[..events.len() - 1] {
            let data = event.trim_start_matches("data: ").trim_end();
            let chunk: serde_json::Value = serde_json::from_str(data).expect("json");
            if let Some(piece) =
                chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            {
                args.push_str(piece);
            }
        }
        let parsed: serde_json::Value = serde_json::from_str(&args).expect("arguments");
        assert!(
            parsed["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("echo "))
        );
        let completion: serde_json::Value =
            serde_json::from_str(&Scenario::bash(10).completion("m")).expect("json");
        assert_eq!(
            completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            args.as_str()
        );
    }

    #[test]
    fn scans_find_keys() {
        let body = br#"{"model" : "m-d1-p0-text","stream": true,"stream_options":{"include_usage":false}}"#;
        assert_eq!(scan_string(body, "model"), Some("m-d1-p0-text"));
        assert!(scan_true(body, "stream"));
        assert!(!scan_true(body, "include_usage"));
    }
}
