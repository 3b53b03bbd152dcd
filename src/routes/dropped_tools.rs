//! `x-harness-dropped-tools`: the tools a request's harness and client protocol dropped, named to
//! the client in one bounded header, and the full list in the debug log and in
//! `harness_proxy_dropped_tools_total`; likewise `x-harness-passthrough-tools`, the client tools
//! sent upstream as the client defined them (no harness counterpart), and
//! `harness_proxy_passthrough_tools_total`. Hundreds of dropped MCP tools made a header Node's fetch
//! (Claude Code's client) refuses (`UND_ERR_HEADERS_OVERFLOW`), and 50,000 a header line over
//! 64 KiB. A name counts under its label (`clients::labels`: the names the proxy knows, else
//! `other`), never as a series of its own.

use http::{HeaderMap, HeaderValue};

use crate::clients::labels::ToolLabels;

pub const HEADER: &str = "x-harness-dropped-tools";
pub const PASSTHROUGH_HEADER: &str = "x-harness-passthrough-tools";

/// Most bytes of names the header carries; the rest are counted in a last `...(+N more)`.
pub const MAX_NAMES_BYTES: usize = 2048;

const SEPARATOR: &str = ", ";

/// Names `dropped` (the harness's, then the protocol's) in `headers`, counts each one under its
/// label, and logs the whole list at debug.
pub fn report(
    harness: &'static str,
    labels: &ToolLabels,
    dropped: &[String],
    headers: &mut HeaderMap,
) {
    if dropped.is_empty() {
        return;
    }
    count(
        "harness_proxy_dropped_tools_total",
        harness,
        labels,
        dropped,
    );
    tracing::debug!(
        harness,
        count = dropped.len(),
        tools = %dropped.join(SEPARATOR),
        "tools dropped"
    );
    if let Ok(value) = HeaderValue::from_str(&header_text(dropped)) {
        headers.insert(HEADER, value);
    }
}

/// Names the kept-as-is tools in `headers` (bounded like the dropped ones), counts each one
/// under its label.
pub fn report_passthrough(
    harness: &'static str,
    labels: &ToolLabels,
    kept: &[String],
    headers: &mut HeaderMap,
) {
    if kept.is_empty() {
        return;
    }
    count(
        "harness_proxy_passthrough_tools_total",
        harness,
        labels,
        kept,
    );
    tracing::debug!(harness, count = kept.len(), tools = %kept.join(SEPARATOR), "client tools passed through");
    if let Ok(value) = HeaderValue::from_str(&header_text(kept)) {
        headers.insert(PASSTHROUGH_HEADER, value);
    }
}

/// Adds `names` to counter `metric`, one increment per label (hundreds of names that fold to
/// `other` are one call).
fn count(metric: &'static str, harness: &'static str, labels: &ToolLabels, names: &[String]) {
    let mut by_label: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for name in names {
        *by_label.entry(labels.label(name)).or_default() += 1;
    }
    for (tool, n) in by_label {
        metrics::counter!(metric, "harness" => harness, "tool" => tool).increment(n);
    }
}

/// The header's text: the first names, in order, while they fit in `MAX_NAMES_BYTES`, then
/// `...(+N more)` for the rest. The mark is ASCII (`...`, not `…`): a header value is visible
/// ASCII. A name that is not visible ASCII (nor space) is not shown, only counted.
pub fn header_text(dropped: &[String]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for name in dropped {
        if name.is_empty() || !name.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
            continue;
        }
        let extra = if out.is_empty() { 0 } else { SEPARATOR.len() };
        if out.len() + extra + name.len() > MAX_NAMES_BYTES {
            break;
        }
        if extra > 0 {
            out.push_str(SEPARATOR);
        }
        out.push_str(name);
        shown += 1;
    }
    let rest = dropped.len() - shown;
    if rest > 0 {
        if !out.is_empty() {
            out.push_str(SEPARATOR);
        }
        out.push_str(&format!("...(+{rest} more)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("mcp__server__tool_{i:05}"))
            .collect()
    }

    #[test]
    fn a_short_list_is_named_whole() {
        assert_eq!(
            header_text(&names(2)),
            "mcp__server__tool_00000, mcp__server__tool_00001"
        );
    }

    #[test]
    fn fifty_thousand_names_make_a_header_of_about_two_kib() {
        let all = names(50_000);
        let text = header_text(&all);
        assert!(
            text.len() <= MAX_NAMES_BYTES + ", ...(+50000 more)".len(),
            "{}",
            text.len()
        );
        let (shown, more) = text.rsplit_once(", ...(+").expect("a count");
        let shown: Vec<&str> = shown.split(", ").collect();
        let more: usize = more.trim_end_matches(" more)").parse().expect("a number");
        assert_eq!(shown.len() + more, all.len());
        assert_eq!(shown, all[..shown.len()]);
        assert!(HeaderValue::from_str(&text).is_ok());
    }

    #[test]
    fn names_a_header_cannot_carry_are_counted_not_shown() {
        let dropped = vec!["ok".to_owned(), "caf\u{e9}".to_owned(), "a\nb".to_owned()];
        assert_eq!(header_text(&dropped), "ok, ...(+2 more)");
        assert_eq!(header_text(&["x".repeat(3000)]), "...(+1 more)");
    }
}
