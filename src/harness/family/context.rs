//! Where the client runs, as its request says it: the proxy is not on the client's machine, so the
//! working directory, OS, date and project instructions a reference harness reads from disk come
//! from the client's own context (its env and context blocks, its instructions), the
//! `x-harness-*` headers or config, else the documented empty form (docs/harnesses.md). The sources and
//! their order are opencode's `<env>` (`opencode::env`), so every harness reads a client alike.
//!
//! Times are the conversation's day, not the request's second: a harness whose agent renders a
//! timestamp once per session (Kimi's `KIMI_NOW`) gets midnight UTC of that day, so every turn of
//! a day extends the last byte for byte and replicas agree without sharing state.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, Utc};
use http::HeaderMap;

use crate::clients::contextual::context_parts;
use crate::config::OpencodeConfig;
use crate::conversation::{Item, Message, Role};
use crate::harness::opencode::env::{self, DateZone, Partial};
use crate::harness::opencode::instructions;
use crate::harness::opencode::tools::HostInfo;

/// What fills a gap no source filled, fixed when the harness is built.
#[derive(Debug, Clone)]
pub struct Defaults {
    zone: DateZone,
    platform: String,
    config: OpencodeConfig,
}

impl Defaults {
    pub fn new(config: &OpencodeConfig, host: &HostInfo) -> Self {
        let zone = config
            .timezone
            .as_deref()
            .and_then(|tz| tz.parse().ok())
            .map_or(DateZone::Fixed(host.utc_offset), DateZone::Named);
        Self {
            zone,
            platform: config
                .platform
                .clone()
                .unwrap_or_else(|| env::process_platform().to_owned()),
            config: config.clone(),
        }
    }
}

/// One request's view of the client's machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The working directory, `.` when nothing names one.
    pub cwd: String,
    /// `linux`, `darwin`, `windows`, … (the client's, else the configured, else the proxy's).
    pub platform: String,
    /// The client's day.
    pub date: NaiveDate,
    /// Project instructions the client carries (AGENTS.md / CLAUDE.md contents), each block as
    /// opencode carries them; empty when it carries none.
    pub instructions: Vec<String>,
}

impl Context {
    pub fn of(
        items: &[Item],
        headers: &HeaderMap,
        now: DateTime<Utc>,
        defaults: &Defaults,
    ) -> Self {
        let mut texts: Vec<Cow<'_, str>> = Vec::new();
        for message in messages(items) {
            match message.role {
                Role::System | Role::Developer => texts.push(message.content.text()),
                Role::User => {
                    texts.extend(context_parts(message.content.text_parts()).map(Cow::Borrowed));
                }
                Role::Assistant => {}
            }
        }
        let values = env::resolve(
            Partial::from_headers(headers),
            Partial::from_client_texts(texts.iter().map(AsRef::as_ref)),
            Partial::from_config(&defaults.config),
            env::Defaults {
                now,
                zone: defaults.zone,
                platform: &defaults.platform,
            },
        );
        let date = NaiveDate::parse_from_str(&values.today, "%a %b %-d %Y").unwrap_or_else(|_| {
            let today = env::format_today(now, defaults.zone);
            NaiveDate::parse_from_str(&today, "%a %b %-d %Y").unwrap_or_else(|_| now.date_naive())
        });
        let carried = instructions::collect(messages(items), &[], false);
        Self {
            cwd: values.cwd,
            platform: values.platform,
            date,
            instructions: carried.blocks,
        }
    }

    /// The OS as Kimi's templates name it.
    pub fn kimi_os(&self) -> &str {
        match self.platform.as_str() {
            "darwin" | "macos" => "macOS",
            "linux" => "Linux",
            "win32" | "windows" => "Windows",
            other => other,
        }
    }

    /// The day's first instant, RFC 3339 with milliseconds (`2025-11-29T00:00:00.000Z`).
    pub fn day_start(&self) -> String {
        format!("{}T00:00:00.000Z", self.date.format("%Y-%m-%d"))
    }
}

fn messages(items: &[Item]) -> impl Iterator<Item = &Message> {
    items.iter().filter_map(|item| match item {
        Item::Message(m) => Some(m),
        _ => None,
    })
}
