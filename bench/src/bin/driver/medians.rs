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

    fn peer(&self) -> Option<String> {
        self.runs.first()?.iter().find_map(|r| {
            (r["kind"] == "peer" && r["figures"].is_object())
                .then(|| r["name"].as_str().map(str::to_owned))
                .flatten()
        })
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

/// The targets, each met or missed against the medians.
fn targets(figures: &Figures, out: &mut String) {
    let m = |name: &str, pick: &dyn Fn(&Value, &Value) -> Option<f64>| {
        median(&figures.each(name, pick))
    };
    let mut lines = Vec::new();
    let mut check = |what: String, value: Option<f64>, bound: f64, at_most: bool| {
        let verdict = match value {
            None => "not measured".to_owned(),
            Some(v) if (at_most && v <= bound) || (!at_most && v >= bound) => {
                format!("**met** ({v:.2})")
            }
            Some(v) => format!(
                "**missed** ({v:.2}; by {:.0} %)",
                (v / bound - 1.0).abs() * 100.0
            ),
        };
        let sign = if at_most { "≤" } else { "≥" };
        lines.push(format!("- {what} {sign} {bound}: {verdict}"));
    };
    let off_p50 = m(TITLES_OFF, &added("small", "p50_us"));
    let off_p99 = m(TITLES_OFF, &added("small", "p99_us"));
    for name in SHIPPED {
        let p50 = m(name, &added("small", "p50_us"));
        let p99 = m(name, &added("small", "p99_us"));
        let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?.max(1.0));
        check(
            format!("{name}: added p50 ÷ titles off"),
            ratio(p50, off_p50),
            1.15,
            true,
        );
        check(
            format!("{name}: added p99 ÷ titles off"),
            ratio(p99, off_p99),
            1.3,
            true,
        );
        check(format!("{name}: small chat added p50 µs"), p50, 300.0, true);
        check(
            format!("{name}: 32 KB turn added p99 µs"),
            m(name, &added("turn", "p99_us")),
            600.0,
            true,
        );
        check(
            format!("{name}: TTFT added p99 µs"),
            m(name, &added("ttft", "p99_us")),
            300.0,
            true,
        );
    }
    check(
        "passthrough: small chat added p99 µs".into(),
        m("passthrough", &added("small", "p99_us")),
        150.0,
        true,
    );
    let shipped = SHIPPED[1];
    let direct_stream = figures.runs.first().and_then(|rows| {
        let direct = rows.iter().find(|r| r["kind"] == "direct")?;
        direct["name"].as_str().map(str::to_owned)
    });
    let stream = m(shipped, &plain("stream_rps_c32"));
    if let Some(direct) = direct_stream {
        let d = m(&direct, &plain("stream_rps_c32"));
        check(
            format!("{shipped}: streaming c=32 ÷ mock direct"),
            stream.zip(d).map(|(a, b)| a / b),
            0.85,
            false,
        );
    }
    if let Some(peer) = figures.peer() {
        let ps = m(&peer, &plain("stream_rps_c32"));
        let pj = m(&peer, &plain("rps_c32"));
        let json = m(shipped, &plain("rps_c32"));
        check(
            format!("{shipped}: streaming c=32 ÷ {peer}"),
            stream.zip(ps).map(|(a, b)| a / b),
            2.5,
            false,
        );
        check(
            format!("{shipped}: JSON c=32 ÷ {peer}"),
            json.zip(pj).map(|(a, b)| a / b),
            0.5,
            false,
        );
    }
    check(
        format!("{shipped}: RSS MiB with 1,024 open streams"),
        m(shipped, &mib("/sustained_1024/rss_peak_kib")),
        40.0,
        true,
    );
    let idle = m(shipped, &mib("/rss_idle_kib"));
    let after = m(shipped, &mib("/rss_after_kib"));
    check(
        format!("{shipped}: RSS after the streams ÷ idle"),
        after.zip(idle).map(|(a, i)| a / i),
        1.1,
        true,
    );
    out.push_str("\nTargets (against the medians):\n");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}
