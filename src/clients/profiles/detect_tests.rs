//! Detection and loading of profiles.

use super::super::Profile;
use super::*;
use crate::conversation::ToolDefinition;

fn codex() -> std::sync::Arc<Profile> {
    Profiles::built_in("codex")
}

#[test]
fn untranslatable_arguments_are_left_alone() {
    assert_eq!(
        codex().neutral("shell", "not json"),
        ("shell".into(), "not json".into())
    );
    assert_eq!(codex().client("bash", "{\"command\": 3}", &[]), None);
    assert_eq!(codex().client("read", "{}", &[]), None, "no alias for read");
    assert_eq!(
        Profile::none().neutral("bash", "{\"a\":1}"),
        ("bash".into(), "{\"a\":1}".into())
    );
}

#[test]
fn detection_by_header_then_user_agent_then_none() {
    let profiles = Profiles::load(&[]).expect("built-ins");
    let detect = |pairs: &[(&str, &str)]| {
        let mut headers = HeaderMap::new();
        for (k, v) in pairs {
            headers.insert(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        profiles.detect(&headers, None, &[]).map(|p| p.name.clone())
    };
    assert_eq!(
        detect(&[
            ("x-harness-client", "codex"),
            ("user-agent", "opencode/1.0")
        ])
        .ok()
        .as_deref(),
        Some("codex")
    );
    assert_eq!(
        detect(&[("user-agent", "codex_exec/0.94.0 (Linux)")])
            .ok()
            .as_deref(),
        Some("codex")
    );
    assert_eq!(
        detect(&[("user-agent", "codex_cli_rs/0.94.0")])
            .ok()
            .as_deref(),
        Some("codex")
    );
    assert_eq!(
        detect(&[("user-agent", "opencode/0.5.1")]).ok().as_deref(),
        Some("opencode")
    );
    assert_eq!(
        detect(&[("user-agent", "curl/8")]).ok().as_deref(),
        Some("none"),
        "an agent no profile describes: its tools are read by inference"
    );
    let err = detect(&[("x-harness-client", "vim")]).expect_err("unknown profile");
    assert!(
        err.to_string()
            .contains("known profiles: opencode, codex-responses, codex, claude-code, pi"),
        "{err}"
    );
}

#[test]
fn profiles_load_from_files() {
    let file = |text: &str| vec![("mine.toml".to_owned(), text.to_owned())];
    let profiles = Profiles::load(&file(
        "name = \"mine\"\nuser_agents = [\"mine/\"]\n[[alias]]\nclient = \"run\"\nopencode = \"bash\"\nconverter = \"fields\"\nfields = { cmd = \"command\", cwd = \"workdir\" }\n",
    ))
    .expect("loads");
    let mut headers = HeaderMap::new();
    headers.insert(header::USER_AGENT, "mine/2".parse().expect("ua"));
    let mine = profiles.detect(&headers, None, &[]).expect("detected");
    assert_eq!(
        mine.neutral("run", r#"{"cmd":"ls","cwd":"/"}"#),
        ("shell".into(), r#"{"command":"ls","workdir":"/"}"#.into())
    );
    assert_eq!(
        mine.client("bash", r#"{"command":"ls","description":"d"}"#, &[]),
        Some(("run".into(), r#"{"cmd":"ls","description":"d"}"#.into()))
    );

    let err = Profiles::load(&file(
        "name = \"bad\"\n[[alias]]\nclient = \"x\"\nopencode = \"bash\"\nconverter = \"teleport\"\n",
    ))
        .err()
        .expect("bad converter")
        .to_string();
    assert!(
        err.contains("mine.toml") && err.contains("teleport"),
        "{err}"
    );
}

fn function(name: &str, properties: &[&str]) -> ToolDefinition {
    let properties: serde_json::Map<String, serde_json::Value> = properties
        .iter()
        .map(|p| ((*p).to_owned(), serde_json::json!({"type": "string"})))
        .collect();
    ToolDefinition::Function(crate::conversation::FunctionTool {
        name: name.to_owned(),
        parameters: Some(serde_json::json!({"type": "object", "properties": properties})),
        ..Default::default()
    })
}

#[test]
fn headers_come_before_the_tool_set_and_the_tool_set_before_nothing() {
    let profiles = Profiles::load(&[]).expect("built-ins");
    let pi_tools = [
        function("write", &["path", "content"]),
        function("edit", &["path", "edits"]),
    ];
    let detect = |pairs: &[(&str, &str)], tools: &[ToolDefinition]| {
        let mut headers = HeaderMap::new();
        for (k, v) in pairs {
            headers.insert(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        profiles
            .detect(&headers, None, tools)
            .map(|p| p.name.clone())
            .ok()
    };
    assert_eq!(
        detect(&[("user-agent", "Anthropic/JS 0.91.1")], &pi_tools).as_deref(),
        Some("pi")
    );
    assert_eq!(
        detect(
            &[("user-agent", "QwenCode/0.15.10 (linux; x64)")],
            &pi_tools
        )
        .as_deref(),
        Some("qwen-code")
    );
    assert_eq!(
        detect(&[("x-app", "cli")], &[]).as_deref(),
        Some("claude-code")
    );
    assert_eq!(
        detect(&[("user-agent", "Anthropic/JS 0.91.1")], &[]).as_deref(),
        Some("none")
    );
    // Codex's User-Agent on both fronts: its tools say which dialect.
    let codex = [("user-agent", "codex_exec/0.171.0")];
    assert_eq!(
        detect(&codex, &[function("exec_command", &["cmd"])]).as_deref(),
        Some("codex-responses")
    );
    assert_eq!(
        detect(&codex, &[function("shell", &["command"])]).as_deref(),
        Some("codex")
    );
}

/// The Codex User-Agent list is one list: the profile files say what
/// `conversation::CODEX_USER_AGENTS` says.
#[test]
fn codex_profiles_know_codex_by_the_one_user_agent_list() {
    for name in ["codex", "codex-responses"] {
        assert_eq!(
            Profiles::built_in(name).user_agents,
            crate::conversation::CODEX_USER_AGENTS.to_vec(),
            "{name}"
        );
    }
}

#[test]
fn an_unknown_capability_or_converter_names_the_file_and_the_known_ones() {
    let file = |text: &str| vec![("odd.toml".to_owned(), text.to_owned())];
    let err = Profiles::load(&file(
        "name = \"odd\"\n[[alias]]\nclient = \"x\"\ncapability = \"teleport\"\n",
    ))
    .err()
    .expect("unknown capability")
    .to_string();
    assert!(
        err.contains("odd.toml") && err.contains("known: shell, read"),
        "{err}"
    );
    let err = Profiles::load(&file(
        "name = \"odd\"\n[[alias]]\nclient = \"x\"\ncapability = \"shell\"\noutput = \"tea_leaves\"\n",
    ))
    .err()
    .expect("unknown reader")
    .to_string();
    assert!(
        err.contains("tea_leaves") && err.contains("shell_block"),
        "{err}"
    );
}
