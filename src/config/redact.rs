//! Secrets hidden for display: URLs for logs, the effective config for `check-config`.

use super::{Config, StoreUrl};

/// `url` with the password of its userinfo (`http://user:PASS@host/`) and every query value
/// (`?api-version=<redacted>&sig=<redacted>`: Azure-style servers take keys and signatures
/// there) replaced, for logs and `check-config`. A URL with neither is returned as it was.
pub fn redacted_url(url: &str) -> String {
    const MARK: &str = "harness-proxy-redacted";
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() || parsed.query().is_some() => {
            if parsed.password().is_some() && parsed.set_password(Some(MARK)).is_err() {
                return "<redacted URL>".to_owned();
            }
            let query = parsed.query().map(redacted_query);
            parsed.set_query(None);
            let mut shown = parsed
                .to_string()
                .replace(&format!(":{MARK}@"), ":<redacted>@");
            if let Some(query) = query {
                // After the path, before any fragment.
                let at = shown.find('#').unwrap_or(shown.len());
                shown.insert_str(at, &format!("?{query}"));
            }
            shown
        }
        Ok(_) => url.to_owned(),
        // Unparseable URLs are refused by `validate`; never echo one that might hold a secret.
        Err(_) => "<unparseable URL>".to_owned(),
    }
}

/// A query with each value replaced (`k=<redacted>`); a bare item may be a secret itself.
pub(super) fn redacted_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) => format!("{key}=<redacted>"),
            None if pair.is_empty() => String::new(),
            None => "<redacted>".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The effective config as TOML with every secret replaced, for `check-config`.
pub fn redacted_toml(config: &Config) -> String {
    let mut shown = config.clone();
    let hide = |v: &mut Option<String>| {
        if v.is_some() {
            *v = Some("<redacted>".to_owned());
        }
    };
    hide(&mut shown.upstream.api_key);
    shown.upstream.base_url = redacted_url(&shown.upstream.base_url);
    hide(&mut shown.auth.admin_token);
    hide(&mut shown.opencode.reasoning_key);
    if let StoreUrl::Redis(url) = &mut shown.titles.store {
        *url = StoreUrl::Redis(url.clone()).to_string();
    }
    toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
}
