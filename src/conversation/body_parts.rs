//! An upstream request body as a few runs of bytes, some of them shared by every request that
//! sends them: a harness's system prompt, made once and kept, goes out as its own run instead of
//! being copied into each body. A rewritten body lives until the upstream's head (a resend), and
//! for the whole answer when calls may be answered upstream (`routes::correct`), so a copy of
//! opencode's ~9 KB prompt was most of what an open or waiting request held (issue 36).
//! The runs go out in order (vectored writes); `to_bytes` joins them for a reader of the JSON.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

/// The body's runs, in order; their lengths add up to `len`.
#[derive(Clone, Debug, Default)]
pub struct BodyParts {
    repr: Repr,
    len: usize,
}

#[derive(Clone, Debug)]
enum Repr {
    /// Most bodies: one run, as it was written (or as the client sent it).
    One(Bytes),
    /// Shared so a resend's clone costs a count, not a list.
    Many(Arc<[Bytes]>),
}

impl Default for Repr {
    fn default() -> Self {
        Self::One(Bytes::new())
    }
}

impl BodyParts {
    /// The runs, empty ones left out.
    pub fn from_parts(parts: Vec<Bytes>) -> Self {
        let mut parts: Vec<Bytes> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let len = parts.iter().map(Bytes::len).sum();
        let repr = match parts.len() {
            0 => Repr::default(),
            1 => Repr::One(parts.pop().unwrap_or_default()),
            _ => Repr::Many(parts.into()),
        };
        Self { repr, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The runs in order.
    pub fn parts(&self) -> &[Bytes] {
        match &self.repr {
            Repr::One(one) if one.is_empty() => &[],
            Repr::One(one) => std::slice::from_ref(one),
            Repr::Many(many) => many,
        }
    }

    /// The runs, by value (each as unshared as it was once this body is gone).
    pub fn into_parts(self) -> Vec<Bytes> {
        self.parts().to_vec()
    }

    /// The body as one run: the same bytes when it is one, else joined (a copy) for a reader of
    /// the whole JSON (a resend's edit, the inspector, `rewrite`, tests).
    pub fn to_bytes(&self) -> Bytes {
        match &self.repr {
            Repr::One(one) => one.clone(),
            Repr::Many(many) => {
                let mut joined = BytesMut::with_capacity(self.len);
                for part in many.iter() {
                    joined.extend_from_slice(part);
                }
                joined.freeze()
            }
        }
    }
}

impl From<Bytes> for BodyParts {
    fn from(bytes: Bytes) -> Self {
        Self {
            len: bytes.len(),
            repr: Repr::One(bytes),
        }
    }
}

impl From<Vec<u8>> for BodyParts {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes::from(bytes).into()
    }
}

impl PartialEq for BodyParts {
    /// Equal bytes, however they are split.
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.to_bytes() == other.to_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_their_order_and_join_to_the_whole_body() {
        let shared = Bytes::from_static(b"\"a shared prompt\"");
        let body = BodyParts::from_parts(vec![
            Bytes::from_static(b"{\"content\":"),
            Bytes::new(),
            shared.clone(),
            Bytes::from_static(b"}"),
        ]);
        assert_eq!(body.parts().len(), 3, "the empty run is left out");
        assert_eq!(body.len(), 29);
        assert_eq!(&body.to_bytes()[..], b"{\"content\":\"a shared prompt\"}");
        assert_eq!(
            body.parts()[1].as_ptr(),
            shared.as_ptr(),
            "the shared run is not copied"
        );
        assert_eq!(body, BodyParts::from(body.to_bytes()));
    }

    #[test]
    fn one_run_is_the_same_bytes_and_an_empty_body_has_no_run() {
        let bytes = Bytes::from_static(b"{}");
        let body = BodyParts::from(bytes.clone());
        assert_eq!(body.to_bytes().as_ptr(), bytes.as_ptr());
        assert_eq!(body.parts().len(), 1);
        let empty = BodyParts::from_parts(vec![Bytes::new()]);
        assert!(empty.is_empty());
        assert!(empty.parts().is_empty());
        assert!(BodyParts::default().parts().is_empty());
    }
}
