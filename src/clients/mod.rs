//! Client dialects: how each agent names its tools and shapes their arguments and outputs
//! (`profiles`, with the built-in `codex`, `codex-responses` and `claude-code` converters), which of
//! its user messages are context rather than the user's words (`contextual`), how opencode quotes
//! user text (`quote`), and how opencode's tool arguments are reserialised (`args`). Every client
//! protocol and harness uses these rules. Pure and synchronous: no I/O, no axum.

pub mod args;
pub mod claude_code;
pub mod codex;
pub mod codex_responses;
pub mod contextual;
pub mod profiles;
pub mod quote;
