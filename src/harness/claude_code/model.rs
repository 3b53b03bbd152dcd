//! What Claude Code decides from the model's name and the conversation's first words
//! (docs/harnesses.md): the token limit, the thinking form, the effort, the model's display
//! name, the billing line and the session id. Pure.
//!
//! The billing line's `cch` and the session id are hashes of what stays the same for a whole
//! conversation (its model and first user words; the route's prompt-cache scope when there is
//! one), never of the request: the product wants turn N+1's body to extend turn N's byte for
//! byte, and the reference's per-request hasher is not stable across builds anyway.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The Claude Code version the billing line and the user agent name.
pub const VERSION: &str = "2.1.158";

/// The model's canonical slug: the part after the last `/`, before the first `:`.
pub fn canonical(model: &str) -> &str {
    let tail = model.rsplit('/').next().unwrap_or(model);
    tail.split(':').next().unwrap_or(tail)
}

/// The minor version of a Claude 4 model of `family` (`claude-opus-4-6` → 6).
fn minor(model: &str, family: &str) -> Option<u32> {
    let slug = canonical(model);
    [
        format!("claude-{family}-4-"),
        format!("claude-{family}-4."),
        format!("claude-{family}4-"),
        format!("claude-{family}4."),
    ]
    .iter()
    .find_map(|prefix| slug.strip_prefix(prefix.as_str()))
    .and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

fn at_least_4_6(model: &str, family: &str) -> bool {
    minor(model, family).is_some_and(|m| m >= 6)
}

/// `max_tokens`: 64000 for Opus 4.6 and later, else 32000.
pub fn max_tokens(model: &str) -> u64 {
    if at_least_4_6(model, "opus") {
        64_000
    } else {
        32_000
    }
}

/// `thinking`: adaptive for the models that choose their own budget, else all but one of the
/// token limit; none when the effort is `none`.
pub fn thinking(model: &str, effort: Option<&str>) -> Option<Value> {
    if effort == Some("none") {
        return None;
    }
    let adaptive = canonical(model) == "claude-mythos-preview"
        || at_least_4_6(model, "opus")
        || at_least_4_6(model, "sonnet");
    Some(if adaptive {
        json!({"type": "adaptive"})
    } else {
        json!({"type": "enabled", "budget_tokens": max_tokens(model) - 1})
    })
}

/// `output_config.effort` of the full profile: the session's effort mapped to Claude's three
/// (a custom one as it is), else `high`; only for Claude models, which take an effort.
pub fn effort(model: &str, effort: Option<&str>) -> Option<String> {
    if !canonical(model).starts_with("claude-") {
        return None;
    }
    let mapped = match effort.unwrap_or("high") {
        "none" => return None,
        "minimal" | "low" => "low",
        "medium" => "medium",
        "high" | "xhigh" | "max" | "ultra" => "high",
        custom => custom,
    };
    Some(mapped.to_owned())
}

/// The model as Claude Code's environment section names it (`claude-sonnet-4-5` → `Sonnet 4.5`).
pub fn display_name(model: &str) -> String {
    let slug = canonical(model);
    if slug == "claude-opus-4-7" {
        return "Opus 4.7 (1M context)".to_owned();
    }
    let parts: Vec<&str> = slug.split('-').collect();
    match parts.as_slice() {
        ["claude", family, a, b, ..]
            if a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit()) =>
        {
            let mut chars = family.chars();
            let family: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            format!("{family} {a}.{b}")
        }
        _ => slug.to_owned(),
    }
}

/// The first system block: Claude Code's billing line. `v` is the reference's algorithm
/// (SHA-256 of a salt, three characters of `words` and the version); `cch` a stable hash of the
/// request's kind, the model and `words` (see the module's note).
pub fn billing_line(kind: &str, model: &str, words: &str) -> String {
    let chars: Vec<char> = words.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('0');
    let seed = format!("59cf53e54c78{}{}{}{VERSION}", at(4), at(7), at(20));
    let v = &hex::encode(Sha256::digest(seed.as_bytes()))[..3];
    let digest = Sha256::digest(format!("{kind}\n{model}\n{words}").as_bytes());
    let cch = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0xF_FFFF;
    format!(
        "x-anthropic-billing-header: cc_version={VERSION}.{v}; cc_entrypoint=sdk-cli; cch={cch:05x};"
    )
}

/// `metadata.user_id`: Claude Code's JSON string of a device id (the proxy's own, fixed), no
/// account, and the session.
pub fn user_id(session: &str) -> String {
    json!({"device_id": device_id(), "account_uuid": "", "session_id": session}).to_string()
}

fn device_id() -> String {
    hex::encode(Sha256::digest(b"harness-proxy claude-code device"))
}

/// A session id (UUID form) for a conversation known by `seed`.
pub fn session_id(seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let h = hex::encode(&digest[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_billing_version_matches_the_reference_s_vectors() {
        let version = |words: &str| {
            let line = billing_line("message", "m", words);
            line["x-anthropic-billing-header: cc_version=2.1.158.".len()..][..3].to_owned()
        };
        assert_eq!(version("Use the Write tool exactly once"), "c9b");
        assert_eq!(
            version(
                "Create /tmp/child-proof.txt with exactly CHILD_OK followed by a newline, then reply with exactly the UTF-8 string whose hex bytes are 4348494c445f444f4e45 and nothing else."
            ),
            "c64"
        );
        assert_eq!(version("Fix the login bug"), "df4");
    }

    #[test]
    fn the_billing_line_is_stable_for_a_conversation_and_shaped_as_claude_code_s() {
        let line = billing_line("message", "claude-sonnet-4-5", "Fix the login bug");
        assert_eq!(
            line,
            billing_line("message", "claude-sonnet-4-5", "Fix the login bug")
        );
        assert!(line.starts_with(
            "x-anthropic-billing-header: cc_version=2.1.158.df4; cc_entrypoint=sdk-cli; cch="
        ));
        let cch = line
            .rsplit("cch=")
            .next()
            .expect("a cch")
            .trim_end_matches(';');
        assert_eq!(cch.len(), 5);
        assert!(
            cch.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(
            line,
            billing_line("title", "claude-sonnet-4-5", "Fix the login bug")
        );
    }

    #[test]
    fn model_facts_follow_the_version() {
        assert_eq!(max_tokens("claude-opus-4-6"), 64_000);
        assert_eq!(max_tokens("anthropic/claude-opus-4.7:thinking"), 64_000);
        assert_eq!(max_tokens("claude-sonnet-4-5"), 32_000);
        assert_eq!(
            thinking("claude-sonnet-4-6", None),
            Some(json!({"type": "adaptive"}))
        );
        assert_eq!(
            thinking("claude-sonnet-4-5", Some("high")),
            Some(json!({"type": "enabled", "budget_tokens": 31_999}))
        );
        assert_eq!(thinking("claude-opus-4-6", Some("none")), None);
        assert_eq!(
            effort("claude-sonnet-4-5", Some("xhigh")).as_deref(),
            Some("high")
        );
        assert_eq!(
            effort("claude-sonnet-4-5", Some("minimal")).as_deref(),
            Some("low")
        );
        assert_eq!(effort("glm-4.6", Some("high")), None);
        assert_eq!(display_name("claude-sonnet-4-5"), "Sonnet 4.5");
        assert_eq!(display_name("claude-opus-4-7"), "Opus 4.7 (1M context)");
        assert_eq!(display_name("glm-4.6"), "glm-4.6");
    }
}
