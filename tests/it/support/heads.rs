//! The fake upstream's `HEAD` requests (Claude Code's connection check): recorded apart from the
//! model's requests, with how many of those came before, and answered with a status alone (or
//! never), so a test can make the check fail or hang.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::response::Response;

use super::fake_upstream::{Recorded, Reply};

/// One `HEAD` received, and how many other requests had arrived before it.
#[derive(Debug, Clone)]
pub struct Head {
    pub request: Recorded,
    pub after: usize,
}

#[derive(Clone)]
pub struct Heads {
    seen: Arc<Mutex<Vec<Head>>>,
    /// The answer to every later `HEAD`.
    reply: Arc<Mutex<Reply>>,
}

/// An empty 200 until a test says otherwise.
impl Default for Heads {
    fn default() -> Self {
        Self {
            seen: Arc::default(),
            reply: Arc::new(Mutex::new(Reply::json(200, ""))),
        }
    }
}

impl Heads {
    pub fn seen(&self) -> Vec<Head> {
        self.seen.lock().expect("lock").clone()
    }

    pub fn answer_with(&self, reply: Reply) {
        *self.reply.lock().expect("lock") = reply;
    }

    /// Records `request` (`after` other requests came first) and answers it: the reply's status
    /// and no body, or never (`Reply::Hang`).
    pub async fn answer(&self, request: Recorded, after: usize) -> Response {
        self.seen
            .lock()
            .expect("lock")
            .push(Head { request, after });
        let reply = self.reply.lock().expect("lock").clone();
        let status = match reply {
            Reply::Full { status, .. } => status,
            Reply::Stream { .. } => 200,
            Reply::Hang => std::future::pending().await,
        };
        Response::builder()
            .status(status)
            .body(Body::empty())
            .expect("response")
    }
}
