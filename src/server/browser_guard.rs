//! The browser guard: what keeps a web page from using the proxy with the operator's key (CSRF)
//! or reading its answers through a name it controls (DNS rebinding). Before anything else reads
//! a request it refuses
//! - a `POST` whose `Content-Type` is not JSON (`application/json` or `application/*+json`, any
//!   parameters): 415 `unsupported_media_type`. A page may send `text/plain`, a form or no type
//!   without a CORS preflight; a JSON type needs one, and the proxy approves none;
//! - an `Origin` that is neither the request's own (`scheme://` + its `Host`) nor listed in
//!   `server.allowed_origins`, and `Sec-Fetch-Site: cross-site` / `same-site` from a page whose
//!   Origin is not listed (a top-level `GET` navigation excepted: the page cannot read it): 403
//!   `forbidden_origin`;
//! - on a loopback listener, a `Host` that is not a loopback name (`localhost`, `*.localhost`,
//!   127.0.0.0/8, `[::1]`, any port) or listed in `server.allowed_hosts`: 403 `forbidden_host`.
//!   On any other listener the Host is not checked unless `server.allowed_hosts` is set.
//!
//! Non-browser clients (the agents, SDKs, curl) send JSON, no Origin and a Host they were given,
//! so they are unaffected. Used by the proxy's router and by `calibrate`'s capture endpoint.
//! Must not read a body or know a route's protocol: a refusal is a `ProxyError`, shaped by the
//! route's own error layer.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderName, Method, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::config::ServerConfig;
use crate::error::ProxyError;
use crate::routes::error_response::ErrorShape;

/// Why the guard refused a request; rendered through `ProxyError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error(
        "a POST needs `Content-Type: application/json` (got {}); a web page can send other types \
         without asking, so the proxy refuses them",
        got.as_deref().map_or_else(|| "none".to_owned(), |t| format!("`{t}`"))
    )]
    NotJson { got: Option<String> },
    #[error(
        "requests from the web page at `{origin}` are refused: only the proxy's own origin and \
         those listed in `server.allowed_origins` may call it"
    )]
    ForeignOrigin { origin: String },
    #[error(
        "a cross-site request (`Sec-Fetch-Site: {site}`) from a web page is refused: only the \
         proxy's own origin and those listed in `server.allowed_origins` may call it"
    )]
    CrossSite { site: String },
    #[error(
        "Host `{host}` is refused: this proxy listens on a loopback address and serves only \
         loopback names (localhost, 127.0.0.1, [::1]) and those listed in `server.allowed_hosts`"
    )]
    ForeignHost { host: String },
}

impl From<GuardError> for ProxyError {
    fn from(err: GuardError) -> Self {
        let message = err.to_string();
        match err {
            GuardError::NotJson { .. } => Self::UnsupportedMediaType(message),
            GuardError::ForeignOrigin { .. } | GuardError::CrossSite { .. } => Self::Forbidden {
                code: "forbidden_origin",
                message,
            },
            GuardError::ForeignHost { .. } => Self::Forbidden {
                code: "forbidden_host",
                message,
            },
        }
    }
}

/// The rules for one listener, built once at start-up.
#[derive(Debug, Clone)]
pub struct BrowserPolicy {
    /// Whether `Host` is checked: on a loopback listener, or when `allowed_hosts` is set.
    check_hosts: bool,
    /// Lower-case names without a port; `*` turns the Host check off.
    allowed_hosts: Vec<String>,
    /// Lower-case `scheme://host[:port]`, default ports dropped.
    allowed_origins: Vec<String>,
}

impl BrowserPolicy {
    pub fn new(listen: SocketAddr, config: &ServerConfig) -> Self {
        let allowed_hosts: Vec<String> = config
            .allowed_hosts
            .iter()
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .collect();
        let any_host = allowed_hosts.iter().any(|h| h == "*");
        Self {
            check_hosts: !any_host && (listen.ip().is_loopback() || !allowed_hosts.is_empty()),
            allowed_hosts,
            allowed_origins: config
                .allowed_origins
                .iter()
                .filter_map(|o| normal_origin(o))
                .collect(),
        }
    }

    /// The guard's verdict on a request head.
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), GuardError> {
        // Every request passes here: nothing is copied unless it is refused.
        if method == Method::POST {
            let got = headers
                .get(header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()));
            if !got.as_deref().is_some_and(is_json) {
                return Err(GuardError::NotJson {
                    got: got.map(Cow::into_owned),
                });
            }
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| uri.authority().map(Authority::as_str));
        let origin = headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or(""));
        let listed = origin
            .is_some_and(|o| normal_origin(o).is_some_and(|o| self.allowed_origins.contains(&o)));
        if let Some(origin) = origin
            && !listed
            && !is_own_origin(origin, host)
        {
            return Err(GuardError::ForeignOrigin {
                origin: origin.to_owned(),
            });
        }
        if let Some(site) = headers.get(&SEC_FETCH_SITE).and_then(|v| v.to_str().ok())
            && matches!(site, "cross-site" | "same-site")
            && !listed
            && !is_navigation(method, headers)
        {
            return Err(GuardError::CrossSite {
                site: site.to_owned(),
            });
        }
        if self.check_hosts
            && let Some(host) = host
        {
            let name = host_name(host);
            if !is_loopback_name(&name) && !self.allowed_hosts.iter().any(|h| *h == name) {
                return Err(GuardError::ForeignHost {
                    host: host.to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// The middleware of the routes that are not proxied (probes, titles, console):
/// `from_fn_with_state(Arc<BrowserPolicy>, guard)`, as a route layer. The proxied routes run
/// `BrowserPolicy::check` in `layers::Proxied`.
pub async fn guard(
    State(policy): State<Arc<BrowserPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(refusal) = policy.check(request.method(), request.uri(), request.headers()) {
        return ErrorShape::of(request.extensions()).render(ProxyError::from(refusal));
    }
    next.run(request).await
}

/// `application/json` or `application/<anything>+json`, parameters allowed, any case.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .as_bytes();
    let is = |part: &[u8], name: &str| part.eq_ignore_ascii_case(name.as_bytes());
    let Some((kind, sub)) = essence.split_at_checked("application/".len()) else {
        return false;
    };
    is(kind, "application/")
        && (is(sub, "json")
            || sub.len() > "+json".len() && is(&sub[sub.len() - "+json".len()..], "+json"))
}

// Names made once: a lookup by text parses the name on every request.
static SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
static SEC_FETCH_MODE: HeaderName = HeaderName::from_static("sec-fetch-mode");

/// A top-level `GET`/`HEAD` navigation (a followed link): shown to the user, never to the page.
fn is_navigation(method: &Method, headers: &HeaderMap) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && headers
            .get(&SEC_FETCH_MODE)
            .is_some_and(|m| m.as_bytes() == b"navigate")
}

/// `scheme://host[:port]` lower-cased with its default port dropped; `None` for anything else
/// (`null`, a path, another scheme).
pub fn normal_origin(origin: &str) -> Option<String> {
    let origin = origin.trim().to_ascii_lowercase();
    let (scheme, authority) = origin.split_once("://")?;
    let default_port = match scheme {
        "http" => ":80",
        "https" => ":443",
        _ => return None,
    };
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        return None;
    }
    let authority = authority.strip_suffix(default_port).unwrap_or(authority);
    Some(format!("{scheme}://{authority}"))
}

/// Whether `origin` names the host the request was sent to (http or https: behind a TLS proxy the
/// browser's scheme is not the proxy's).
fn is_own_origin(origin: &str, host: Option<&str>) -> bool {
    let (Some(origin), Some(host)) = (normal_origin(origin), host) else {
        return false;
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    authority == host.strip_suffix(default_port).unwrap_or(&host)
}

/// The name of a `Host` value, lower-case, without its port or a trailing dot; IPv6 in brackets.
/// Borrowed when the value is lower-case already (as clients send it).
fn host_name(host: &str) -> Cow<'_, str> {
    let host = host.trim();
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Owned(name_of(&host.to_ascii_lowercase()).to_owned());
    }
    Cow::Borrowed(name_of(host))
}

/// `host_name` of a lower-case, trimmed value.
fn name_of(host: &str) -> &str {
    let name = if host.starts_with('[') {
        host.find(']').map_or(host, |end| &host[..=end])
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.')
}

fn is_loopback_name(name: &str) -> bool {
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().is_ok_and(|ip| {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        });
    }
    // Only the dotted-quad spelling: `127.1` or `2130706433` are not names a user types.
    name.parse::<Ipv4Addr>()
        .is_ok_and(|ip| IpAddr::V4(ip).is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_types_are_told_from_the_ones_a_page_sends_freely() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "APPLICATION/JSON",
            "application/problem+json",
            " Application/Problem+JSON ; q=1",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for refused in [
            "text/plain",
            "text/plain; a=application/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/+json",
            "application/jsonx",
            "application/json+",
            "application",
            "",
        ] {
            assert!(!is_json(refused), "{refused}");
        }
    }

    #[test]
    fn host_names_lose_their_port_and_loopback_is_only_loopback() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("example.com."), "example.com");
        for name in [
            "localhost",
            "a.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "[::1]",
        ] {
            assert!(is_loopback_name(name), "{name}");
        }
        for name in [
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "0.0.0.0",
            "[::]",
            "10.0.0.1",
            "",
        ] {
            assert!(!is_loopback_name(name), "{name}");
        }
    }

    #[test]
    fn origins_are_compared_without_default_ports() {
        assert_eq!(
            normal_origin("HTTPS://Console.Example:443").as_deref(),
            Some("https://console.example")
        );
        assert_eq!(normal_origin("null"), None);
        assert_eq!(normal_origin("http://a/b"), None);
        assert!(is_own_origin(
            "http://localhost:8080",
            Some("localhost:8080")
        ));
        assert!(is_own_origin(
            "https://proxy.example",
            Some("proxy.example")
        ));
        assert!(!is_own_origin(
            "http://localhost:3000",
            Some("localhost:8080")
        ));
        assert!(!is_own_origin("http://localhost:8080", None));
    }
}
