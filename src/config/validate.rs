//! Checks that span keys or need more than a type: URLs, time zones, bounds, origins.

use std::time::Duration;

use super::{Config, ConfigError, LimitsConfig, ServerConfig};

pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    let bad = |key: &str, message: String| ConfigError::Key {
        key: key.to_owned(),
        origin: String::new(),
        message,
    };
    let url = url::Url::parse(&config.upstream.base_url)
        .map_err(|e| bad("upstream.base_url", format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(
            "upstream.base_url",
            "must be an http or https URL".into(),
        ));
    }
    if config
        .upstream
        .api_key
        .as_deref()
        .is_some_and(str::is_empty)
    {
        return Err(bad(
            "upstream.api_key",
            "is empty; remove it to forward the client's key".into(),
        ));
    }
    if config.opencode.reasoning_key.is_some() && config.opencode.reasoning_key_file.is_some() {
        return Err(bad(
            "opencode.reasoning_key_file",
            "and `opencode.reasoning_key` are both set; keep one".into(),
        ));
    }
    if config.limits.max_body_bytes == 0 {
        return Err(bad(
            "limits.max_body_bytes",
            "must be greater than 0".into(),
        ));
    }
    if config.limits.max_concurrent_requests == 0 {
        return Err(bad(
            "limits.max_concurrent_requests",
            "must be greater than 0".into(),
        ));
    }
    if config.limits.max_sse_event_bytes == 0 {
        return Err(bad(
            "limits.max_sse_event_bytes",
            "must be greater than 0".into(),
        ));
    }
    validate_limits(&config.limits)?;
    if let Some(git) = &config.opencode.git
        && !matches!(git.as_str(), "yes" | "no")
    {
        return Err(bad(
            "opencode.git",
            format!("must be `yes` or `no`, not `{git}`"),
        ));
    }
    if let Some(tz) = &config.opencode.timezone
        && tz.parse::<chrono_tz::Tz>().is_err()
    {
        return Err(bad(
            "opencode.timezone",
            format!("unknown IANA time zone `{tz}`"),
        ));
    }
    if config.titles.max_chars == 0 {
        return Err(bad("titles.max_chars", "must be greater than 0".into()));
    }
    if config.titles.input_chars == 0 {
        return Err(bad("titles.input_chars", "must be greater than 0".into()));
    }
    if config.titles.input == crate::config::TitleInput::Exchange
        && config.titles.order != crate::config::TitleOrder::After
    {
        return Err(bad(
            "titles.input",
            format!(
                "`exchange` titles from the answer, so it needs `titles.order = \"after\"`, not `{}`",
                order_name(config.titles.order)
            ),
        ));
    }
    if config.titles.max_in_flight == 0 {
        return Err(bad("titles.max_in_flight", "must be greater than 0".into()));
    }
    if config.titles.max_records == 0 {
        return Err(bad("titles.max_records", "must be greater than 0".into()));
    }
    if config.titles.lease < Duration::from_secs(1) {
        return Err(bad("titles.lease", "must be at least 1s".into()));
    }
    if let Some(bad_key) = config
        .auth
        .keys
        .iter()
        .position(|k| k.len() != 64 || !k.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad(
            "auth.keys",
            format!("entry {bad_key} is not a SHA-256 hash in hex (64 hex digits)"),
        ));
    }
    if config.inspect.enabled && config.inspect.capacity == 0 {
        return Err(bad("inspect.capacity", "must be greater than 0".into()));
    }
    validate_server(&config.server)?;
    if config.harness_header.parse::<http::HeaderName>().is_err() {
        return Err(bad(
            "harness_header",
            format!("`{}` is not a valid header name", config.harness_header),
        ));
    }
    Ok(())
}

/// Allowed origins must be origins, allowed hosts bare names: a typo must not open the door wider.
fn validate_server(server: &ServerConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, message: String| ConfigError::Key {
        key: format!("server.{key}"),
        origin: String::new(),
        message,
    };
    let not_an_origin = |text: &str| {
        let text = text.trim();
        url::Url::parse(text).map_or(true, |url| {
            !matches!(url.scheme(), "http" | "https")
                || url.host_str().is_none_or(str::is_empty)
                || url.path() != "/"
                || text.ends_with('/')
                || url.query().is_some()
                || url.fragment().is_some()
                || !url.username().is_empty()
                || url.password().is_some()
        })
    };
    if let Some(entry) = server.allowed_origins.iter().find(|o| not_an_origin(o)) {
        return Err(bad(
            "allowed_origins",
            format!(
                "`{entry}` is not an origin like `https://console.example:8443` (scheme, host, optional port; no path)"
            ),
        ));
    }
    if let Some(entry) = server.allowed_hosts.iter().find(|h| {
        let h = h.trim();
        h.is_empty()
            || (h != "*" && !(h.starts_with('[') && h.ends_with(']')) && h.contains(':'))
            || h.contains(['/', ' ', '@', '?', '#'])
    }) {
        return Err(bad(
            "allowed_hosts",
            format!(
                "`{entry}` is not a host name without a port, like `proxy.internal`, `10.0.0.7`, `[fd00::7]` or `*`"
            ),
        ));
    }
    Ok(())
}

/// The connection and memory bounds: none may be zero, and a body must fit the in-flight budget.
fn validate_limits(limits: &LimitsConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, message: &str| ConfigError::Key {
        key: format!("limits.{key}"),
        origin: String::new(),
        message: message.to_owned(),
    };
    let positive = [
        (
            "request_read_timeout",
            limits.request_read_timeout.is_zero(),
        ),
        (
            "request_idle_timeout",
            limits.request_idle_timeout.is_zero(),
        ),
        ("keep_alive_timeout", limits.keep_alive_timeout.is_zero()),
        ("max_connections", limits.max_connections == 0),
        ("max_title_subscribers", limits.max_title_subscribers == 0),
        ("max_answer_bytes", limits.max_answer_bytes == 0),
    ];
    if let Some((key, _)) = positive.iter().find(|(_, zero)| *zero) {
        return Err(bad(key, "must be greater than 0"));
    }
    if limits.max_inflight_body_bytes < limits.max_body_bytes {
        return Err(bad(
            "max_inflight_body_bytes",
            "must be at least `limits.max_body_bytes`, or no body of the largest size could be read",
        ));
    }
    // Budgets are taken in u32 steps (tokio's semaphore), so one body must fit in one.
    if u32::try_from(limits.max_body_bytes).is_err() {
        return Err(bad("max_body_bytes", "must be below 4 GiB"));
    }
    Ok(())
}

/// `titles.order` as it is written in the configuration.
fn order_name(order: crate::config::TitleOrder) -> &'static str {
    match order {
        crate::config::TitleOrder::Parallel => "parallel",
        crate::config::TitleOrder::Before => "before",
        crate::config::TitleOrder::After => "after",
        crate::config::TitleOrder::Off => "off",
    }
}
