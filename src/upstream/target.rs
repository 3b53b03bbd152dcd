//! Where a request goes: the configured base URL taken apart once (what requests are joined to,
//! its query, path and host), and each request's URL joined to it, never outside the base's path
//! or host (`UpstreamError::PathEscape`). Its userinfo is handed to `credentials` as `Basic`.

use http::{HeaderValue, Uri};

use super::UpstreamError;

/// The base URL as every request's URL is made from it.
pub(super) struct Target {
    /// Base URL without its trailing slash, its query or its userinfo.
    base: String,
    /// The base URL's query (`api-version=…` of Azure-style servers): put before the request's
    /// own query on every request.
    query: Option<String>,
    /// The base URL's path as the URL parser normalised it, with a trailing slash: every request
    /// URL must stay under it.
    path: String,
    /// The base URL's host and port: every request URL must keep them.
    authority: Option<String>,
}

impl Target {
    /// The target of `base_url`, and the base URL's userinfo as `Basic` credentials.
    pub(super) fn of(base_url: &str) -> (Self, Option<HeaderValue>) {
        let parts = BaseUrl::split(base_url);
        let target = Self {
            path: format!("{}/", parts.path),
            authority: parts
                .base
                .parse::<Uri>()
                .ok()
                .and_then(|uri| uri.authority().map(|a| a.as_str().to_owned())),
            base: parts.base,
            query: parts.query,
        };
        (target, parts.credentials)
    }

    /// The base URL itself, with its query: what Claude Code's `HEAD` check asks (`preflight`).
    pub(super) fn root(&self) -> Option<Uri> {
        let url = match &self.query {
            Some(query) => format!("{}?{query}", self.base),
            None => self.base.clone(),
        };
        url.parse().ok()
    }

    /// The URL of `path` (relative to the base URL, with its query): the base's query first,
    /// and never a path outside the base's or another host. A path with nothing to normalise (no dot, percent
    /// sign, backslash or fragment), the one every agent sends, is joined as it is; any other
    /// is normalised by the URL parser first, as a server would read it.
    pub(super) fn url(&self, path: &str) -> Result<Uri, UpstreamError> {
        let (own_path, own_query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q).filter(|q| !q.is_empty())),
            None => (path, None),
        };
        let plain = !own_path
            .bytes()
            .any(|b| matches!(b, b'.' | b'%' | b'\\' | b'#'));
        let uri = if plain {
            let mut text = String::with_capacity(self.base.len() + path.len() + 1);
            text.push_str(&self.base);
            text.push_str(own_path);
            match (&self.query, own_query) {
                (Some(base), Some(own)) => {
                    text.extend(["?", base, "&", own]);
                }
                (Some(only), None) => text.extend(["?", only.as_str()]),
                (None, Some(only)) => text.extend(["?", only]),
                (None, None) => {}
            }
            text.parse::<Uri>().ok()
        } else {
            None
        };
        let uri = match uri {
            Some(uri) => uri,
            None => self.normalised(path)?,
        };
        let same_host = uri.authority().map(|a| a.as_str()) == self.authority.as_deref();
        if !same_host || !format!("{}/", uri.path()).starts_with(&self.path) {
            return Err(UpstreamError::PathEscape);
        }
        Ok(uri)
    }

    /// `url` through the URL parser: dot segments (also percent-encoded) resolved, the
    /// fragment dropped.
    fn normalised(&self, path: &str) -> Result<Uri, UpstreamError> {
        let mut url = url::Url::parse(&format!("{}{}", self.base, path))
            .map_err(|_| UpstreamError::PathEscape)?;
        if let Some(base_query) = &self.query {
            let query = match url.query() {
                Some(own) if !own.is_empty() => format!("{base_query}&{own}"),
                _ => base_query.clone(),
            };
            url.set_query(Some(&query));
        }
        url.set_fragment(None);
        url.as_str()
            .parse::<Uri>()
            .map_err(|_| UpstreamError::PathEscape)
    }
}

/// The configured base URL taken apart: what requests are joined to, its path, its query, and
/// its userinfo as `Basic` credentials. The URL was checked by `config`; an unparseable one is
/// kept as it is (every request to it then fails as a path outside the base).
struct BaseUrl {
    base: String,
    path: String,
    query: Option<String>,
    credentials: Option<HeaderValue>,
}

impl BaseUrl {
    fn split(text: &str) -> Self {
        let Ok(mut url) = url::Url::parse(text) else {
            return Self {
                base: text.trim_end_matches('/').to_owned(),
                path: String::new(),
                query: None,
                credentials: None,
            };
        };
        let query = url.query().filter(|q| !q.is_empty()).map(str::to_owned);
        let credentials = (!url.username().is_empty() || url.password().is_some())
            .then(|| basic(url.username(), url.password().unwrap_or_default()))
            .flatten();
        // Requests are joined to `base`: without them there, no URL sent holds the credentials.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        let path = url.path().trim_end_matches('/').to_owned();
        Self {
            base: url.as_str().trim_end_matches('/').to_owned(),
            path,
            query,
            credentials,
        }
    }
}

/// `Basic` credentials of a URL's (percent-encoded) userinfo.
fn basic(user: &str, password: &str) -> Option<HeaderValue> {
    use base64::Engine as _;
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!("{}:{}", decode(user), decode(password));
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}
