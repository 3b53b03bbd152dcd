//! Values of the `<env>` block. For each value the first source that has it wins: request headers,
//! then what the client's own prompt says, then config, then the reference's rules
//! (docs/wire.md §1). Pure: the clock, the date's zone and the default platform come in as
//! arguments; nothing here reads the process's time zone or environment.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Utc};
use http::{HeaderMap, HeaderName};

use crate::config::OpencodeConfig;

/// The resolved `<env>` values of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvValues {
    pub cwd: String,
    pub workspace_root: String,
    pub git: String,
    pub platform: String,
    pub today: String,
}

/// Values found in one source; `None` means "ask the next source".
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Partial {
    pub cwd: Option<String>,
    pub workspace_root: Option<String>,
    pub git: Option<String>,
    pub platform: Option<String>,
    pub today: Option<String>,
}

impl Partial {
    fn or(self, lower: Self) -> Self {
        Self {
            cwd: self.cwd.or(lower.cwd),
            workspace_root: self.workspace_root.or(lower.workspace_root),
            git: self.git.or(lower.git),
            platform: self.platform.or(lower.platform),
            today: self.today.or(lower.today),
        }
    }

    pub fn from_headers(headers: &HeaderMap) -> Self {
        // Names made once: a lookup by text parses and lowercases the name on every request.
        static NAMES: [HeaderName; 5] = [
            HeaderName::from_static("x-harness-cwd"),
            HeaderName::from_static("x-harness-workspace-root"),
            HeaderName::from_static("x-harness-git"),
            HeaderName::from_static("x-harness-platform"),
            HeaderName::from_static("x-harness-date"),
        ];
        let [cwd, workspace_root, git, platform, today] = &NAMES;
        let get = |name: &HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Self {
            cwd: get(cwd),
            workspace_root: get(workspace_root),
            git: get(git).map(|v| yes_no(&v)),
            platform: get(platform),
            today: get(today),
        }
    }

    /// What the client's own prompt says: Codex `<environment_context><cwd>…</cwd>`, an opencode
    /// `<env>` block, Claude Code's `# Environment` list (` - Primary working directory: …`,
    /// ` - Is a git repository: false`, ` - Platform: linux`), pi's `Current working directory:`
    /// line, Gemini CLI's `<session_context>` (its date sentence, `My operating system is:`, the
    /// first of its `**Workspace Directories:**`), or a bare `Working directory:` line.
    /// The first text that has a value wins.
    pub fn from_client_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut found = Self::default();
        for text in texts {
            if !text.contains("<cwd>") && !text.contains(':') && !text.contains("date is ") {
                continue;
            }
            found = found.or(Self::scan(text));
        }
        found
    }

    fn scan(text: &str) -> Self {
        let mut found = Self::default();
        if let Some(start) = text.find("<cwd>") {
            let rest = &text[start + "<cwd>".len()..];
            if let Some(end) = rest.find("</cwd>") {
                found.cwd = non_empty(&rest[..end]);
            }
        }
        // Gemini CLI names its folders in a list under a heading: the first one is its cwd.
        let mut workspace_list = false;
        for line in text.lines() {
            let line = line.trim();
            // Claude Code lists its environment as a bullet list.
            let line = line.strip_prefix("- ").unwrap_or(line);
            let field = |label: &str| line.strip_prefix(label).and_then(non_empty);
            if workspace_list && found.cwd.is_none() {
                found.cwd = non_empty(line);
            }
            workspace_list = line == GEMINI_WORKSPACES;
            if found.cwd.is_none() {
                found.cwd = field("Working directory:")
                    .or_else(|| field("Primary working directory:"))
                    .or_else(|| field("Current working directory:"))
                    .or_else(|| field("I'm currently working in the directory:"));
            }
            if found.workspace_root.is_none() {
                found.workspace_root = field("Workspace root folder:");
            }
            if found.git.is_none() {
                found.git = field("Is directory a git repo:")
                    .or_else(|| field("Is a git repository:"))
                    .map(|v| yes_no(&v));
            }
            if found.platform.is_none() {
                found.platform = field("Platform:").or_else(|| field("My operating system is:"));
            }
            if found.today.is_none() {
                found.today = field("Today's date:").or_else(|| {
                    line.strip_prefix("Today's date is ")
                        .and_then(sentence_date)
                });
            }
        }
        found
    }

    pub fn from_config(config: &OpencodeConfig) -> Self {
        Self {
            cwd: config.cwd.clone(),
            workspace_root: config.workspace_root.clone(),
            git: config.git.clone(),
            platform: config.platform.clone(),
            today: config.today.clone(),
        }
    }
}

/// The heading of Gemini CLI's folder list in its `<session_context>`.
const GEMINI_WORKSPACES: &str = "**Workspace Directories:**";

/// A client's date sentence, `Today's date is …`: Gemini CLI's `Wednesday, December 2, 2026
/// (formatted according to the user's locale).` or Claude Code's `2026-11-30.`, in the `<env>`
/// block's form (`Wed Dec 2 2026`); its own words when it is in neither form (another locale).
fn sentence_date(sentence: &str) -> Option<String> {
    let date = sentence
        .split_once(" (")
        .map_or(sentence, |(date, _)| date)
        .trim_end_matches('.');
    ["%A, %B %-d, %Y", "%Y-%m-%d"]
        .iter()
        .find_map(|form| chrono::NaiveDate::parse_from_str(date, form).ok())
        .map_or_else(|| non_empty(date), |day| Some(reference_date(day)))
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Anything that is not a clear "no" reads as the reference's constant `yes`.
fn yes_no(value: &str) -> String {
    match value.trim().to_ascii_lowercase().as_str() {
        "no" | "false" | "0" => "no".to_owned(),
        _ => "yes".to_owned(),
    }
}

/// The proxy's own platform name as the reference prints it (`macos` → `darwin`): the build's
/// target, a constant, read once when the harness is built.
pub fn process_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    }
}

/// The zone of the date line: `opencode.timezone`, else the host's UTC offset as resolved once at
/// start-up (`state::Host`), so a request never depends on the process's local time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateZone {
    Named(chrono_tz::Tz),
    /// A fixed offset keeps the start-up offset across a daylight-saving change until restart;
    /// `opencode.timezone` is the way to follow one.
    Fixed(FixedOffset),
}

/// The reference date format, `Sat Nov 29 2025`, in `zone`.
pub fn format_today(now: DateTime<Utc>, zone: DateZone) -> String {
    reference_date(match zone {
        DateZone::Named(tz) => now.with_timezone(&tz).date_naive(),
        DateZone::Fixed(offset) => now.with_timezone(&offset).date_naive(),
    })
}

/// `day` as strftime's `%a %b %-d %Y` (`Sat Nov 29 2025`), written field by field: chrono parses
/// a strftime pattern on every call, and this runs on every request without a pinned date.
fn reference_date(day: NaiveDate) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS[day.month0() as usize];
    format!("{} {month} {} {}", day.weekday(), day.day(), day.year())
}

/// On Linux a top-level cwd (`/work`) has the root as workspace; everywhere else it is cwd itself.
pub fn reference_workspace_root(cwd: &str, platform: &str) -> String {
    if platform == "linux" {
        let trimmed = cwd.trim_end_matches('/');
        if let Some(rest) = trimmed.strip_prefix('/')
            && !rest.is_empty()
            && !rest.contains('/')
        {
            return "/".to_owned();
        }
    }
    cwd.to_owned()
}

/// What fills a gap no source filled, fixed when the harness is built (`process_platform`, the
/// date's zone) plus the request's clock.
#[derive(Debug, Clone, Copy)]
pub struct Defaults<'a> {
    pub now: DateTime<Utc>,
    pub zone: DateZone,
    pub platform: &'a str,
}

/// Layers the sources and fills the gaps with the reference's rules.
pub fn resolve(
    headers: Partial,
    client: Partial,
    config: Partial,
    defaults: Defaults,
) -> EnvValues {
    let Defaults {
        now,
        zone,
        platform,
    } = defaults;
    let merged = headers.or(client).or(config);
    let cwd = merged.cwd.unwrap_or_else(|| ".".to_owned());
    let platform = merged.platform.unwrap_or_else(|| platform.to_owned());
    let workspace_root = merged
        .workspace_root
        .unwrap_or_else(|| reference_workspace_root(&cwd, &platform));
    EnvValues {
        workspace_root,
        git: merged.git.unwrap_or_else(|| "yes".to_owned()),
        today: merged.today.unwrap_or_else(|| format_today(now, zone)),
        platform,
        cwd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0)
            .single()
            .expect("valid date")
    }

    /// UTC and `linux`, as a harness built with them would pass.
    fn defaults(now: DateTime<Utc>) -> Defaults<'static> {
        Defaults {
            now,
            zone: DateZone::Named(chrono_tz::UTC),
            platform: "linux",
        }
    }

    fn east(hours: i32) -> DateZone {
        DateZone::Fixed(FixedOffset::east_opt(hours * 3600).expect("a valid offset"))
    }

    #[test]
    fn without_a_configured_zone_the_date_is_in_the_injected_offset() {
        // 2025-11-29 23:30 UTC: already Sunday at UTC+1, still Saturday at UTC and UTC-5.
        let now = Utc
            .with_ymd_and_hms(2025, 11, 29, 23, 30, 0)
            .single()
            .expect("valid date");
        assert_eq!(format_today(now, east(1)), "Sun Nov 30 2025");
        assert_eq!(format_today(now, east(0)), "Sat Nov 29 2025");
        assert_eq!(format_today(now, east(-5)), "Sat Nov 29 2025");
        // Through `resolve`, when no header, client text or config pins the date.
        let at_offset = |zone| {
            resolve(
                Partial::default(),
                Partial::default(),
                Partial::default(),
                Defaults {
                    now,
                    zone,
                    platform: "linux",
                },
            )
            .today
        };
        assert_eq!(at_offset(east(1)), "Sun Nov 30 2025");
        assert_eq!(at_offset(east(-5)), "Sat Nov 29 2025");
    }

    #[test]
    fn date_format_is_the_reference_one() {
        assert_eq!(
            format_today(at(2025, 11, 29, 12), DateZone::Named(chrono_tz::UTC)),
            "Sat Nov 29 2025"
        );
        assert_eq!(
            format_today(at(2025, 12, 1, 12), DateZone::Named(chrono_tz::UTC)),
            "Mon Dec 1 2025"
        );
        // The zone decides the day: 02:00 UTC is still the previous evening in New York.
        assert_eq!(
            format_today(
                at(2025, 12, 1, 2),
                DateZone::Named(chrono_tz::America::New_York)
            ),
            "Sun Nov 30 2025"
        );
    }

    #[test]
    fn the_date_written_by_hand_is_strftimes() {
        // Every day of 1999–2031 (leap years, both centuries' rules), against chrono's own strftime.
        let mut day = NaiveDate::from_ymd_opt(1999, 1, 1).expect("a valid date");
        let end = NaiveDate::from_ymd_opt(2031, 12, 31).expect("a valid date");
        while day <= end {
            assert_eq!(reference_date(day), day.format("%a %b %-d %Y").to_string());
            day = day.succ_opt().expect("a next day");
        }
    }

    #[test]
    fn workspace_root_rule() {
        assert_eq!(reference_workspace_root("/work", "linux"), "/");
        assert_eq!(
            reference_workspace_root("/home/user/project", "linux"),
            "/home/user/project"
        );
        assert_eq!(reference_workspace_root("/", "linux"), "/");
        assert_eq!(reference_workspace_root(".", "linux"), ".");
        assert_eq!(reference_workspace_root("/work", "darwin"), "/work");
    }

    #[test]
    fn headers_beat_client_prompt_beat_config_beat_reference() {
        let mut headers = HeaderMap::new();
        headers.insert("x-harness-cwd", "/from/header".parse().expect("header"));
        let client = Partial::from_client_texts([
            "<environment_context>\n  <cwd>/from/codex</cwd>\n</environment_context>",
            "Platform: darwin\n",
        ]);
        let config = Partial {
            cwd: Some("/from/config".into()),
            platform: Some("windows".into()),
            git: Some("no".into()),
            ..Partial::default()
        };
        let env = resolve(
            Partial::from_headers(&headers),
            client,
            config,
            defaults(at(2025, 11, 29, 12)),
        );
        assert_eq!(
            env,
            EnvValues {
                cwd: "/from/header".into(),
                workspace_root: "/from/header".into(),
                git: "no".into(),
                platform: "darwin".into(),
                today: "Sat Nov 29 2025".into(),
            }
        );
    }

    #[test]
    fn reference_defaults_apply_when_nothing_is_given() {
        let env = resolve(
            Partial::default(),
            Partial::default(),
            Partial::default(),
            defaults(at(2025, 11, 29, 12)),
        );
        assert_eq!(env.cwd, ".");
        assert_eq!(env.workspace_root, ".");
        assert_eq!(env.git, "yes");
        assert_eq!(env.platform, "linux", "the harness's default platform");
    }

    /// As Gemini CLI 0.61.0 sent it (captured from the real client, 2026-12-02): its date, OS
    /// and first workspace folder, in the first part of its first user message.
    #[test]
    fn gemini_cli_session_context_is_a_source() {
        let gemini = Partial::from_client_texts([concat!(
            "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n",
            "Today's date is Wednesday, December 2, 2026 (formatted according to the user's locale).\n",
            "My operating system is: linux\n",
            "The project's temporary directory is: /home/u/.gemini/tmp/work\n",
            "- **Workspace Directories:**\n  - /home/u/work\n  - /home/u/other\n",
            "- **Directory Structure:**\n\nShowing up to 200 items (files + folders).\n\n",
            "/home/u/work/\n\u{2514}\u{2500}\u{2500}\u{2500}README.md\n\n\n</session_context>"
        )]);
        assert_eq!(
            gemini,
            Partial {
                cwd: Some("/home/u/work".into()),
                workspace_root: None,
                git: None,
                platform: Some("linux".into()),
                today: Some("Wed Dec 2 2026".into()),
            }
        );
        let claude_code =
            Partial::from_client_texts(["# currentDate\nToday's date is 2026-11-30.\n"]);
        assert_eq!(claude_code.today.as_deref(), Some("Mon Nov 30 2026"));
        let other_locale = Partial::from_client_texts(["Today's date is 2. Dezember 2026."]);
        assert_eq!(other_locale.today.as_deref(), Some("2. Dezember 2026"));
    }

    #[test]
    fn client_prompt_forms_are_recognised() {
        let opencode = Partial::from_client_texts([concat!(
            "Here is some useful information about the environment you are running in:\n<env>\n",
            "  Working directory: /srv/app\n  Workspace root folder: /srv\n  Is directory a git repo: no\n",
            "  Platform: darwin\n  Today's date: Mon Dec 1 2025\n</env>"
        )]);
        assert_eq!(
            opencode,
            Partial {
                cwd: Some("/srv/app".into()),
                workspace_root: Some("/srv".into()),
                git: Some("no".into()),
                platform: Some("darwin".into()),
                today: Some("Mon Dec 1 2025".into()),
            }
        );
        let pi = Partial::from_client_texts([
            "Guidelines...\nCurrent working directory: /home/u/proj\n",
        ]);
        assert_eq!(pi.cwd.as_deref(), Some("/home/u/proj"));
        let plain = Partial::from_client_texts(["You are helpful.\nWorking directory: /tmp/x\n"]);
        assert_eq!(plain.cwd.as_deref(), Some("/tmp/x"));
        // As Claude Code 2.1.197 sent it (captured through the proxy, 2026-11-30).
        let claude_code = Partial::from_client_texts([concat!(
            "# Environment\nYou have been invoked in the following environment: \n",
            " - Primary working directory: /tmp/realcheck/w/claude\n - Is a git repository: false\n",
            " - Platform: linux\n - Shell: bash\n - OS Version: Linux 6.18.44-fc-v669\n"
        )]);
        assert_eq!(
            claude_code,
            Partial {
                cwd: Some("/tmp/realcheck/w/claude".into()),
                workspace_root: None,
                git: Some("no".into()),
                platform: Some("linux".into()),
                today: None,
            }
        );
        let first_wins =
            Partial::from_client_texts(["Working directory: /a", "Working directory: /b"]);
        assert_eq!(first_wins.cwd.as_deref(), Some("/a"));
    }

    #[test]
    fn workspace_root_header_overrides_the_rule() {
        let mut headers = HeaderMap::new();
        headers.insert("x-harness-cwd", "/work".parse().expect("header"));
        headers.insert("x-harness-workspace-root", "/work".parse().expect("header"));
        headers.insert("x-harness-platform", "linux".parse().expect("header"));
        let env = resolve(
            Partial::from_headers(&headers),
            Partial::default(),
            Partial::default(),
            defaults(at(2025, 1, 1, 0)),
        );
        assert_eq!(env.workspace_root, "/work");
        let mut headers = HeaderMap::new();
        headers.insert("x-harness-cwd", "/work".parse().expect("header"));
        headers.insert("x-harness-platform", "linux".parse().expect("header"));
        let env = resolve(
            Partial::from_headers(&headers),
            Partial::default(),
            Partial::default(),
            defaults(at(2025, 1, 1, 0)),
        );
        assert_eq!(env.workspace_root, "/");
    }
}
