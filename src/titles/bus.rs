//! The publish/subscribe seam for running titles: "the record of (owner, id) changed" notices.
//! Embedded stores use an in-process channel; Redis uses one pub/sub channel shared by every
//! replica (one subscriber connection per process, fanned out locally). A notice carries no text:
//! the text so far lives on the record, so a follower re-reads it and never misses or repeats a
//! delta, whichever replica runs the title. Pub/sub may drop notices (Redis restarts, a slow
//! follower); followers also re-read on a timer, and a reconnect broadcasts an "anything changed".

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::store::{Backend, RedisServer};

/// How many notices a slow follower may lag behind before it just re-reads.
const CAPACITY: usize = 1024;
/// Pause between attempts to (re)subscribe while Redis is unreachable.
const RESUBSCRIBE_EVERY: Duration = Duration::from_millis(500);
/// Separates owner and id in a notice's payload.
const SEP: char = '\u{1f}';

/// Something changed for (owner, id); `None` means anything may have changed (notices lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice(pub Option<(String, String)>);

impl Notice {
    pub fn concerns(&self, owner: &str, id: &str) -> bool {
        self.0.as_ref().is_none_or(|(o, i)| o == owner && i == id)
    }
}

pub struct Bus {
    local: broadcast::Sender<Notice>,
    redis: Option<RedisBus>,
}

struct RedisBus {
    server: Arc<RedisServer>,
    channel: String,
}

impl Bus {
    /// Notices over the shared backend: Redis publishes them to every replica; otherwise they
    /// stay in this process.
    pub fn new(backend: &Backend) -> Self {
        let redis = match backend {
            Backend::Redis(server) => Some(RedisBus {
                channel: format!("{}:live", server.prefix),
                server: server.clone(),
            }),
            Backend::Memory | Backend::Sqlite(_) => None,
        };
        Self {
            local: broadcast::channel(CAPACITY).0,
            redis,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.local.subscribe()
    }

    /// Tells every follower, on any replica, that the record of (owner, id) changed. Best effort:
    /// a lost notice only delays a follower until its next re-read.
    pub async fn publish(&self, owner: &str, id: &str) {
        let Some(redis) = &self.redis else {
            let _ = self
                .local
                .send(Notice(Some((owner.to_owned(), id.to_owned()))));
            return;
        };
        // Boxed: the pool's and the command's futures are kilobytes, and every task that may
        // publish (a title's mirror, its settling) would hold that much while it waits for
        // anything, Redis or not (BENCHMARKS.md, "Titles waiting for a slot").
        Box::pin(redis.publish(owner, id)).await;
    }

    /// For Redis: listens to the shared channel until `cancel`, resubscribing after any loss.
    pub fn spawn_listener(&self, cancel: CancellationToken) {
        let Some(redis) = &self.redis else { return };
        let client = redis.server.conn.client().clone();
        let channel = redis.channel.clone();
        let local = self.local.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = listen(&client, &channel, &local) => {}
                    () = cancel.cancelled() => return,
                }
                tokio::select! {
                    () = tokio::time::sleep(RESUBSCRIBE_EVERY) => {}
                    () = cancel.cancelled() => return,
                }
            }
        });
    }
}

impl RedisBus {
    async fn publish(&self, owner: &str, id: &str) {
        // Our own listener hears it back and fans it out here too.
        let published = match self.server.conn.get().await {
            Ok(mut conn) => redis::cmd("PUBLISH")
                .arg(&self.channel)
                .arg(format!("{owner}{SEP}{id}"))
                .query_async::<i64>(&mut conn)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        if let Err(err) = published {
            tracing::debug!(error = %err, "cannot publish a title notice");
        }
    }
}

/// One subscription's life: returns when the connection is lost.
async fn listen(client: &redis::Client, channel: &str, local: &broadcast::Sender<Notice>) {
    let mut pubsub = match client.get_async_pubsub().await {
        Ok(pubsub) => pubsub,
        Err(err) => {
            tracing::debug!(error = %err, "title notices: cannot connect");
            return;
        }
    };
    if let Err(err) = pubsub.subscribe(channel).await {
        tracing::debug!(error = %err, "title notices: cannot subscribe");
        return;
    }
    // Anything published while we were away is lost: every follower re-reads.
    let _ = local.send(Notice(None));
    let mut messages = pubsub.into_on_message();
    while let Some(message) = messages.next().await {
        let payload = String::from_utf8_lossy(message.get_payload_bytes());
        let notice = payload
            .split_once(SEP)
            .map(|(owner, id)| (owner.to_owned(), id.to_owned()));
        let _ = local.send(Notice(notice));
    }
    tracing::debug!("title notices: subscription lost; resubscribing");
}
