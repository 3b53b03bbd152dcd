//! What a text-protocol harness does with one whole answer of its model (issue 33): the
//! reference's `swe-agent` and `terminus-2` send no tools and read the action out of the model's
//! text; `mini-swe-agent` sends one tool and rejects an answer that calls none. A harness says,
//! through an `ActionReader` it puts in its `ResponsePlan`, what each answer becomes: the model's
//! own calls, one action in the harness's tools (candidates in order, the first the client can
//! run wins), the end of the turn, or the harness's own turn sent back upstream (a correction, a
//! confirmation). The route holds the answer whole, asks, and acts (`routes::actions`).
//!
//! Owns: the vocabulary between a text-protocol harness and the route. Must not: know a wire
//! format, do I/O.

/// A call in the harness's tools: the bridge (`CallMapper`) turns it into the client's tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessCall {
    pub name: String,
    /// A JSON object's text.
    pub arguments: String,
}

/// Why the harness's own turn goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    /// The answer broke the harness's rules: counted against the bound of tries.
    Correction,
    /// The model said it is done and the harness asks it to confirm (terminus-2, once).
    Confirmation,
}

/// The harness's own turn, sent upstream by the proxy after the model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    pub kind: RetryKind,
    /// The model's answer stays in the retried request, as an assistant message before the turn
    /// (mini-swe-agent drops it: its correction replaces the answer).
    pub keep_answer: bool,
    /// The user turn's text.
    pub turn: String,
    /// The retry pairs sent earlier in this client turn leave the request (swe-agent prunes a
    /// correction pair once a later answer exists).
    pub replaces_earlier: bool,
}

/// What one whole answer becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The model's own tool calls go to the client, each checked as any harness's.
    Calls,
    /// One action: the first of these candidates the client can run is the call it gets, with
    /// the model's text. None can run: `ActionReader::cannot_run`'s turn goes upstream.
    Act(Vec<HarnessCall>),
    /// The turn ends: the model's text is the client's final answer.
    Final,
    /// The harness's own turn goes upstream.
    Retry(Retry),
}

/// A whole answer, as a reader sees it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The assistant's text.
    pub text: &'a str,
    /// The tool calls the model made.
    pub calls: &'a [AnswerCall<'a>],
}

/// One tool call of an answer, as the model made it.
#[derive(Debug, Clone, Copy)]
pub struct AnswerCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

/// What happened so far in this client turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempts {
    /// Correction turns sent.
    pub corrections: usize,
    /// Confirmation turns sent.
    pub confirmations: usize,
}

/// A text-protocol harness's rules for one request's answers (built per request: it may carry
/// what the request said, terminus-2's pending confirmation).
pub trait ActionReader: Send + Sync {
    /// The harness's name (logs, the corrections metric).
    fn harness(&self) -> &'static str;
    /// What this answer becomes.
    fn read(&self, answer: &Answer<'_>, attempts: Attempts) -> Verdict;
    /// The turn that tells the model its action cannot be carried out here: the client has no
    /// tool that runs any of its candidates.
    fn cannot_run(&self, action: &HarnessCall) -> Retry;
    /// The final answer's text when the model's text is empty (a bare completion marker).
    fn final_text(&self, text: &str) -> String {
        text.to_owned()
    }
}
