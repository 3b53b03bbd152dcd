//! Layering, typed env values, errors naming keys, redaction.

use std::collections::BTreeMap;

use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn defaults_load_without_any_source() {
    let config =
        load(None, &BTreeMap::new(), &FlagOverrides::default()).expect("defaults are valid");
    assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.upstream.base_url, "https://api.openai.com/v1");
    assert_eq!(config.limits.max_body_bytes, 32 * 1024 * 1024);
    assert_eq!(config.shutdown_grace, Duration::from_secs(30));
}

#[test]
fn precedence_is_file_then_env_then_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "listen = \"127.0.0.1:1\"\ndefault_harness = \"file\"\n[upstream]\nbase_url = \"http://file/v1\"\nmax_retries = 5\n")
        .expect("write");
    let env = env(&[
        ("HARNESS_PROXY__DEFAULT_HARNESS", "env"),
        ("HARNESS_PROXY__UPSTREAM__BASE_URL", "http://env/v1"),
        ("OTHER", "ignored"),
    ]);
    let flags = FlagOverrides {
        upstream: Some("http://flag/v1".into()),
        ..FlagOverrides::default()
    };
    let config = load(Some(&file), &env, &flags).expect("valid");
    assert_eq!(config.listen.to_string(), "127.0.0.1:1");
    assert_eq!(config.default_harness, "env");
    assert_eq!(config.upstream.base_url, "http://flag/v1");
    assert_eq!(config.upstream.max_retries, 5);
}

#[test]
fn env_values_are_typed_and_strings_stay_strings() {
    let env = env(&[
        ("HARNESS_PROXY__UPSTREAM__MAX_RETRIES", "0"),
        (
            "HARNESS_PROXY__TITLES__HARNESSES",
            "[\"opencode\", \"passthrough\"]",
        ),
        ("HARNESS_PROXY__OPENCODE__TODAY", "Sat Nov 29 2025"),
        ("HARNESS_PROXY__TITLES__MODEL", "4"),
        ("HARNESS_PROXY__TITLES__TIMEOUT", "250ms"),
    ]);
    let config = load(None, &env, &FlagOverrides::default()).expect("valid");
    assert_eq!(config.upstream.max_retries, 0);
    assert_eq!(config.titles.harnesses, ["opencode", "passthrough"]);
    assert_eq!(config.opencode.today.as_deref(), Some("Sat Nov 29 2025"));
    assert_eq!(config.titles.model.as_deref(), Some("4"));
    assert_eq!(config.titles.timeout, Duration::from_millis(250));
}

#[test]
fn unknown_keys_are_named_with_their_origin() {
    let err = load(
        None,
        &env(&[("HARNESS_PROXY__UPSTREAM__BASEURL", "x")]),
        &FlagOverrides::default(),
    )
    .expect_err("unknown key");
    let text = err.to_string();
    assert!(text.contains("`upstream.baseurl`"), "{text}");
    assert!(text.contains("HARNESS_PROXY__UPSTREAM__BASEURL"), "{text}");

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "[titles]\nordr = \"before\"\n").expect("write");
    let text = load(Some(&file), &BTreeMap::new(), &FlagOverrides::default())
        .expect_err("unknown key")
        .to_string();
    assert!(text.contains("`titles.ordr`"), "{text}");
    assert!(text.contains("c.toml"), "the file is named: {text}");
}

#[test]
fn bad_values_name_the_key() {
    let cases = [
        ("HARNESS_PROXY__TITLES__ORDER", "sideways", "titles.order"),
        (
            "HARNESS_PROXY__LIMITS__MAX_BODY_BYTES",
            "lots",
            "limits.max_body_bytes",
        ),
        ("HARNESS_PROXY__SHUTDOWN_GRACE", "soon", "shutdown_grace"),
        (
            "HARNESS_PROXY__UPSTREAM__BASE_URL",
            "ftp://x",
            "upstream.base_url",
        ),
        (
            "HARNESS_PROXY__OPENCODE__TIMEZONE",
            "Mars/Base",
            "opencode.timezone",
        ),
        ("HARNESS_PROXY__LISTEN", "nowhere", "listen"),
        (
            "HARNESS_PROXY__LIMITS__REQUEST_READ_TIMEOUT",
            "0s",
            "limits.request_read_timeout",
        ),
        (
            "HARNESS_PROXY__LIMITS__MAX_CONNECTIONS",
            "0",
            "limits.max_connections",
        ),
        (
            "HARNESS_PROXY__LIMITS__MAX_INFLIGHT_BODY_BYTES",
            "1024",
            "limits.max_inflight_body_bytes",
        ),
        (
            "HARNESS_PROXY__LIMITS__MAX_TITLE_SUBSCRIBERS",
            "none",
            "limits.max_title_subscribers",
        ),
        (
            "HARNESS_PROXY__SERVER__ALLOWED_ORIGINS",
            "[\"https://console.example/ui\"]",
            "server.allowed_origins",
        ),
        (
            "HARNESS_PROXY__SERVER__ALLOWED_ORIGINS",
            "[\"null\"]",
            "server.allowed_origins",
        ),
        (
            "HARNESS_PROXY__SERVER__ALLOWED_HOSTS",
            "[\"proxy.internal:8080\"]",
            "server.allowed_hosts",
        ),
    ];
    for (var, value, key) in cases {
        let text = load(None, &env(&[(var, value)]), &FlagOverrides::default())
            .expect_err(var)
            .to_string();
        assert!(text.contains(&format!("`{key}`")), "{var}: {text}");
    }
    let flags = FlagOverrides {
        log_format: Some("xml".into()),
        ..FlagOverrides::default()
    };
    let text = load(None, &BTreeMap::new(), &flags)
        .expect_err("bad flag")
        .to_string();
    assert!(
        text.contains("`log_format`") && text.contains("--log-format"),
        "{text}"
    );
}

#[test]
fn the_password_of_a_url_is_redacted() {
    assert_eq!(
        redacted_url("http://user:PASS@h:8/v1"),
        "http://user:<redacted>@h:8/v1"
    );
    assert_eq!(
        redacted_url("https://:p%40ss@h/v1/"),
        "https://:<redacted>@h/v1/"
    );
    assert_eq!(redacted_url("http://h/v1"), "http://h/v1");
    assert_eq!(redacted_url("http://user@h/v1"), "http://user@h/v1");
}

#[test]
fn every_query_value_of_a_url_is_redacted() {
    assert_eq!(
        redacted_url("https://h/v1?api-version=2024-10-21&sig=SECRET"),
        "https://h/v1?api-version=<redacted>&sig=<redacted>"
    );
    assert_eq!(
        redacted_url("http://u:PASS@h/v1?SECRET#frag"),
        "http://u:<redacted>@h/v1?<redacted>#frag"
    );
}

#[test]
fn redaction_hides_secrets() {
    let env = env(&[
        ("HARNESS_PROXY__UPSTREAM__API_KEY", "sk-secret-value"),
        ("HARNESS_PROXY__AUTH__ADMIN_TOKEN", "admin-secret"),
        ("HARNESS_PROXY__OPENCODE__REASONING_KEY", "seal-secret"),
    ]);
    let config = load(None, &env, &FlagOverrides::default()).expect("valid");
    assert_eq!(
        config.opencode.reasoning_key.as_deref(),
        Some("seal-secret")
    );
    let shown = redacted_toml(&config);
    assert!(
        !shown.contains("sk-secret-value")
            && !shown.contains("admin-secret")
            && !shown.contains("seal-secret"),
        "{shown}"
    );
    assert!(shown.contains("<redacted>"));
}

#[test]
fn the_store_url_is_parsed_once_into_its_kind() {
    let parse = |text: &str| {
        load(
            None,
            &env(&[("HARNESS_PROXY__TITLES__STORE", text)]),
            &FlagOverrides::default(),
        )
        .map(|c| c.titles.store)
    };
    assert_eq!(parse("memory").expect("memory"), StoreUrl::Memory);
    assert_eq!(
        parse("sqlite:///data/t.db").expect("sqlite"),
        StoreUrl::Sqlite(PathBuf::from("/data/t.db"))
    );
    assert_eq!(
        parse("redis://127.0.0.1:6379/3").expect("redis"),
        StoreUrl::Redis("redis://127.0.0.1:6379/3".into())
    );
    for bad in [
        "postgres://x",
        "sqlite://",
        "redis:///0",
        "redis://h:1/zero",
    ] {
        let text = parse(bad).expect_err(bad).to_string();
        assert!(text.contains("`titles.store`"), "{bad}: {text}");
    }
    let secret = StoreUrl::Redis("redis://:hunter2@cache:6379/0".into());
    assert!(!secret.to_string().contains("hunter2"), "{secret}");
    let mut config = Config::default();
    config.titles.store = secret;
    assert!(!redacted_toml(&config).contains("hunter2"));
}

#[test]
fn a_seal_key_and_a_seal_key_file_together_are_refused_naming_the_key() {
    let both = env(&[
        ("HARNESS_PROXY__OPENCODE__REASONING_KEY", "inline"),
        (
            "HARNESS_PROXY__OPENCODE__REASONING_KEY_FILE",
            "/run/secrets/key",
        ),
    ]);
    let text = load(None, &both, &FlagOverrides::default())
        .expect_err("ambiguous")
        .to_string();
    assert!(text.contains("`opencode.reasoning_key_file`"), "{text}");
    let file = env(&[(
        "HARNESS_PROXY__OPENCODE__REASONING_KEY_FILE",
        "/run/secrets/key",
    )]);
    let config = load(None, &file, &FlagOverrides::default()).expect("a file alone");
    assert_eq!(
        config.opencode.reasoning_key_file,
        Some(PathBuf::from("/run/secrets/key"))
    );
}

#[test]
fn the_prompt_cache_key_is_conversation_off_or_an_error_naming_the_key() {
    let default = load(None, &BTreeMap::new(), &FlagOverrides::default()).expect("valid");
    assert_eq!(
        default.opencode.prompt_cache_key,
        PromptCacheKey::Conversation
    );
    let key = "HARNESS_PROXY__OPENCODE__PROMPT_CACHE_KEY";
    let off = load(None, &env(&[(key, "off")]), &FlagOverrides::default()).expect("valid");
    assert_eq!(off.opencode.prompt_cache_key, PromptCacheKey::Off);
    let err =
        load(None, &env(&[(key, "session")]), &FlagOverrides::default()).expect_err("not a mode");
    let text = err.to_string();
    assert!(text.contains("`opencode.prompt_cache_key`"), "{text}");
    assert!(text.contains(key), "{text}");
}

#[test]
fn an_exchange_title_input_needs_the_after_order_and_says_so_naming_both_keys() {
    let err = load(
        None,
        &env(&[("HARNESS_PROXY__TITLES__INPUT", "exchange")]),
        &FlagOverrides::default(),
    )
    .expect_err("exchange with the default order");
    let text = err.to_string();
    assert!(text.contains("titles.input"), "{text}");
    assert!(text.contains("titles.order"), "{text}");
    assert!(
        text.contains("parallel"),
        "the order in force is named: {text}"
    );

    let config = load(
        None,
        &env(&[
            ("HARNESS_PROXY__TITLES__INPUT", "exchange"),
            ("HARNESS_PROXY__TITLES__ORDER", "after"),
            ("HARNESS_PROXY__TITLES__INPUT_CHARS", "300"),
        ]),
        &FlagOverrides::default(),
    )
    .expect("exchange with after");
    assert_eq!(config.titles.input, crate::config::TitleInput::Exchange);
    assert_eq!(config.titles.input_chars, 300);
}
