//! The human log line's fields and time without colour, for less work per line. A line is
//! written for every request (the access log), and tracing-subscriber's default formatters spend
//! most of theirs on painting with a style that is off (nu-ansi-term's `Display` of an empty
//! style, twice per field) and on working out the date on every line: about 8k of the 16k
//! instructions of a request's access-log line (BENCHMARKS.md, "The access-log line written for
//! less"). The text is the defaults' with colour off, byte for byte (the tests compare them);
//! at a terminal, where colour is on, `telemetry` keeps the defaults.
//!
//! Must not: change a line's text.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{MakeVisitor, VisitFmt, VisitOutput};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// The fields as `DefaultFields` writes them with colour off: the message first as it is, then
/// `name=value` with the value's `Debug`, separated by spaces.
#[derive(Debug, Default, Clone, Copy)]
pub struct PlainFields;

impl<'a> MakeVisitor<Writer<'a>> for PlainFields {
    type Visitor = PlainVisitor<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> Self::Visitor {
        PlainVisitor {
            writer: target,
            is_empty: true,
            result: Ok(()),
        }
    }
}

/// `DefaultVisitor` without the painting.
pub struct PlainVisitor<'a> {
    writer: Writer<'a>,
    is_empty: bool,
    result: fmt::Result,
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        match value.source() {
            Some(source) => self.record_debug(
                field,
                &format_args!(
                    "{} {}.sources={}",
                    Escaped(format_args!("{value}")),
                    field.name(),
                    Sources(source)
                ),
            ),
            None => self.record_debug(field, &format_args!("{}", Escaped(format_args!("{value}")))),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let name = field.name();
        // Metadata of a `log` record, already written by the event's formatter.
        if name.starts_with("log.") {
            return;
        }
        if self.is_empty {
            self.is_empty = false;
        } else {
            self.result = self.writer.write_char(' ');
        }
        self.result = if name == "message" {
            write!(self.writer, "{:?}", Escaped(value))
        } else {
            let name = name.strip_prefix("r#").unwrap_or(name);
            write!(self.writer, "{name}={value:?}")
        };
    }
}

impl VisitOutput<fmt::Result> for PlainVisitor<'_> {
    fn finish(self) -> fmt::Result {
        self.result
    }
}

impl VisitFmt for PlainVisitor<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        &mut self.writer
    }
}

/// A value written with the terminal's control characters escaped, as the default formatter
/// writes a message and an error (no log line can move a reader's cursor or ring its bell).
struct Escaped<T>(T);

impl<T: fmt::Debug> fmt::Debug for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(Escaping(f), "{:?}", self.0)
    }
}

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(Escaping(f), "{}", self.0)
    }
}

/// An error's chain of sources as a list, each escaped.
struct Sources<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut current = Some(self.0);
        while let Some(error) = current {
            list.entry(&Escaped(format_args!("{error}")));
            current = error.source();
        }
        list.finish()
    }
}

/// Writes through, escaping ESC, BEL, BS, FF, DEL and the C1 controls (U+0080–U+009F).
struct Escaping<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for Escaping<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Almost every piece has none: one scan, then one write.
        if !s.chars().any(needs_escape) {
            return self.0.write_str(s);
        }
        for ch in s.chars() {
            match ch {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                ch if needs_escape(ch) => write!(self.0, "\\u{{{:x}}}", u32::from(ch))?,
                ch => self.0.write_char(ch)?,
            }
        }
        Ok(())
    }
}

fn needs_escape(ch: char) -> bool {
    matches!(
        ch,
        '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}'
    )
}

/// The time as tracing-subscriber's `SystemTime` writes it (`2026-12-07T02:30:01.123456Z`), with
/// the date and time of day worked out once a second per thread instead of on every line.
#[derive(Debug, Default, Clone, Copy)]
pub struct UtcMicros;

thread_local! {
    /// The second last written by this thread, and its text up to the seconds.
    static SECOND: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
}

impl FormatTime for UtcMicros {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => write_at(w, since),
            Err(_) => tracing_subscriber::fmt::time::SystemTime.format_time(w),
        }
    }
}

/// The time `since` the epoch, as `UtcMicros` writes it.
fn write_at(w: &mut Writer<'_>, since: Duration) -> fmt::Result {
    let Ok(second) = i64::try_from(since.as_secs()) else {
        return tracing_subscriber::fmt::time::SystemTime.format_time(w);
    };
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != second {
            text.clear();
            write_second(text, second)?;
            *cached = second;
        }
        if text.is_empty() {
            // A year past 9999: written as the default writes it.
            return tracing_subscriber::fmt::time::SystemTime.format_time(w);
        }
        w.write_str(text)?;
        write_micros(w, since.subsec_micros())
    })
}

/// `YYYY-MM-DDTHH:MM:SS` of a second since the epoch; nothing for a year past 9999.
fn write_second(text: &mut String, second: i64) -> fmt::Result {
    let Some(time) = chrono::DateTime::from_timestamp(second, 0) else {
        return Ok(());
    };
    if chrono::Datelike::year(&time) > 9999 {
        return Ok(());
    }
    write!(text, "{}", time.format("%Y-%m-%dT%H:%M:%S"))
}

/// `.uuuuuuZ`: six digits of microseconds.
fn write_micros(w: &mut Writer<'_>, micros: u32) -> fmt::Result {
    let mut digits = *b".000000Z";
    let mut rest = micros;
    for slot in digits[1..7].iter_mut().rev() {
        *slot = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // ASCII by construction.
    w.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
}

#[cfg(test)]
mod tests;
