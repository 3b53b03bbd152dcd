//! The load driver. Commands:
//!
//! - `run --name N --url URL [--header K:V]… [--pid PID] [--protocol chat|responses|messages]
//!   [--model-format 'prefix{}'] [--fixtures DIR] [--kind direct|floor|proxy|peer] [--quick] [--sustained N] --out FILE`: measures one target and
//!   appends its figures to FILE (one JSON object per line); `--sustained N` runs only the
//!   paced-streams phase with N streams (for finding what a burst costs; not a bench row);
//!   `--only turn|ttft` only the small chat and then the 32 KB turn, or the first-event phase,
//!   sequential (for finding what one costs; not a bench row);
//! - `note --name N --note TEXT --out FILE`: records a target that could not be measured;
//! - `table FILE`: the markdown table of every target, with ratios to `direct` and to the peers;
//! - `medians FILE…`: several runs' results as one table of medians (every run's figure shown)
//!   and the performance targets, met or missed;
//! - `probe --url URL [--header K:V]…`: POSTs a tiny body, prints the status;
//! - `wait --url URL [--seconds S] [--pid PID]`: until the URL answers anything over HTTP (fails
//!   early when PID exits);
//! - `load --url URL --model M [--stream] [--seconds S] [--clients C]`: steady load for a profiler,
//!   the small chat with model M;
//! - `free-port`, `models` (every upstream model name the bench asks for, for peers' configs).

mod client;
mod medians;
mod phases;
mod procfs;
mod report;
mod stats;

use std::io::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

use client::{Conn, Target};
use phases::{Plan, Protocol};

struct Args {
    command: String,
    name: String,
    url: String,
    headers: Vec<String>,
    pid: Option<u32>,
    protocol: Protocol,
    model_format: String,
    fixtures: String,
    quick: bool,
    sustained: Option<usize>,
    only: Option<String>,
    out: Option<String>,
    note: String,
    kind: String,
    seconds: u64,
    model: String,
    stream: bool,
    clients: usize,
    file: Option<String>,
    /// Every positional argument (`medians` takes several files).
    files: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let command = raw
        .next()
        .ok_or("usage: driver run|note|table|medians|probe|wait|free-port|models")?;
    let mut args = Args {
        command,
        name: String::new(),
        url: String::new(),
        headers: Vec::new(),
        pid: None,
        protocol: Protocol::Chat,
        model_format: "{}".into(),
        fixtures: "bench/fixtures".into(),
        quick: false,
        sustained: None,
        only: None,
        out: None,
        note: String::new(),
        kind: "proxy".into(),
        seconds: 60,
        model: "m-d64-p0-text".into(),
        stream: false,
        clients: 4,
        file: None,
        files: Vec::new(),
    };
    while let Some(flag) = raw.next() {
        let mut value = || raw.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--name" => args.name = value()?,
            "--url" => args.url = value()?,
            "--header" => args.headers.push(value()?),
            "--pid" => args.pid = Some(value()?.parse().map_err(|e| format!("--pid: {e}"))?),
            "--protocol" => {
                args.protocol = match value()?.as_str() {
                    "chat" => Protocol::Chat,
                    "responses" => Protocol::Responses,
                    "messages" => Protocol::Messages,
                    "gemini" => Protocol::Gemini,
                    other => return Err(format!("unknown protocol {other}")),
                }
            }
            "--model-format" => args.model_format = value()?,
            "--fixtures" => args.fixtures = value()?,
            "--quick" => args.quick = true,
            "--only" => args.only = Some(value()?),
            "--sustained" => {
                args.sustained = Some(value()?.parse().map_err(|e| format!("--sustained: {e}"))?);
            }
            "--out" => args.out = Some(value()?),
            "--note" => args.note = value()?,
            "--kind" => args.kind = value()?,
            "--model" => args.model = value()?,
            "--stream" => args.stream = true,
            "--clients" => {
                args.clients = value()?.parse().map_err(|e| format!("--clients: {e}"))?;
            }
            "--seconds" => {
                args.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?;
            }
            other if !other.starts_with("--") => {
                args.file.get_or_insert_with(|| other.to_owned());
                args.files.push(other.to_owned());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let result = parse_args().and_then(|args| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(dispatch(args))
    });
    if let Err(err) = result {
        eprintln!("driver: {err}");
        std::process::exit(1);
    }
}

async fn dispatch(args: Args) -> Result<(), String> {
    match args.command.as_str() {
        "run" => run(&args).await,
        "note" => append(
            &args,
            json!({"name": args.name, "kind": args.kind, "note": args.note}),
        ),
        "table" => {
            let file = args.file.as_deref().ok_or("table needs a results file")?;
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            print!("{}", report::table(&text)?);
            Ok(())
        }
        "medians" => {
            let texts = args
                .files
                .iter()
                .map(|f| std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            print!("{}", medians::medians(&texts)?);
            Ok(())
        }
        "probe" => {
            let target = Target::parse(&args.url, &args.headers)?;
            let body = client::Request {
                body: Bytes::from_static(
                    br#"{"model":"m-d1-p0-text","input":"hi","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#,
                ),
                path: None,
            };
            let outcome = Conn::new(target.addr)
                .post(&target, &body, &[], false)
                .await?;
            println!("{}", outcome.status);
            Ok(())
        }
        "wait" => wait(&args).await,
        "load" => load(&args).await,
        "free-port" => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            println!(
                "{}",
                listener.local_addr().map_err(|e| e.to_string())?.port()
            );
            Ok(())
        }
        "models" => {
            for scenario in harness_proxy_bench::SCENARIOS {
                println!("{}", scenario.model());
            }
            Ok(())
        }
        other => Err(format!("unknown command {other}")),
    }
}

async fn run(args: &Args) -> Result<(), String> {
    let load = |name: &str| -> Result<serde_json::Value, String> {
        let path = format!("{}/{name}", args.fixtures);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))
    };
    let plan = Plan {
        target: Target::parse(&args.url, &args.headers)?,
        pid: args.pid,
        quick: args.quick,
        only_sustained: args.sustained,
        only: args.only.clone(),
        protocol: args.protocol,
        model_format: args.model_format.clone(),
        small_chat: load("small-chat.json")?,
        agent_turn: load("codex-turn-32k.json")?,
    };
    eprintln!("measuring {} …", args.name);
    let started = Instant::now();
    let figures = plan.run().await;
    eprintln!(
        "  {} done in {:.1} s",
        args.name,
        started.elapsed().as_secs_f64()
    );
    append(
        args,
        json!({"name": args.name, "kind": args.kind, "note": args.note, "quick": args.quick, "figures": figures}),
    )
}

async fn load(args: &Args) -> Result<(), String> {
    let path = format!("{}/small-chat.json", args.fixtures);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut body: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    body["model"] = json!(args.model);
    body["stream"] = json!(args.stream);
    let body = client::Request {
        body: Bytes::from(body.to_string()),
        path: None,
    };
    let target = Target::parse(&args.url, &args.headers)?;
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.clients {
        let (target, body) = (target.clone(), body.clone());
        tasks.spawn(async move {
            let mut conn = Conn::new(target.addr);
            let mut done = 0u64;
            while Instant::now() < until {
                if conn.post(&target, &body, &[], false).await.is_ok() {
                    done += 1;
                }
            }
            done
        });
    }
    let mut total = 0;
    while let Some(done) = tasks.join_next().await {
        total += done.unwrap_or(0);
    }
    println!("{total} requests in {} s", args.seconds);
    Ok(())
}

fn append(args: &Args, line: serde_json::Value) -> Result<(), String> {
    let path = args.out.as_deref().ok_or("--out FILE is required")?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{path}: {e}"))?;
    writeln!(file, "{line}").map_err(|e| format!("{path}: {e}"))
}

/// Polls with GET until any HTTP answer comes back.
async fn wait(args: &Args) -> Result<(), String> {
    let target = Target::parse(&args.url, &args.headers)?;
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    loop {
        if let Ok(tcp) = tokio::net::TcpStream::connect(target.addr).await {
            let answered = async {
                let (mut sender, conn) = hyper::client::conn::http1::handshake::<
                    _,
                    http_body_util::Empty<Bytes>,
                >(hyper_util::rt::TokioIo::new(tcp))
                .await
                .ok()?;
                tokio::spawn(conn);
                let request = hyper::Request::get(target.path.as_str())
                    .header(hyper::header::HOST, target.authority.as_str())
                    .body(http_body_util::Empty::new())
                    .ok()?;
                sender.send_request(request).await.ok()
            };
            if let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(2), answered).await {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{} did not answer in {} s", args.url, args.seconds));
        }
        if let Some(pid) = args.pid
            && !procfs::alive(pid)
        {
            return Err(format!("process {pid} exited before {} answered", args.url));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
