//! The one credential that goes upstream: the configured key (static, or a file or env variable
//! re-read after an upstream 401, as keys get rotated), else the base URL's userinfo as `Basic`,
//! else the client's own key when `auth.forward_client_key` allows; on a Messages upstream a
//! bearer key goes in `x-api-key` (`anthropic_auth`). Owns no request: `Upstream::send` asks it.

use std::sync::RwLock;

use http::{HeaderName, HeaderValue, header};

use super::{BuildError, EnvSource};
use crate::config::UpstreamConfig;

/// A secret string that never prints itself.
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Where the upstream key comes from. File and env sources are re-read after an upstream 401.
enum KeySource {
    ClientForwarded,
    Static(Secret),
    File {
        path: std::path::PathBuf,
        current: RwLock<Option<Secret>>,
    },
    Env {
        var: String,
        /// Where `var` is read again after a 401.
        env: EnvSource,
        current: RwLock<Option<Secret>>,
    },
}

/// What authenticates the proxy's requests upstream.
pub(super) struct Credentials {
    key: KeySource,
    /// `Basic` credentials from the base URL's userinfo, sent when no upstream key is configured
    /// (a configured key wins; the client's key is never sent with them).
    url: Option<HeaderValue>,
    /// Whether the client's own key goes upstream when neither of those is there
    /// (`auth.forward_client_key`).
    pub(super) forward_client_key: bool,
}

impl Credentials {
    /// The configured key's source (a key file read now), beside the base URL's `url` credentials.
    pub(super) fn new(
        config: &UpstreamConfig,
        env: EnvSource,
        url: Option<HeaderValue>,
    ) -> Result<Self, BuildError> {
        let key = if let Some(key) = &config.api_key {
            KeySource::Static(Secret(key.clone()))
        } else if let Some(path) = &config.api_key_file {
            let key = read_key_file(path).map_err(|source| BuildError::KeyFile {
                path: path.clone(),
                source,
            })?;
            KeySource::File {
                path: path.clone(),
                current: RwLock::new(key),
            }
        } else if let Some(var) = &config.api_key_env {
            let key = env_key(&env, var);
            KeySource::Env {
                var: var.clone(),
                env,
                current: RwLock::new(key),
            }
        } else {
            KeySource::ClientForwarded
        };
        Ok(Self {
            key,
            url,
            forward_client_key: true,
        })
    }

    /// What authenticates this proxy's requests upstream, for the start-up log; `None` when
    /// nothing is sent (no key, and the client's is not forwarded).
    pub(super) fn describe(&self) -> Option<&'static str> {
        Some(match (&self.key, &self.url, self.forward_client_key) {
            (KeySource::Static(_), ..) => "the configured key (upstream.api_key)",
            (KeySource::File { .. }, ..) => "the configured key (upstream.api_key_file)",
            (KeySource::Env { .. }, ..) => "the configured key (upstream.api_key_env)",
            (KeySource::ClientForwarded, Some(_), _) => "the base URL's user and password (Basic)",
            (KeySource::ClientForwarded, None, true) => "the client's own key, forwarded",
            (KeySource::ClientForwarded, None, false) => return None,
        })
    }

    /// Whether the key comes from a file or env variable that may have been rotated.
    pub(super) fn is_reloadable(&self) -> bool {
        matches!(self.key, KeySource::File { .. } | KeySource::Env { .. })
    }

    /// Re-reads a file or env key (after an upstream 401). Returns whether a key is now available.
    pub(super) fn reload(&self) -> bool {
        match &self.key {
            KeySource::ClientForwarded => false,
            KeySource::Static(_) => true,
            KeySource::File { path, current } => {
                let fresh = read_key_file(path).ok().flatten();
                let found = fresh.is_some();
                if let Ok(mut slot) = current.write() {
                    *slot = fresh;
                }
                found
            }
            KeySource::Env { var, env, current } => {
                let fresh = env_key(env, var);
                let found = fresh.is_some();
                if let Ok(mut slot) = current.write() {
                    *slot = fresh;
                }
                found
            }
        }
    }

    /// The one `Authorization` sent: the configured key, else the base URL's userinfo as
    /// `Basic`, else the client's own (when `auth.forward_client_key` allows).
    pub(super) fn authorization(&self, client: Option<&HeaderValue>) -> Option<HeaderValue> {
        let client = client.filter(|_| self.forward_client_key);
        let client = self.url.as_ref().or(client);
        let secret = match &self.key {
            KeySource::ClientForwarded => return client.cloned(),
            KeySource::Static(secret) => Some(secret.clone()),
            KeySource::File { current, .. } | KeySource::Env { current, .. } => {
                current.read().ok().and_then(|k| k.clone())
            }
        };
        match secret {
            Some(Secret(key)) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).ok()?;
                value.set_sensitive(true);
                Some(value)
            }
            None => client.cloned(),
        }
    }
}

/// The credential as Anthropic takes it: a bearer key in `x-api-key`; `Basic` credentials (of
/// the base URL) stay in `Authorization`.
pub(super) fn anthropic_auth(authorization: &HeaderValue) -> (HeaderName, HeaderValue) {
    let key = authorization
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|k| HeaderValue::from_str(k.trim()).ok());
    match key {
        Some(mut key) => {
            key.set_sensitive(true);
            (super::X_API_KEY.clone(), key)
        }
        None => (header::AUTHORIZATION, authorization.clone()),
    }
}

/// The key in env variable `var`, trimmed; an empty value is no key.
fn env_key(env: &EnvSource, var: &str) -> Option<Secret> {
    env(var)
        .filter(|k| !k.trim().is_empty())
        .map(|k| Secret(k.trim().to_owned()))
}

fn read_key_file(path: &std::path::Path) -> std::io::Result<Option<Secret>> {
    let text = std::fs::read_to_string(path)?;
    let key = text.trim();
    Ok((!key.is_empty()).then(|| Secret(key.to_owned())))
}
