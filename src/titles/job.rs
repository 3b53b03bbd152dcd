//! A claimed title's work order: what the title task sends upstream, written once the task has
//! its slot (`titles::slots`): a title waiting for a slot holds the harness's writer, not a
//! request body, and the turn that claimed it never pays for writing it. An exchange title
//! (`titles.input = "exchange"`, `input`) is written from the answer as it stands then.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use super::input::{AnswerText, exchange};
use crate::harness::{HarnessError, TitleWords};

/// A title request as a harness wrote it.
pub struct TitleRequest {
    pub body: Bytes,
    /// The client's end-to-end headers with the harness's own.
    pub headers: HeaderMap,
    /// Where it goes, relative to the upstream's base URL.
    pub path: &'static str,
    /// A Messages request to a Messages upstream (claude-code's own title request): its answer
    /// is read as Chat Completions (`upstream::messages`) and is Claude Code's JSON
    /// `{"title": …}`, whose `title` is the title.
    pub messages: bool,
}

/// Writes the turn's title request for the given words, as the turn's harness does: made when a
/// title is claimed, run when its task has a slot. A body the harness cannot write fails the
/// title.
pub type TitleWriter = Box<dyn FnOnce(TitleWords<'_>) -> Result<TitleRequest, HarnessError> + Send>;

/// Everything a title task needs from the request that started it.
pub struct TitleJob {
    /// The user's words the title is made from: what `recent` remembers the title under.
    pub first_user_text: String,
    pub request: JobRequest,
    /// The conversation was just named here (`claim_fresh`): its pending record is not in the
    /// store yet, and it may take a recent title of the same words.
    pub fresh: bool,
    pub client_authorization: Option<HeaderValue>,
}

/// The request a title job sends.
pub enum JobRequest {
    /// Written from the first user words (`TitleJob::first_user_text`).
    FirstUser(TitleWriter),
    /// Nothing to title from: no request is sent, the title fails `no input to title from`.
    NoInput,
    /// Written when the job starts, from the user's words and the answer's text, each cut to
    /// `chars` characters.
    Exchange {
        write: TitleWriter,
        answer: AnswerText,
        chars: usize,
    },
}

impl JobRequest {
    /// The first-user request: none for blank words.
    pub fn first_user(write: TitleWriter, words: &str) -> Self {
        if words.trim().is_empty() {
            Self::NoInput
        } else {
            Self::FirstUser(write)
        }
    }

    /// The request to send now (none: nothing to title from), from the user's `words`; an
    /// exchange is written from the answer as it stands.
    pub fn written(self, words: &str) -> Result<Option<TitleRequest>, HarnessError> {
        match self {
            Self::FirstUser(write) => write(TitleWords::FirstUser(words)).map(Some),
            Self::NoInput => Ok(None),
            Self::Exchange {
                write,
                answer,
                chars,
            } => match exchange(words, &answer.get(), chars) {
                Some(text) => write(TitleWords::Exchange(&text)).map(Some),
                None => Ok(None),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> TitleWriter {
        Box::new(|words| {
            Ok(TitleRequest {
                body: Bytes::from(match words {
                    TitleWords::FirstUser(text) => format!("first-user:{text}"),
                    TitleWords::Exchange(text) => format!("exchange:{text}"),
                }),
                headers: HeaderMap::new(),
                path: "/chat/completions",
                messages: false,
            })
        })
    }

    fn body(request: Result<Option<TitleRequest>, HarnessError>) -> Option<Bytes> {
        request.expect("written").map(|r| r.body)
    }

    #[test]
    fn first_user_words_are_written_when_asked_and_blank_ones_not_at_all() {
        let written = JobRequest::first_user(echo(), "fix it").written("fix it");
        assert_eq!(body(written).as_deref(), Some(&b"first-user:fix it"[..]));
        assert!(body(JobRequest::first_user(echo(), " \n").written("")).is_none());
    }

    #[test]
    fn an_exchange_is_written_from_the_answer_as_it_stands_when_the_job_starts() {
        let answer = AnswerText::default();
        let request = JobRequest::Exchange {
            write: echo(),
            answer: answer.clone(),
            chars: 100,
        };
        answer.set("Fixed the redirect.");
        assert_eq!(
            body(request.written("fix login")).as_deref(),
            Some(&b"exchange:USER:\nfix login\n\nASSISTANT:\nFixed the redirect."[..])
        );
    }

    #[test]
    fn a_request_the_harness_cannot_write_fails_the_job_instead_of_going_empty() {
        let cannot: TitleWriter = Box::new(|_| {
            let map = std::collections::BTreeMap::from([((1, 2), 3)]);
            Err(HarnessError::Encode(
                serde_json::to_vec(&map).expect_err("keys that are not strings"),
            ))
        });
        let err = JobRequest::first_user(cannot, "fix it")
            .written("fix it")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("cannot write the upstream request as JSON: key must be a string")
        );
    }

    #[test]
    fn an_exchange_with_neither_half_writes_nothing() {
        let request = JobRequest::Exchange {
            write: echo(),
            answer: AnswerText::default(),
            chars: 100,
        };
        assert!(body(request.written("")).is_none());
    }
}
