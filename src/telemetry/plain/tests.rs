use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::SecondsFormat;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;

use super::{PlainFields, write_at};

/// Everything a subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[derive(Debug)]
struct Outer(Inner);

#[derive(Debug)]
struct Inner;

impl std::fmt::Display for Outer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("upstream \x1b[31mfailed")
    }
}

impl std::error::Error for Outer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl std::fmt::Display for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset\u{85}")
    }
}

impl std::error::Error for Inner {}

/// Events and spans with every kind of field the proxy logs, and a few it does not.
fn emit_everything() {
    let span = tracing::info_span!("request", request_id = %"7f3c-1", r#type = "chat", later = tracing::field::Empty);
    let _entered = span.enter();
    span.record("later", 42_u64);
    tracing::info!(
        target: "harness_proxy::access",
        request_id = %"7f3c-1",
        method = %"POST",
        path = %"/v1/chat/completions",
        harness = "opencode",
        status = 200_u16,
        upstream_status = Some(200_u16),
        error = Option::<&str>::None,
        duration_ms = format_args!("{:.2}", 1.234_f64),
        bytes = 1_234_u64,
        outcome = "complete",
        "request"
    );
    tracing::warn!(
        quoted = "a \"b\"\nc\td",
        flag = true,
        ratio = 0.5_f64,
        count = -3_i64,
        "message with \x1b[2J, \x07\x08\x0c\x7f and \u{9b} in it: {}",
        "args"
    );
    let error = Outer(Inner);
    tracing::error!(
        error = &error as &(dyn std::error::Error + 'static),
        "upstream gone"
    );
    tracing::error!(error = &Inner as &(dyn std::error::Error + 'static));
    tracing::info!(debug = ?vec!["a", "b"], display = %"plain", r#type = "raw");
    tracing::info!("");
}

fn lines(plain: bool) -> String {
    let captured = Captured::default();
    let builder = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone());
    if plain {
        tracing::subscriber::with_default(
            builder.fmt_fields(PlainFields).finish(),
            emit_everything,
        );
    } else {
        tracing::subscriber::with_default(builder.finish(), emit_everything);
    }
    captured.text()
}

#[test]
fn fields_are_written_as_the_default_writes_them_without_colour() {
    let default = lines(false);
    let plain = lines(true);
    assert_eq!(default.lines().count(), 6, "{default}");
    assert!(
        default.contains(
            "request{request_id=7f3c-1 type=\"chat\" later=42}: request request_id=7f3c-1"
        ),
        "{default}"
    );
    assert!(
        default.contains("\\x1b[2J"),
        "the message is escaped: {default}"
    );
    assert_eq!(plain, default);
}

fn at(seconds: u64, micros: u32) -> String {
    let mut text = String::new();
    let since = Duration::from_secs(seconds) + Duration::from_micros(u64::from(micros));
    write_at(&mut Writer::new(&mut text), since).expect("written");
    text
}

fn rfc3339(seconds: u64, micros: u32) -> String {
    let time =
        chrono::DateTime::from_timestamp(i64::try_from(seconds).expect("small"), micros * 1_000)
            .expect("in range");
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

#[test]
fn the_time_is_rfc_3339_in_utc_with_microseconds() {
    // In an order that reuses the remembered second, moves on, and comes back.
    let instants = [
        (1_796_610_601, 123_456),
        (1_796_610_601, 7),
        (1_796_610_602, 999_999),
        (1_796_610_601, 0),
        (0, 0),
        (951_782_400, 500_000),
        (253_402_300_799, 999_999),
    ];
    for (seconds, micros) in instants {
        assert_eq!(
            at(seconds, micros),
            rfc3339(seconds, micros),
            "{seconds}.{micros}"
        );
    }
    assert_eq!(at(1_796_610_601, 123_456), "2026-12-07T02:30:01.123456Z");
}

#[test]
fn a_year_past_9999_is_left_to_the_default() {
    // The default writes the present time then; only the shape is the same.
    let text = at(253_402_300_800, 0);
    assert!(
        text.ends_with('Z') && text.len() == "2026-12-07T02:30:01.123456Z".len(),
        "{text}"
    );
}
