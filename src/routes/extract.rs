//! Extractors whose rejection is a `ProxyError`, so bad input gets the OpenAI error shape too
//! (axum's own rejections answer `text/plain`).

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
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
