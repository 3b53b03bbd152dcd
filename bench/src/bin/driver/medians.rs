//! Several runs' results files as one table of medians, every run's figure beside its median,
//! then the performance targets (BENCHMARKS.md) checked against the medians, met or missed and by
//! how much. Each run's "added" figures are against that run's own direct baseline.

use std::fmt::Write as _;

use serde_json::Value;

/// One figure of one target, in each run that measured it.
type Runs = Vec<f64>;

struct Figures {
    runs: Vec<Vec<Value>>,
}

impl Figures {
    fn parse(texts: &[String]) -> Result<Self, String> {
        let runs = texts
            .iter()
            .map(|text| {
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| serde_json::from_str(l).map_err(|e| format!("results line {l}: {e}")))
                    .collect::<Result<Vec<Value>, _>>()
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { runs })
    }

    /// Target names in the order of the first run.
    fn names(&self) -> Vec<String> {
        self.runs
            .first()
            .into_iter()
            .flatten()
            .filter(|r| r["figures"].is_object())
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// `pick(target, direct)` in each run where both exist.
    fn each(&self, name: &str, pick: impl Fn(&Value, &Value) -> Option<f64>) -> Runs {
        self.runs
            .iter()
            .filter_map(|rows| {
                let row = rows.iter().find(|r| r["name"] == name)?;
                let direct = rows.iter().find(|r| r["kind"] == "direct")?;
                pick(&row["figures"], &direct["figures"])
            })
            .collect()
    }

    /// The measured peers, in the order of the first run.
    fn peers(&self) -> Vec<String> {
        self.runs
            .first()
            .into_iter()
            .flatten()
            .filter(|r| r["kind"] == "peer" && r["figures"].is_object())
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect()
    }
}

fn added(phase: &'static str, key: &'static str) -> impl Fn(&Value, &Value) -> Option<f64> {
    move |f, d| Some(f[phase][key].as_f64()? - d[phase][key].as_f64()?)
}

fn plain(key: &'static str) -> impl Fn(&Value, &Value) -> Option<f64> {
    move |f, _| f[key].as_f64()
}

fn mib(pointer: &'static str) -> impl Fn(&Value, &Value) -> Option<f64> {
    move |f, _| f.pointer(pointer)?.as_f64().map(|kib| kib / 1024.0)
}

fn median(runs: &Runs) -> Option<f64> {
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

fn cell(runs: &Runs) -> String {
    let Some(m) = median(runs) else {
        return "–".into();
    };
    let all: Vec<String> = runs.iter().map(|v| format!("{v:.0}")).collect();
    format!("**{m:.0}** ({})", all.join(", "))
}

pub fn medians(texts: &[String]) -> Result<String, String> {
    let figures = Figures::parse(texts)?;
    let mut out = format!(
        "Medians of {} runs (each run's figure in brackets); added = target − that run's mock direct, µs\n\n",
        figures.runs.len()
    );
    out.push_str("| target | small chat added p50 | added p99 | 32 KB turn added p99 | TTFT added p99 | req/s c=32 JSON | req/s c=32 streaming | RSS MiB idle / 1,024 streams / after |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for name in figures.names() {
        let is_direct = figures
            .runs
            .first()
            .and_then(|rows| rows.iter().find(|r| r["name"] == name.as_str()))
            .is_some_and(|r| r["kind"] == "direct");
        let latency = |phase, key| {
            if is_direct {
                "–".into()
            } else {
                cell(&figures.each(&name, added(phase, key)))
            }
        };
        let rss = [
            "/rss_idle_kib",
            "/sustained_1024/rss_peak_kib",
            "/rss_after_kib",
        ]
        .map(|p| median(&figures.each(&name, mib(p))).map_or("–".into(), |m| format!("{m:.0}")))
        .join(" / ");
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {rss} |",
            latency("small", "p50_us"),
            latency("small", "p99_us"),
            latency("turn", "p99_us"),
            latency("ttft", "p99_us"),
            cell(&figures.each(&name, plain("rps_c32"))),
            cell(&figures.each(&name, plain("stream_rps_c32"))),
        );
    }
    targets(&figures, &mut out);
    Ok(out)
}

const SHIPPED: [&str; 2] = ["opencode as shipped, no id", "opencode as shipped, with id"];
const TITLES_OFF: &str = "opencode, titles off (diagnostic)";
const PASSTHROUGH: &str = "passthrough";
const FLOOR: &str = "bare hyper relay (rig floor)";

/// Met or missed lines, one per target.
struct Verdicts(Vec<String>);

impl Verdicts {
    fn check(&mut self, what: String, value: Option<f64>, bound: Option<f64>, at_most: bool) {
        let verdict = match (value, bound) {
            (None, _) | (_, None) => "not measured".to_owned(),
            (Some(v), Some(b)) if (at_most && v <= b) || (!at_most && v >= b) => {
                format!("**met** ({v:.2})")
            }
            (Some(v), Some(b)) => format!(
                "**missed** ({v:.2}; by {:.0} %)",
                (v / b - 1.0).abs() * 100.0
            ),
        };
        let sign = if at_most { "≤" } else { "≥" };
        let bound = bound.map_or("?".into(), |b| format!("{b:.2}"));
        self.0.push(format!("- {what} {sign} {bound}: {verdict}"));
    }
}

/// Issue 36's targets, each met or missed against the medians; then, for passthrough, what it adds
/// above the rig's floor (the part of its added time that is the proxy's own).
fn targets(figures: &Figures, out: &mut String) {
    let m = |name: &str, pick: &dyn Fn(&Value, &Value) -> Option<f64>| {
        median(&figures.each(name, pick))
    };
    let mut v = Verdicts(Vec::new());
    let direct = figures.runs.first().and_then(|rows| {
        let direct = rows.iter().find(|r| r["kind"] == "direct")?;
        direct["name"].as_str().map(str::to_owned)
    });
    let rig = direct
        .as_deref()
        .and_then(|d| m(d, &plain("stream_rps_c32")));
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?.max(1.0));
    let scaled = |a: Option<f64>, k: f64| a.map(|a| a * k);

    // 1. The relay near the wire.
    let p = PASSTHROUGH;
    for (what, phase, key, bound) in [
        ("small chat added p50 µs", "small", "p50_us", 100.0),
        ("small chat added p99 µs", "small", "p99_us", 150.0),
        ("TTFT added p50 µs", "ttft", "p50_us", 100.0),
        ("TTFT added p99 µs", "ttft", "p99_us", 200.0),
        (
            "64-event stream total added p50 µs",
            "stream64",
            "p50_us",
            150.0,
        ),
    ] {
        v.check(
            format!("{p}: {what}"),
            m(p, &added(phase, key)),
            Some(bound),
            true,
        );
    }
    let p_streams = m(p, &plain("stream_rps_c32"));
    v.check(
        format!("{p}: streams c=32 ÷ the rig (mock direct)"),
        ratio(p_streams, rig),
        Some(0.9),
        false,
    );

    // 2. First tokens at the relay's cost; 3. titles never hurt a burst.
    let p_ttft50 = m(p, &added("ttft", "p50_us"));
    let p_ttft99 = m(p, &added("ttft", "p99_us"));
    let off = |pointer| m(TITLES_OFF, &plain_at(pointer));
    for name in SHIPPED {
        v.check(
            format!("{name}: TTFT added p50 µs (passthrough's + 50)"),
            m(name, &added("ttft", "p50_us")),
            p_ttft50.map(|p| p + 50.0),
            true,
        );
        v.check(
            format!("{name}: TTFT added p99 µs (1.2 × passthrough's)"),
            m(name, &added("ttft", "p99_us")),
            scaled(p_ttft99, 1.2),
            true,
        );
        let streams = m(name, &plain("stream_rps_c32"));
        v.check(
            format!("{name}: streams c=32 ÷ the rig"),
            ratio(streams, rig),
            Some(0.85),
            false,
        );
        v.check(
            format!("{name}: 512 paced streams, streams lost (a gap over 200 ms)"),
            m(name, &plain_at("/sustained_512/lost")),
            Some(0.0),
            true,
        );
        for (what, pointer, bound) in [
            (
                "median worst gap ÷ titles off",
                "/sustained_512/worst_gap_p50_us",
                1.2,
            ),
            (
                "TTFT p99 ÷ titles off",
                "/sustained_512/first_event_p99_us",
                1.2,
            ),
            ("peak RSS ÷ titles off", "/sustained_512/rss_peak_kib", 1.15),
        ] {
            v.check(
                format!("{name}: 512 paced streams, {what}"),
                ratio(m(name, &plain_at(pointer)), off(pointer)),
                Some(bound),
                true,
            );
        }
    }

    // 4. The fold and big turns; 5. memory.
    let o = SHIPPED[1];
    let fold = m(o, &plain_at("/fold256/p50_us"));
    let mock_stream = direct
        .as_deref()
        .and_then(|d| m(d, &plain_at("/burst/p50_us")));
    v.check(
        format!("{o}: fold overhead p50 µs (folded 256 deltas − the mock's own 256-delta stream)"),
        fold.zip(mock_stream).map(|(f, s)| f - s),
        Some(120.0),
        true,
    );
    let turn = m(o, &plain_at("/turn/p99_us"));
    let small = m(o, &plain_at("/small/p99_us"));
    v.check(
        format!("{o}: 32 KB turn p99 − small chat p99 µs"),
        turn.zip(small).map(|(t, s)| t - s),
        Some(200.0),
        true,
    );
    v.check(
        format!("{o}: RSS MiB with 1,024 open streams"),
        m(o, &mib("/sustained_1024/rss_peak_kib")),
        Some(64.0),
        true,
    );
    let idle = m(o, &mib("/rss_idle_kib"));
    let after = m(o, &mib("/rss_after_kib"));
    v.check(
        format!("{o}: RSS after the streams ÷ idle"),
        ratio(after, idle),
        Some(1.2),
        true,
    );

    out.push_str("\nTargets (issue 36, against the medians):\n");
    for line in v.0 {
        let _ = writeln!(out, "{line}");
    }
    above_floor(figures, out);
    against_peers(figures, out);
}

/// Like with like (issue 36, item 6): each peer's relay against passthrough, as ratios of medians.
fn against_peers(figures: &Figures, out: &mut String) {
    let m = |name: &str, pick: &dyn Fn(&Value, &Value) -> Option<f64>| {
        median(&figures.each(name, pick))
    };
    let peers = figures.peers();
    if peers.is_empty() {
        return;
    }
    out.push_str(
        "\nPeers against passthrough (ratios of medians; > 1 means passthrough does better):\n",
    );
    for peer in peers {
        let faster = |key| Some(m(PASSTHROUGH, &plain(key))? / m(&peer, &plain(key))?);
        let leaner = |phase, key| {
            Some(m(&peer, &added(phase, key))? / m(PASSTHROUGH, &added(phase, key))?.max(1.0))
        };
        let show = |r: Option<f64>| r.map_or("–".into(), |r| format!("{r:.2}×"));
        let _ = writeln!(
            out,
            "- {peer}: req/s c=32 JSON {}, streaming {}; their added ÷ ours: small chat p50 {}, p99 {}, TTFT p50 {}, p99 {}",
            show(faster("rps_c32")),
            show(faster("stream_rps_c32")),
            show(leaner("small", "p50_us")),
            show(leaner("small", "p99_us")),
            show(leaner("ttft", "p50_us")),
            show(leaner("ttft", "p99_us")),
        );
    }
}

/// Passthrough's added figures minus the floor relay's: the proxy's own share.
fn above_floor(figures: &Figures, out: &mut String) {
    let m = |name: &str, phase, key| median(&figures.each(name, added(phase, key)));
    let mut lines = Vec::new();
    for (what, phase, key) in [
        ("small chat p50", "small", "p50_us"),
        ("small chat p99", "small", "p99_us"),
        ("TTFT p50", "ttft", "p50_us"),
        ("TTFT p99", "ttft", "p99_us"),
        ("64-event stream p50", "stream64", "p50_us"),
    ] {
        if let (Some(p), Some(f)) = (m(PASSTHROUGH, phase, key), m(FLOOR, phase, key)) {
            lines.push(format!("- {what}: passthrough adds {p:.0} µs, the floor {f:.0}: {:+.0} µs is the proxy's own", p - f));
        }
    }
    if !lines.is_empty() {
        out.push_str("\nAbove the rig's floor (a bare hyper relay on the same core):\n");
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// A figure at a JSON pointer, as it is.
fn plain_at(pointer: &'static str) -> impl Fn(&Value, &Value) -> Option<f64> {
    move |f, _| f.pointer(pointer)?.as_f64()
}
