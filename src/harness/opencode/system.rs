//! The one system message (docs/wire.md §1): prefix, identity line, `<env>` block, skills block —
//! exact newlines.

use std::sync::{Arc, Mutex, PoisonError};

use hashlink::LruCache;
use serde_json::value::RawValue;

use super::env::EnvValues;
use crate::template::{BindError, Pattern, Template};

/// The skills file bound at start-up: `{{cwd}}` is the one placeholder, filled per request.
pub fn bind_skills(text: &str) -> Result<Pattern, BindError> {
    let pattern = Template::parse(text)
        .and_then(|t| t.bind(&[], &["cwd"]))
        .map_err(|source| BindError::Template {
            source,
            known: "the skills file knows `{{cwd}}`",
        })?;
    if pattern.texts().any(|t| t.contains("{cwd}")) {
        return Err(BindError::OldForm { name: "cwd" });
    }
    Ok(pattern)
}

/// The skills block: a newline, then the file text with the cwd filled in, trailing space trimmed.
pub fn skills_block(skills: &Pattern, cwd: &str) -> String {
    let text = skills.fill(&[cwd]);
    let mut block = String::with_capacity(text.len() + 1);
    block.push('\n');
    block.push_str(text.trim_end());
    block
}

/// Assembles the system content. `skills` is empty for the search agent; `instructions` is
/// empty unless project instructions are carried (each block starting with a newline).
pub fn system_prompt(
    prefix: &str,
    model_name: &str,
    model_id: &str,
    env: &EnvValues,
    instructions: &str,
    skills: &str,
) -> String {
    let mut text = prefix.trim_end().to_owned();
    text.push_str(&suffix(model_name, model_id, env, instructions, skills));
    text
}

/// Everything after the prefix: identity line, `<env>` block, carried instructions, skills block.
pub fn suffix(
    model_name: &str,
    model_id: &str,
    env: &EnvValues,
    instructions: &str,
    skills: &str,
) -> String {
    format!(
        "\n\nYou are powered by the model named {model_name}. The exact model ID is {model_id}\n\
         Here is some useful information about the environment you are running in:\n<env>\n  \
         Working directory: {cwd}\n  Workspace root folder: {root}\n  Is directory a git repo: {git}\n  \
         Platform: {platform}\n  Today's date: {today}\n</env>{instructions}{skills}",
        cwd = env.cwd,
        root = env.workspace_root,
        git = env.git,
        platform = env.platform,
        today = env.today,
    )
}

/// How many suffixes' whole tokens each prefix keeps: a few dozen conversations' worth (the model,
/// `<env>`, instructions and skills of one conversation are the same turn after turn), about 10 KB
/// each under opencode's prompt.
const RECENT_SUFFIXES: usize = 32;

/// A prefix JSON-escaped once at start-up, and the whole tokens of the latest suffixes. Escaping
/// the suffix and checking the ~9 KB token (`RawValue::from_string` parses it) was half of
/// opencode's rebuild of a small chat (issue 36's profile); a conversation's next turn with the
/// same suffix takes its token from here.
pub struct EscapedPrefix {
    escaped: String,
    recent: Mutex<LruCache<String, Arc<RawValue>>>,
}

impl EscapedPrefix {
    pub fn new(prefix: &str) -> Self {
        Self {
            escaped: json_escape(prefix.trim_end()),
            recent: Mutex::new(LruCache::new(RECENT_SUFFIXES)),
        }
    }

    /// The whole system content as a JSON string token (`"…"`), equal to escaping
    /// `system_prompt(prefix, …)` in one go.
    pub fn with_suffix(&self, suffix: String) -> Arc<RawValue> {
        // A panic elsewhere while holding the lock leaves a cache still whole: keep using it.
        let recent = || self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(token) = recent().get(&suffix) {
            return token.clone();
        }
        let token = Arc::<RawValue>::from(self.token(&suffix));
        recent().insert(suffix, token.clone());
        token
    }

    fn token(&self, suffix: &str) -> Box<RawValue> {
        let escaped = json_escape(suffix);
        let mut token = String::with_capacity(self.escaped.len() + escaped.len() + 2);
        token.push('"');
        token.push_str(&self.escaped);
        token.push_str(&escaped);
        token.push('"');
        // A quoted run of escaped text is always a valid JSON string.
        RawValue::from_string(token)
            .unwrap_or_else(|_| serde_json::value::to_raw_value("").unwrap_or_default())
    }
}

/// serde_json's string escaping, without the surrounding quotes.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvValues {
        EnvValues {
            cwd: "/home/user/project".into(),
            workspace_root: "/home/user/project".into(),
            git: "yes".into(),
            platform: "linux".into(),
            today: "Sat Nov 29 2025".into(),
        }
    }

    #[test]
    fn layout_matches_the_reference_format_string() {
        let skills = skills_block(
            &bind_skills("Skills intro.\n<location>file://{{cwd}}/%3Cbuilt-in%3E</location>\n")
                .expect("valid"),
            "/home/user/project",
        );
        let text = system_prompt(
            "PREFIX\n\n",
            "deepseek-chat",
            "deepseek/mock-model",
            &env(),
            "",
            &skills,
        );
        assert_eq!(
            text,
            "PREFIX\n\nYou are powered by the model named deepseek-chat. The exact model ID is deepseek/mock-model\n\
             Here is some useful information about the environment you are running in:\n<env>\n  \
             Working directory: /home/user/project\n  Workspace root folder: /home/user/project\n  \
             Is directory a git repo: yes\n  Platform: linux\n  Today's date: Sat Nov 29 2025\n</env>\n\
             Skills intro.\n<location>file:///home/user/project/%3Cbuilt-in%3E</location>"
        );
    }

    #[test]
    fn the_old_skills_placeholder_is_refused() {
        let err = bind_skills("at {cwd}").expect_err("old syntax").to_string();
        assert_eq!(err, "`{cwd}` is not a placeholder; write `{{cwd}}`");
        assert!(bind_skills("at {{ dir }}").is_err());
    }

    #[test]
    fn search_agent_has_no_skills_and_no_trailing_newline() {
        let text = system_prompt("P", "n", "i", &env(), "", "");
        assert!(text.ends_with("Today's date: Sat Nov 29 2025\n</env>"));
    }

    #[test]
    fn escaped_prefix_equals_escaping_the_whole_text() {
        let prefix = "Line \"one\"\n\ttab \u{1F600} </tag>\n\n";
        let skills = skills_block(&bind_skills("S {{ cwd }}\n").expect("valid"), "/w");
        let whole = system_prompt(prefix, "n", "i", &env(), "\nI", &skills);
        let raw = EscapedPrefix::new(prefix).with_suffix(suffix("n", "i", &env(), "\nI", &skills));
        assert_eq!(raw.get(), serde_json::Value::String(whole).to_string());
    }

    #[test]
    fn a_suffix_seen_again_gets_the_same_token_and_another_gets_its_own() {
        let prefix = EscapedPrefix::new("P \"q\"\n");
        let monday = prefix.with_suffix(suffix("n", "i", &env(), "", ""));
        let again = prefix.with_suffix(suffix("n", "i", &env(), "", ""));
        assert!(Arc::ptr_eq(&monday, &again), "the kept token is reused");
        let mut tuesday_env = env();
        tuesday_env.today = "Sun Nov 30 2025".into();
        let tuesday = prefix.with_suffix(suffix("n", "i", &tuesday_env, "", ""));
        assert!(tuesday.get().contains("Sun Nov 30 2025"));
        assert!(!tuesday.get().contains("Sat Nov 29 2025"));
        assert_eq!(
            tuesday.get(),
            serde_json::Value::String(system_prompt("P \"q\"\n", "n", "i", &tuesday_env, "", ""))
                .to_string()
        );
    }

    #[test]
    fn the_kept_tokens_are_bounded() {
        let prefix = EscapedPrefix::new("P");
        let first = prefix.with_suffix("0".into());
        for n in 1..=RECENT_SUFFIXES {
            prefix.with_suffix(n.to_string());
        }
        let recent = prefix.recent.lock().expect("lock");
        assert_eq!(recent.len(), RECENT_SUFFIXES);
        assert!(!recent.contains_key("0"), "the oldest went first");
        drop(recent);
        assert_eq!(first.get(), "\"P0\"");
    }
}
