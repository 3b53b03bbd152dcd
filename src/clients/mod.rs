//! The dialect layer: each agent's tools described once against neutral capabilities
//! (`capability`; `profiles`: one data file per agent, named structural converters in
//! `converters` (their shapes in `converter`) and one module per agent: `codex`, `codex_responses`, `codex_agents`, `claude_code`, `pi`,
//! `gemini_cli`, `cline`, `kimi`), serving the agent both as a client and as a harness's tool set;
//! tools no profile names read by their name and schema (`infer`); how one request's client tools
//! stand to the harness's and how the model's calls come back checked against the client's own
//! schemas (`bridge`, `schema`, each call decided once: `verdicts`); which parts of a user message are context rather than the
//! user's words (`contextual`); how a client's sub-agent requests are told apart and its answers
//! read (`subagent`); how opencode quotes user text (`quote`) and reserialises its tool
//! arguments (`args`); which tool names may be metric labels (`labels`); Codex's code mode, its
//! JavaScript `exec` scripts (`codex_code_mode`). Pure and synchronous: no I/O, no axum. Must not:
//! name a client protocol, or write a client × harness pair (calls go client tool → capability →
//! harness tool).

pub mod args;
pub mod bridge;
pub mod capability;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod codex_agents;
pub mod codex_code_mode;
pub mod codex_responses;
pub mod contextual;
pub mod converter;
pub mod converters;
pub mod gemini_cli;
pub mod infer;
pub mod kimi;
pub mod labels;
pub mod pi;
pub mod profiles;
pub mod quote;
pub mod schema;
pub mod subagent;
pub mod verdicts;
