//! Clients that ask for their conversation's title on a thread of its own, after the first turn:
//! Codex's TUI (`originator: codex-tui`) sends its first turn, then, about 100 ms later, a title
//! request under another `session-id` whose `x-codex-turn-metadata` says
//! `"thread_source":"thread_title"` and which names the conversation nowhere; its last user
//! message ends with `User prompt:\n` and the start of the first turn's words.
//!
//! So a first turn of such a client claims its conversation's title but sends no title request of
//! the proxy's own: the claim waits here (bounded, for `WAIT`), and the client's title request
//! that quotes the same words (same caller) takes it, its answer becoming that conversation's
//! title. One record, one title request. If none comes in time, the proxy's own title job runs.
//!
//! Owns: recognising such clients and their title requests from headers, the waiting claims.
//! Must not: block a request (nothing here waits), hold more than `CAPACITY` claims.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::HeaderMap;
use tokio_util::sync::CancellationToken;

use super::job::TitleJob;
use super::live::LiveTitle;

/// How long a first turn's claim waits for the client's own title request.
pub const WAIT: Duration = Duration::from_secs(5);
/// Claims waiting at once; the oldest is handed back to its fallback first.
pub const CAPACITY: usize = 1024;
/// What Codex's title request puts before the quoted first words.
const PROMPT_MARK: &str = "User prompt:\n";

/// Whether the client asks for its title itself, on a thread of its own, after its first turn.
pub fn titles_itself(headers: &HeaderMap) -> bool {
    headers
        .get("originator")
        .is_some_and(|v| v.as_bytes() == b"codex-tui")
}

/// Whether this request is such a client's title request.
pub fn is_title_thread(headers: &HeaderMap) -> bool {
    headers
        .get("x-codex-turn-metadata")
        .and_then(|v| serde_json::from_slice::<serde_json::Value>(v.as_bytes()).ok())
        .is_some_and(|meta| meta["thread_source"] == "thread_title")
}

/// A first turn's claim, waiting for its client's title request.
pub struct Waiting {
    pub owner: String,
    pub conversation: String,
    /// The words the turn asked (what the client's title request quotes the start of).
    pub words: String,
    pub live: Arc<LiveTitle>,
    /// The proxy's own title job, run if no title request comes.
    pub job: TitleJob,
    /// Cancelled when the client's title request takes the claim: its fallback need not wait.
    pub taken: CancellationToken,
}

#[derive(Default)]
pub struct TitleThreads {
    waiting: Mutex<VecDeque<Waiting>>,
}

impl TitleThreads {
    /// Parks a claim; returns the oldest one if that made too many (its fallback runs now).
    pub fn park(&self, waiting: Waiting) -> Option<Waiting> {
        let mut queue = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        queue.push_back(waiting);
        (queue.len() > CAPACITY)
            .then(|| queue.pop_front())
            .flatten()
    }

    /// The claim a title request of `owner` belongs to: the oldest waiting one whose words start
    /// with what the request quotes after `User prompt:`.
    pub fn take_quoted(&self, owner: &str, request_text: &str) -> Option<Waiting> {
        let quoted = request_text
            .rsplit_once(PROMPT_MARK)
            .map(|(_, quoted)| quoted.trim())
            .filter(|quoted| !quoted.is_empty())?;
        let mut queue = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let at = queue
            .iter()
            .position(|w| w.owner == owner && w.words.trim_start().starts_with(quoted))?;
        let waiting = queue.remove(at)?;
        waiting.taken.cancel();
        Some(waiting)
    }

    /// The claim of (owner, conversation) if it is still waiting (its fallback's turn).
    pub fn take(&self, owner: &str, conversation: &str) -> Option<Waiting> {
        let mut queue = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let at = queue
            .iter()
            .position(|w| w.owner == owner && w.conversation == conversation)?;
        queue.remove(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_s_tui_and_its_title_thread_are_told_by_their_headers() {
        let mut headers = HeaderMap::new();
        assert!(!titles_itself(&headers) && !is_title_thread(&headers));
        headers.insert("originator", "codex-tui".parse().expect("a header value"));
        headers.insert(
            "x-codex-turn-metadata",
            r#"{"thread_source":"thread_title","sandbox_mode":"read-only"}"#
                .parse()
                .expect("a header value"),
        );
        assert!(titles_itself(&headers) && is_title_thread(&headers));
        headers.insert("originator", "codex_exec".parse().expect("a header value"));
        headers.insert(
            "x-codex-turn-metadata",
            r#"{"thread_source":"user"}"#.parse().expect("a header value"),
        );
        assert!(!titles_itself(&headers) && !is_title_thread(&headers));
    }
}
