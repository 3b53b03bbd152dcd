//! What a route takes out of a request, refusing with a `ProxyError` so that bad input gets the
//! route's error shape too (axum's own rejections answer `text/plain`): path parameters, and the
//! body, whole and bounded.

use axum::body::Body;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::error::ProxyError;

/// `Path<T>`, refusing an undecodable segment (e.g. `/titles/%FF%FE`, not UTF-8) with 400
/// `invalid_path`.
pub struct PathParam<T>(pub T);

impl<S, T> FromRequestParts<S> for PathParam<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ProxyError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(ProxyError::InvalidRequest {
                message: format!("invalid path: {}", rejection.body_text()),
                param: None,
                code: "invalid_path",
            }),
        }
    }
}

/// Reads the whole request body, refusing more than `limit` bytes.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ProxyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    axum::body::to_bytes(body, limit).await.map_err(|err| {
        let too_large = std::error::Error::source(&err)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ProxyError::BodyTooLarge { limit }
        } else {
            ProxyError::BodyRead(err.into())
        }
    })
}
