//! Client dialects: how each agent names its tools and shapes their arguments and results
//! (`profiles`: built in or data files, one per agent), how one request's tools stand to the
//! harness's tool set and how the model's calls come back checked against the client's own
//! schemas (`bridge`, `schema`), the structural converters one file per dialect (`codex`,
//! `codex_responses`, `claude_code`, `pi`, `gemini_cli`, `cline`), which of its user messages
//! are context rather than the user's words (`contextual`), how opencode quotes user text
//! (`quote`), how opencode's tool arguments are reserialised (`args`), and which tool names may
//! be metric labels (`labels`). Every client protocol and harness uses these rules. Pure and
//! synchronous: no I/O, no axum.

pub mod args;
pub mod bridge;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod codex_responses;
pub mod contextual;
pub mod gemini_cli;
pub mod labels;
pub mod pi;
pub mod profiles;
pub mod quote;
pub mod schema;
