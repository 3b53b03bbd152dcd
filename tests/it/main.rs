//! One integration binary: the real server on 127.0.0.1:0 against a recording fake upstream.
//! `support/` holds the app launcher, the recording fake upstream, the child-process binary, the
//! headless browser, test Redis and the skip ledger (`skip`; `zz_skips_summary` closes the run);
//! `conformance/` is the scenario list every front × every registered harness runs.

#![allow(clippy::unwrap_used)]

mod support;

mod answer_limits;
mod bridge;
mod browser_guard;
mod cached_tokens;
mod calibrate;
mod caller_auth;
mod claude_code_goldens;
mod claude_code_preflight;
mod client_goldens;
mod codex_tui;
mod conformance;
mod conversations;
mod corrections;
mod count_tokens;
mod deploy;
mod docs;
mod errors;
mod fronts;
mod gemini;
mod gemini_golden;
mod golden;
mod harness_goldens;
mod harness_prefix;
mod images;
mod interrupted;
mod layers;
mod limits;
mod load;
mod memory;
mod messages;
mod messages_upstream;
mod messages_upstream_memo;
mod metrics;
mod opencode;
mod passthrough;
mod path_escape;
mod plain_chat;
mod prefix_cache;
mod promises;
mod reasoning;
mod replicas;
mod responses;
mod responses_golden;
mod responses_ws;
mod retry_after;
mod rewrite;
mod rotated_key;
mod routing;
mod schema_cost;
mod schema_props;
mod secrets;
mod shapes;
mod shutdown;
mod sse_limits;
mod startup;
mod subagents;
mod text_harnesses;
mod title_exchange;
mod title_slots;
mod titles;
mod tool_count;
mod ui;
mod upstream_url;
mod user_words;

/// The binary's closing lines: how many tests it skipped (counted as passed) and why. Named to
/// sort last, so libtest starts it after every other test (`support::skip`).
#[test]
fn zz_skips_summary() {
    support::skip::summary();
}
