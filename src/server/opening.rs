//! Which protocol a new connection opens with, read from its first bytes without taking them off
//! the socket (`TcpStream::peek`), so that what serves it reads its first request from the socket
//! itself.
//!
//! Why not leave it to hyper-util's auto builder: it reads up to 24 bytes into a buffer of its
//! own and hands them to hyper's HTTP/1 reader first, alone. hyper keeps 8 KiB free after what it
//! holds, so its read buffer grows to 16 KiB on that second read and stays so for the life of
//! the connection: 8 KiB more per open stream than hyper's own 8 KiB (issue 36, item 5).
//!
//! Owns: that choice. Must not: take a byte off the socket, or wait for more than its first read.

use tokio::net::TcpStream;

/// HTTP/2's connection preface, sent first by a client with prior knowledge (h2c, RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection's first bytes say.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Opening {
    /// Not HTTP/2's preface: HTTP/1, served by hyper's HTTP/1 directly.
    Http1,
    /// HTTP/2's preface, or as much of it as has arrived (or the peek failed): hyper-util's auto
    /// builder reads it and decides, as it always did.
    Undecided,
    /// The peer closed before sending a byte.
    Closed,
}

impl Opening {
    /// The connection's first bytes, as many as have arrived, once at least one has.
    pub(super) async fn peek(tcp: &TcpStream) -> Self {
        let mut first = [0u8; H2_PREFACE.len()];
        match tcp.peek(&mut first).await {
            Ok(0) => Self::Closed,
            Ok(n) => Self::of(&first[..n]),
            // The socket's own error: the auto builder's read meets it and ends the connection.
            Err(_) => Self::Undecided,
        }
    }

    /// One byte that differs from the preface settles it; a piece of the preface does not (an
    /// HTTP/1 method starting with `P` differs by its second byte).
    fn of(first: &[u8]) -> Self {
        if H2_PREFACE.starts_with(first) {
            Self::Undecided
        } else {
            Self::Http1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_line_is_http1_from_its_first_differing_byte() {
        for first in [
            &b"POST /v1/chat/completions HTTP/1.1\r\n"[..],
            b"GET /healthz HTTP/1.1\r\n",
            b"PUT",
            b"PO",
            b"\x16\x03\x01", // a TLS ClientHello: hyper's HTTP/1 answers it, as before
        ] {
            assert_eq!(Opening::of(first), Opening::Http1, "{first:?}");
        }
    }

    #[test]
    fn the_preface_or_a_piece_of_it_is_left_to_the_auto_builder() {
        for first in [
            H2_PREFACE,
            &H2_PREFACE[..1],
            &H2_PREFACE[..3],
            &H2_PREFACE[..23],
        ] {
            assert_eq!(Opening::of(first), Opening::Undecided, "{first:?}");
        }
    }
}
