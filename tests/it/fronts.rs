//! The four fronts as an agent of each speaks them (opencode on Chat, Codex on Responses, Claude
//! Code on Messages, Gemini CLI on the Gemini API): its shell tool, headers, paths, a turn's
//! request and the call read out of its answer. The text-protocol harnesses' tests drive them; the
//! chat harnesses' round trip is the conformance suite's (`conformance`).

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy)]
pub(crate) enum Front {
    Chat,
    Responses,
    Messages,
    Gemini,
}

pub(crate) const FRONTS: [Front; 4] = [
    Front::Chat,
    Front::Responses,
    Front::Messages,
    Front::Gemini,
];

impl Front {
    /// The client's shell tool: its name, its call's arguments for `echo hi`.
    pub(crate) fn shell(self) -> (&'static str, Value) {
        match self {
            Front::Chat => ("bash", json!({"command": "echo hi"})),
            Front::Responses => ("exec_command", json!({"cmd": "echo hi"})),
            Front::Messages => ("Bash", json!({"command": "echo hi"})),
            Front::Gemini => ("run_shell_command", json!({"command": "echo hi"})),
        }
    }

    pub(crate) fn headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Front::Chat => vec![("user-agent", "opencode/1.18.33")],
            Front::Responses => vec![
                ("user-agent", "codex_exec/0.171.0 (Linux)"),
                ("originator", "codex_exec"),
            ],
            Front::Messages => vec![
                ("user-agent", "claude-cli/2.1.332 (external, sdk-cli)"),
                ("x-app", "cli"),
            ],
            Front::Gemini => vec![("user-agent", "GeminiCLI/0.61.0/m (linux; x64)")],
        }
    }

    pub(crate) fn path(self, harness: &str) -> String {
        match self {
            Front::Chat => format!("/harness/{harness}/v1/chat/completions"),
            Front::Responses => format!("/harness/{harness}/v1/responses"),
            Front::Messages => format!("/harness/{harness}/v1/messages"),
            Front::Gemini => format!("/harness/{harness}/v1beta/models/m:generateContent"),
        }
    }

    /// The request of a turn: the prompt, then (second turn) the client's call and its result.
    pub(crate) fn request(self, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        match self {
            Front::Chat => {
                let mut messages = vec![json!({"role": "user", "content": "say hi"})];
                if let Some(args) = answered {
                    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}));
                    messages
                        .push(json!({"role": "tool", "tool_call_id": "call_1", "content": "hi\n"}));
                }
                json!({"model": "m", "stream": false, "messages": messages, "tools": [{"type": "function", "function": {"name": tool, "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "workdir": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}}}]})
            }
            Front::Responses => {
                let mut input = vec![
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}),
                ];
                if let Some(args) = answered {
                    input.push(json!({"type": "function_call", "call_id": "call_1", "name": tool, "arguments": args.to_string()}));
                    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "Process exited with code 0\nOutput:\nhi\n"}));
                }
                json!({"model": "m", "stream": false, "input": input, "tools": [{"type": "function", "name": tool, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}}, "required": ["cmd"]}}]})
            }
            Front::Messages => {
                let mut messages = vec![json!({"role": "user", "content": "say hi"})];
                if let Some(args) = answered {
                    messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": args}]}));
                    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi\n"}]}));
                }
                json!({"model": "m", "max_tokens": 100, "messages": messages, "tools": [{"name": tool, "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}]})
            }
            Front::Gemini => {
                let mut contents = vec![json!({"role": "user", "parts": [{"text": "say hi"}]})];
                if let Some(args) = answered {
                    contents.push(json!({"role": "model", "parts": [{"functionCall": {"id": "call_1", "name": tool, "args": args}}]}));
                    contents.push(json!({"role": "user", "parts": [{"functionResponse": {"id": "call_1", "name": tool, "response": {"output": "hi\n"}}}]}));
                }
                json!({"contents": contents, "tools": [{"functionDeclarations": [{"name": tool, "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}, "dir_path": {"type": "string"}}, "required": ["command"]}}]}]})
            }
        }
    }

    /// The one call of a (non-streamed) answer: (name, arguments).
    pub(crate) fn call(self, answer: &Value) -> Option<(String, Value)> {
        match self {
            Front::Chat => {
                let call = &answer["choices"][0]["message"]["tool_calls"][0]["function"];
                Some((
                    call["name"].as_str()?.to_owned(),
                    serde_json::from_str(call["arguments"].as_str()?).ok()?,
                ))
            }
            Front::Responses => {
                let call = answer["output"]
                    .as_array()?
                    .iter()
                    .find(|i| i["type"] == "function_call")?;
                Some((
                    call["name"].as_str()?.to_owned(),
                    serde_json::from_str(call["arguments"].as_str()?).ok()?,
                ))
            }
            Front::Messages => {
                let call = answer["content"]
                    .as_array()?
                    .iter()
                    .find(|b| b["type"] == "tool_use")?;
                Some((call["name"].as_str()?.to_owned(), call["input"].clone()))
            }
            Front::Gemini => {
                let call = answer["candidates"][0]["content"]["parts"]
                    .as_array()?
                    .iter()
                    .find_map(|p| p.get("functionCall"))?;
                Some((call["name"].as_str()?.to_owned(), call["args"].clone()))
            }
        }
    }
}
