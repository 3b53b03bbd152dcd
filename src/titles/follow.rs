//! Following a title that runs on another process (a replica sharing Redis, or a second process
//! on the same SQLite file): the text so far from the record first, then whatever it grows by,
//! then the outcome. Woken by the bus's notices and, since those can be lost, by a timer.

use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::bus::Notice;
use super::live::Outcome;
use super::service::TitleService;
use super::store::{Status, TitleRecord};

/// Re-read period when no notice comes (notices lost, or an embedded store shared by processes).
const REREAD_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Delta(String),
    End(Outcome),
}

struct Follower {
    service: Arc<TitleService>,
    notices: broadcast::Receiver<Notice>,
    record: TitleRecord,
    /// Bytes of the record's text already sent.
    sent: usize,
    deadline: tokio::time::Instant,
    ended: bool,
}

/// Follows `record` (read after `notices` was subscribed). Ends after the outcome, or with a
/// failure once `service.follow_deadline()` has passed without one.
pub fn remote(
    service: Arc<TitleService>,
    notices: broadcast::Receiver<Notice>,
    record: TitleRecord,
) -> impl Stream<Item = Event> {
    let deadline = tokio::time::Instant::now() + service.follow_deadline();
    let follower = Follower {
        service,
        notices,
        record,
        sent: 0,
        deadline,
        ended: false,
    };
    futures_util::stream::unfold(follower, |mut f| async move {
        if f.ended {
            return None;
        }
        loop {
            if let Some(event) = f.next_event() {
                return Some((event, f));
            }
            if !f.wait().await {
                f.ended = true;
                let reason = "the title did not finish in time".to_owned();
                return Some((Event::End(Outcome::Failed(reason)), f));
            }
        }
    })
}

impl Follower {
    /// What the current record adds to what was sent: new text first, then the outcome.
    fn next_event(&mut self) -> Option<Event> {
        let text = &self.record.text;
        if text.len() > self.sent && text.is_char_boundary(self.sent) {
            let fresh = text[self.sent..].to_owned();
            self.sent = text.len();
            return Some(Event::Delta(fresh));
        }
        let outcome = match self.record.status {
            Status::Pending => return None,
            Status::Done => Outcome::Done(self.record.title.clone().unwrap_or_default()),
            Status::Failed => Outcome::Failed(self.record.error.clone().unwrap_or_default()),
        };
        self.ended = true;
        Some(Event::End(outcome))
    }

    /// Waits for a notice about this record or the re-read timer, then re-reads it. `false` once
    /// the deadline has passed.
    async fn wait(&mut self) -> bool {
        let (owner, id) = (self.record.owner.clone(), self.record.id.clone());
        let reread = tokio::time::sleep(REREAD_EVERY);
        tokio::pin!(reread);
        loop {
            tokio::select! {
                notice = self.notices.recv() => match notice {
                    Ok(notice) if !notice.concerns(&owner, &id) => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => {
                        (&mut reread).await;
                        break;
                    }
                },
                () = &mut reread => break,
                () = tokio::time::sleep_until(self.deadline) => return false,
            }
        }
        match self.service.store.get(Some(&owner), &id).await {
            Ok(Some(record)) => self.record = record,
            Ok(None) => {
                // Pruned or expired while followed: nothing more will come.
                self.record.status = Status::Failed;
                self.record.error = Some("the title record is gone".to_owned());
            }
            Err(err) => tracing::debug!(error = %err, "cannot re-read a followed title"),
        }
        true
    }
}
