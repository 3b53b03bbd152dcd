//! harness-proxy: an OpenAI Chat Completions proxy that runs any coding agent "as if it were
//! opencode" against any model server.
//!
//! # Layout
//! - `cli`, `config`, `telemetry`: start-up (commands, layered config, logging and metrics).
//! - `server`: router, middleware (request id, access log, concurrency limit), graceful `run`.
//! - `routes`: thin handlers — `pipeline::serve` (the pipeline every protocol's route goes through),
//!   `inbound` (client bytes → model → harness), `answer`/`render` (the answer in the client's
//!   protocol), `forward` (other `/v1/*`), `health`, `titles`, `ui`.
//! - `conversation`: the protocol-neutral model every stage reads, and the answer events.
//! - `protocols`: one adapter per client protocol (Chat, Responses, Messages, Gemini): request → model,
//!   answer events → that protocol's stream or JSON; `chat` also reads the upstream's answer
//!   (`chunk`, `end`: the one reader of that wire, which `titles` and passthrough's watch share).
//! - `clients`: client dialects (tool alias profiles, contextual messages, quoting).
//! - `harness`: pure, synchronous request rebuilding behind the `Harness` trait (`passthrough`,
//!   `opencode`): model → upstream Chat Completions body; no I/O, no axum.
//! - `upstream`: the only HTTP client of the model server.
//! - `auth`: credentials of a request, the admin token, inbound keys (hashed, constant time).
//! - `sse`: split-safe SSE codec, no protocol's events. `api`: OpenAI wire types. `error`:
//!   `ProxyError` classified (status, code, kind, level), no axum; rendered once at the edge in
//!   a protocol's error shape (`routes::error_response`, OpenAI's by default).
//! - `prompts`, `template`: embedded prompt files, directory override, strict start-up rendering.
//! - `titles`: title sanitizing (and, with the title service, first-turn titles).
//! - `reasoning_memo`: the reasoning of answers with tool calls, for clients that echo none: once
//!   per answer, bounded at every write, in this process and in the title store's backend
//!   (shared by replicas).
//! - `state`: `AppState`, everything handlers share.
//! - `calibrate`: the `calibrate opencode` capture endpoint and the prompt files it writes.
//! - `inspect`: the console's in-memory ring of recent requests (client and upstream bodies).

pub mod api;
pub mod auth;
pub mod calibrate;
pub mod cli;
pub mod clients;
pub mod config;
pub mod conversation;
pub mod error;
pub mod harness;
pub mod inspect;
pub mod prompts;
pub mod protocols;
pub mod reasoning_memo;
pub mod routes;
pub mod server;
pub mod sse;
pub mod state;
pub mod telemetry;
pub mod template;
pub mod titles;
pub mod upstream;
