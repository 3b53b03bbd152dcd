//! The results file (one JSON object per target) as markdown: one table of every target's figures
//! with "added" (target − direct) and ratios to the direct baseline, then the proxy's ratios to
//! each peer, then the notes (targets that could not be measured, errors seen).

use std::fmt::Write as _;

use serde_json::Value;

pub fn table(results: &str) -> Result<String, String> {
    let rows: Vec<Value> = results
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("results line {l}: {e}")))
        .collect::<Result<_, _>>()?;
    let direct = rows
        .iter()
        .find(|r| r["kind"] == "direct")
        .map(|r| &r["figures"]);
    let mut out = String::new();
    out.push_str(
        "| target | small chat p50 / p99 µs (added) | 32 KB turn p50 / p99 µs (added) | req/s c=32 (× direct) | req/s c=32 streaming (× direct) | CPU µs/req c=32 | TTFT p50 / p99 µs (added) | added µs/event, 256-event stream | CPU µs/event: streamed burst / paced / folded / translated | paced gap over pacing p99 / max µs | 1,024 / 2,048 paced streams: failed, stalls, max gap ms | RSS MiB idle → 1,024 → 2,048 streams → after |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mut notes = Vec::new();
    for row in &rows {
        let name = row["name"].as_str().unwrap_or("?");
        let note = row["note"].as_str().unwrap_or("");
        let Some(f) = row.get("figures").filter(|f| f.is_object()) else {
            let _ = writeln!(out, "| {name} | {} | | | | | | | | | | |", cell_text(note));
            continue;
        };
        if !note.is_empty() {
            notes.push(format!("{name}: {note}"));
        }
        for phase in ["small", "turn", "ttft", "burst", "fold256"] {
            if f[phase]["failed"].as_u64().unwrap_or(0) > 0 {
                notes.push(format!(
                    "{name}, {phase}: {} failed ({})",
                    f[phase]["failed"],
                    f[phase]["first_error"].as_str().unwrap_or("").trim()
                ));
            }
            if f[phase]["truncated"] == true {
                notes.push(format!(
                    "{name}, {phase}: stopped at the time cap after {} requests",
                    f[phase]["n"]
                ));
            }
        }
        if f["rps_errors"].as_u64().unwrap_or(0) > 0 {
            notes.push(format!("{name}, c=32: {} failed requests", f["rps_errors"]));
        }
        if f["stream_rps_errors"].as_u64().unwrap_or(0) > 0 {
            notes.push(format!(
                "{name}, c=32 streaming: {} failed requests",
                f["stream_rps_errors"]
            ));
        }
        let stream_rps = f["stream_rps_c32"].as_f64();
        let stream_rps_ratio = direct
            .and_then(|d| d["stream_rps_c32"].as_f64())
            .zip(stream_rps)
            .map(|(d, r)| format!(" ({:.2}×)", r / d))
            .unwrap_or_default();
        let per_event_added = direct.and_then(|d| {
            let events = f["burst_events"].as_f64()?;
            Some((f["burst"]["mean_us"].as_f64()? - d["burst"]["mean_us"].as_f64()?) / events)
        });
        let rps = f["rps_c32"].as_f64();
        let rps_ratio = direct
            .and_then(|d| d["rps_c32"].as_f64())
            .zip(rps)
            .map(|(d, r)| format!(" ({:.2}×)", r / d))
            .unwrap_or_default();
        let sustained = ["sustained_1024", "sustained_2048", "sustained_64"]
            .iter()
            .filter(|k| f[**k].is_object())
            .map(|k| {
                let s = &f[*k];
                if let Some(error) = s["first_error"].as_str() {
                    notes.push(format!("{name}, {k}: {}", error.trim()));
                }
                format!(
                    "{}: {}, {}, {}",
                    s["streams"],
                    s["failed"],
                    s["stalls"],
                    ms(s["max_gap_us"].as_f64())
                )
            })
            .collect::<Vec<_>>()
            .join(" / ");
        let rss = [
            f["rss_idle_kib"].as_f64(),
            f["sustained_1024"]["rss_peak_kib"]
                .as_f64()
                .or(f["sustained_64"]["rss_peak_kib"].as_f64()),
            f["sustained_2048"]["rss_peak_kib"].as_f64(),
            f["rss_after_kib"].as_f64(),
        ]
        .iter()
        .map(|kib| kib.map_or("–".into(), |k| format!("{:.0}", k / 1024.0)))
        .collect::<Vec<_>>()
        .join(" → ");
        let cpu_events = [
            f["stream_event_cpu_ns"].as_f64(),
            f["paced_event_cpu_ns"].as_f64(),
            f["fold_event_cpu_ns"].as_f64(),
            f["translated_event_cpu_ns"].as_f64(),
        ]
        .iter()
        .map(|ns| ns.map_or("–".into(), |n| format!("{:.1}", n / 1000.0)))
        .collect::<Vec<_>>()
        .join(" / ");
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {}{rps_ratio} | {}{stream_rps_ratio} | {} | {} | {} | {} | {} / {} | {} | {} |",
            latency(&f["small"], direct.map(|d| &d["small"])),
            latency(&f["turn"], direct.map(|d| &d["turn"])),
            rps.map_or("–".into(), thousands),
            stream_rps.map_or("–".into(), thousands),
            f["rps_cpu_ns"]
                .as_f64()
                .map_or("–".into(), |ns| thousands(ns / 1000.0)),
            latency(&f["ttft"], direct.map(|d| &d["ttft"])),
            per_event_added
                .filter(|_| row["kind"] != "direct")
                .map_or("–".into(), |us| format!("{us:+.1}")),
            if row["kind"] == "direct" {
                "–".into()
            } else {
                cpu_events
            },
            us(f["paced_gaps"]["p99_over_pace_us"].as_f64()),
            us(f["paced_gaps"]["max_over_pace_us"].as_f64()),
            if sustained.is_empty() {
                "–".into()
            } else {
                sustained
            },
            if row["kind"] == "direct" {
                "–".into()
            } else {
                rss
            },
        );
    }
    peers(&rows, direct, &mut out);
    if !notes.is_empty() {
        out.push_str("\nNotes:\n");
        for note in notes {
            let _ = writeln!(out, "- {}", cell_text(&note));
        }
    }
    Ok(out)
}

/// The proxy's targets against each measured peer: throughput and added latency ratios.
fn peers(rows: &[Value], direct: Option<&Value>, out: &mut String) {
    let measured = |kind: &str| {
        rows.iter()
            .filter(|r| r["kind"] == kind && r["figures"].is_object())
            .collect::<Vec<_>>()
    };
    let (ours, peers) = (measured("proxy"), measured("peer"));
    if peers.is_empty() || ours.is_empty() {
        return;
    }
    let added_p99 = |f: &Value, phase: &str| {
        Some(f[phase]["p99_us"].as_f64()? - direct?[phase]["p99_us"].as_f64()?)
    };
    let _ = write!(out, "\n| proxy target |");
    for peer in &peers {
        let name = peer["name"].as_str().unwrap_or("?");
        let _ = write!(
            out,
            " req/s ÷ {name}: JSON / streaming | {name} added p99 ÷ ours: small / 32 KB / TTFT |"
        );
    }
    out.push('\n');
    out.push_str(&format!("|---|{}\n", "---|---|".repeat(peers.len())));
    for row in ours {
        let f = &row["figures"];
        let _ = write!(out, "| {} |", row["name"].as_str().unwrap_or("?"));
        for peer in &peers {
            let p = &peer["figures"];
            let rps = |key: &str| {
                f[key]
                    .as_f64()
                    .zip(p[key].as_f64())
                    .map_or("–".into(), |(a, b)| format!("{:.2}×", a / b))
            };
            let ratio = |phase: &str| {
                added_p99(p, phase)
                    .zip(added_p99(f, phase))
                    .map_or("–".into(), |(theirs, mine)| {
                        format!("{:.1}×", theirs / mine.max(1.0))
                    })
            };
            let _ = write!(
                out,
                " {} / {} | {} / {} / {} |",
                rps("rps_c32"),
                rps("stream_rps_c32"),
                ratio("small"),
                ratio("turn"),
                ratio("ttft")
            );
        }
        out.push('\n');
    }
}

fn latency(phase: &Value, direct: Option<&Value>) -> String {
    let (Some(p50), Some(p99)) = (phase["p50_us"].as_f64(), phase["p99_us"].as_f64()) else {
        return "–".into();
    };
    let added = direct
        .and_then(|d| Some((p50 - d["p50_us"].as_f64()?, p99 - d["p99_us"].as_f64()?)))
        .filter(|_| !std::ptr::eq(phase, direct.unwrap_or(&Value::Null)));
    match added {
        Some((a50, a99)) if a50 != 0.0 || a99 != 0.0 => format!(
            "{} / {} ({} / {})",
            thousands(p50),
            thousands(p99),
            signed(a50),
            signed(a99)
        ),
        _ => format!("{} / {}", thousands(p50), thousands(p99)),
    }
}

fn us(value: Option<f64>) -> String {
    value.map_or("–".into(), thousands)
}

fn ms(value: Option<f64>) -> String {
    value.map_or("–".into(), |us| format!("{:.0}", us / 1000.0))
}

fn signed(value: f64) -> String {
    let sign = if value < 0.0 { "−" } else { "+" };
    format!("{sign}{}", thousands(value.abs()))
}

fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.round());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(signed(-1500.0), "−1,500");
    }
}
