//! Docs that cannot drift: `docs/configuration.md` lists every key of the real config with its
//! default and env name (a key added to `Config` without a row fails here, naming the row to add),
//! `docs/metrics.md` every kind of `harness_proxy_errors_total` (`error::KINDS`),
//! the README, ARCHITECTURE.md, BENCHMARKS.md, RELIABILITY.md, docs/ and `bench/history/` link
//! nothing outside the repository, and every reference a source comment, script or golden case's
//! description makes (a file path, a section of `docs/wire.md`) resolves inside the repository,
//! naming no document the repository does not hold; every test RELIABILITY.md cites exists
//! (`cited`); the README keeps its short list of sections and links every book of docs/, so it
//! cannot grow back into a manual (issue 32 item 5).

mod cited;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use harness_proxy::config::{Config, ENV_PREFIX};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every leaf key of the config as `section.key` → its default as the docs write it.
fn config_keys() -> BTreeMap<String, String> {
    fn walk(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(&path, value, out);
                }
            }
            Value::Null => {
                out.insert(prefix.to_owned(), "unset".to_owned());
            }
            Value::String(text) => {
                out.insert(prefix.to_owned(), text.clone());
            }
            other => {
                out.insert(prefix.to_owned(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    let value = serde_json::to_value(Config::default()).expect("the config serializes");
    walk("", &value, &mut out);
    out
}

fn env_name(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.to_ascii_uppercase().replace('.', "__")
    )
}

/// The rows of a reference's tables: key → (default, env), each cell without its backticks.
fn documented(text: &str) -> BTreeMap<String, (String, String)> {
    text.lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .split(" | ")
                .map(|c| c.trim_matches(['|', ' ']))
                .collect();
            let unquote = |cell: &str| cell.trim_matches('`').to_owned();
            Some((
                unquote(cells.first()?),
                (unquote(cells.get(1)?), unquote(cells.get(2)?)),
            ))
        })
        .collect()
}

/// What a reference text gets wrong about the config, one line each.
fn problems(reference: &str) -> Vec<String> {
    let keys = config_keys();
    let docs = documented(reference);
    let mut problems = Vec::new();
    for (key, default) in &keys {
        let env = env_name(key);
        match docs.get(key) {
            None => problems.push(format!(
                "missing key `{key}`: add the row | `{key}` | `{default}` | `{env}` | … |"
            )),
            Some((doc_default, doc_env)) => {
                if doc_default != default {
                    problems.push(format!(
                        "`{key}`: documented default `{doc_default}`, the real one is `{default}`"
                    ));
                }
                if *doc_env != env {
                    problems.push(format!("`{key}`: env name is `{env}`, not `{doc_env}`"));
                }
            }
        }
    }
    for key in docs.keys().filter(|k| !keys.contains_key(*k)) {
        problems.push(format!(
            "`{key}` is documented but the config has no such key"
        ));
    }
    problems
}

fn reference() -> String {
    std::fs::read_to_string(repo().join("docs/configuration.md"))
        .expect("docs/configuration.md exists")
}

#[test]
fn every_config_key_is_documented_with_its_default_and_env_name() {
    let problems = problems(&reference());
    assert!(
        problems.is_empty(),
        "docs/configuration.md is out of date:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_error_kind_is_documented_as_a_label_value() {
    let metrics = std::fs::read_to_string(repo().join("docs/metrics.md")).expect("readable");
    let row = metrics
        .lines()
        .find(|line| line.starts_with("| `harness_proxy_errors_total` |"))
        .expect("a row for harness_proxy_errors_total");
    for kind in harness_proxy::error::KINDS {
        assert!(
            row.contains(&format!("`{kind}`")),
            "docs/metrics.md lacks the kind {kind}"
        );
    }
}

#[test]
fn a_key_without_a_row_or_with_a_wrong_default_is_named() {
    let text = reference();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("| `upstream.pool_max_idle_per_host`"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        problems(&without),
        [
            "missing key `upstream.pool_max_idle_per_host`: add the row | `upstream.pool_max_idle_per_host` | `64` | `HARNESS_PROXY__UPSTREAM__POOL_MAX_IDLE_PER_HOST` | … |"
        ]
    );
    let wrong = text.replace(
        "| `titles.max_chars` | `50` |",
        "| `titles.max_chars` | `60` |",
    );
    assert_eq!(
        problems(&wrong),
        ["`titles.max_chars`: documented default `60`, the real one is `50`"]
    );
    let stale =
        format!("{text}| `titles.colour` | `red` | `HARNESS_PROXY__TITLES__COLOUR` | x |\n");
    assert_eq!(
        problems(&stale),
        ["`titles.colour` is documented but the config has no such key"]
    );
}

/// Relative link targets of a markdown text: `](target)`, anchors and web links aside.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.split('#').next().unwrap_or_default().to_owned())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

#[test]
fn the_docs_link_nothing_outside_the_repository() {
    let root = repo().canonicalize().expect("repo");
    let mut files = [
        "README.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
    ]
    .map(|f| root.join(f))
    .to_vec();
    for dir in ["docs", "bench/history"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("a folder of documents") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        assert!(
            !text.contains("../shared") && !text.contains("shared/spec"),
            "{} refers to files outside the repository",
            file.display()
        );
        let dir = file.parent().unwrap_or(Path::new("."));
        for target in relative_links(&text) {
            let resolved = dir.join(&target).canonicalize();
            assert!(
                resolved.as_ref().is_ok_and(|p| p.starts_with(&root)),
                "{} links `{target}`, which is not a file of the repository",
                file.display()
            );
        }
    }
}

/// The README's sections, in order. The manual is the docs/ book; a section added here instead
/// fails, and belongs in a book linked from "Documentation".
const README_SECTIONS: [&str; 5] = [
    "Point an agent at it",
    "See the title",
    "Where the binary is",
    "Documentation",
    "Development",
];

/// The README stays a page a newcomer reads to the end.
const README_MAX_LINES: usize = 199;

/// The `## ` headings of a markdown text, fenced code aside.
fn sections(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && let Some(heading) = line.strip_prefix("## ") {
            out.push(heading.trim());
        }
    }
    out
}

#[test]
fn the_readme_keeps_its_sections_and_stays_short() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert_eq!(
        sections(&readme),
        README_SECTIONS,
        "README.md's `## ` sections changed: a manual's section belongs in a docs/ book, \
         linked from README \"Documentation\""
    );
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, at most {README_MAX_LINES}: move the detail into docs/"
    );
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            readme.contains(&format!("](docs/{name})")),
            "README.md \"Documentation\" does not link docs/{name} (it links every book)"
        );
    }
    // The test command says what it needs and what happens without it.
    let test_command: String = readme
        .lines()
        .skip_while(|line| !line.starts_with("cargo test"))
        .take_while(|line| !line.starts_with("```"))
        .collect();
    for word in ["Redis", "Chromium", "skip"] {
        assert!(
            test_command.contains(word),
            "README's `cargo test` line names {word}: {test_command}"
        );
    }
}

#[test]
fn sections_are_read_outside_fenced_code_only() {
    let text = "# t\n## One\n```sh\n## not a heading\n```\n### sub\n## Two \n";
    assert_eq!(sections(text), ["One", "Two"]);
}

/// Names of documents that are not in the repository; a comment citing one points nowhere.
const ABSENT_DOCUMENTS: [&str; 6] = [
    "PRODUCT",
    "opencode-wire",
    "agents-wire",
    "agents-tools",
    "../shared",
    "shared/spec",
];

/// The top-level directories whose paths a comment may name (`src/…`, `tests/…`, …); `bench/` is
/// not one, its scripts name what a run writes there.
const PATH_ROOTS: [&str; 8] = [
    "src/",
    "tests/",
    "docs/",
    "benches/",
    "scripts/",
    "examples/",
    "prompts/",
    "deploy/",
];

/// The comment of one Rust line (after `//`, `///` or `//!`), a `//` inside a string aside.
fn rust_comment(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'\'' if !in_string && bytes.get(i + 1) == Some(&b'"') => i += 2,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => {
                return Some(line[i..].trim_start_matches('/').trim_start_matches('!'));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The section numbers `docs/wire.md` has: its `## N.` and `### N.M` headings.
fn wire_sections(wire: &str) -> Vec<String> {
    wire.lines()
        .filter_map(|line| line.strip_prefix("### ").or(line.strip_prefix("## ")))
        .filter_map(|heading| heading.split_once(". ").map(|(n, _)| n.to_owned()))
        .filter(|n| n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .collect()
}

/// What one piece of comment text gets wrong, one line each: a document the repository does not
/// hold, a section sign that names no document or a section `docs/wire.md` lacks, a path that is
/// not there.
fn dangling(text: &str, sections: &[String], exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for name in ABSENT_DOCUMENTS {
        for (at, _) in text.match_indices(name) {
            let before = text[..at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(before) && !word(after) {
                found.push(format!("cites `{name}`, which is not in the repository"));
            }
        }
    }
    for (at, _) in text.match_indices('§') {
        let number: String = text[at + '§'.len_utf8()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        let before = &text[..at];
        let document = before
            .rfind(['(', ';', ':'])
            .map_or(before, |i| &before[i..]);
        if document.contains("RFC ") {
            continue;
        }
        // `docs/wire.md`, `[docs/wire.md](docs/wire.md)`; not another file ending so.
        let wire = document
            .match_indices("wire.md")
            .any(|(i, _)| !document[..i].ends_with(|c: char| c.is_alphanumeric() || c == '-'));
        if !wire {
            found.push(format!(
                "§{number} names no document (write `docs/wire.md §N`)"
            ));
        } else if !sections.iter().any(|s| s == number) {
            found.push(format!(
                "docs/wire.md §{number} does not exist (it has §{})",
                sections.join(", §")
            ));
        }
    }
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./*".contains(c);
    for root in PATH_ROOTS {
        for (at, _) in text.match_indices(root) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || "_-./~".contains(c)) {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| is_path_char(*c))
                .collect();
            let path = path.trim_end_matches(['.', ',', ':']);
            if !exists(path) {
                found.push(format!("names `{path}`, which is not in the repository"));
            }
        }
    }
    found
}

/// Whether `path` (relative to the repository; a `*` in its last part as a wildcard) exists.
fn exists_in_repo(path: &str) -> bool {
    let root = repo();
    let Some(star) = path.find('*') else {
        return root.join(path).exists();
    };
    let (dir, pattern) = path.rsplit_once('/').unwrap_or((".", path));
    let (head, tail) = pattern.split_at(star - (path.len() - pattern.len()));
    let tail = &tail[1..];
    std::fs::read_dir(root.join(dir)).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(head) && name.ends_with(tail) && name.len() >= head.len() + tail.len()
        })
    })
}

/// The text of one line that is checked, `None` for a line that holds no comment.
type CommentOf = fn(&str) -> Option<&str>;

/// The files whose comments are checked, with the comment text of each line (`None`: not a
/// comment): Rust sources' comments, golden cases' descriptions, scripts and docs whole.
fn commented_files() -> Vec<(PathBuf, CommentOf)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let root = repo();
    let mut files = Vec::new();
    for dir in [
        "src", "tests", "benches", "bench", "scripts", "examples", "docs",
    ] {
        walk(&root.join(dir), &mut files);
    }
    files.extend(
        [
            "README.md",
            "ARCHITECTURE.md",
            "RELIABILITY.md",
            "BENCHMARKS.md",
            ".ci/run",
        ]
        .map(|f| root.join(f)),
    );
    fn whole(text: &str) -> Option<&str> {
        Some(text)
    }
    fn description(line: &str) -> Option<&str> {
        line.trim_start()
            .starts_with("\"description\":")
            .then_some(line)
    }
    files
        .into_iter()
        .filter_map(|path| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let under = |dir: &str| path.starts_with(root.join(dir));
            match ext {
                "rs" => Some((path, rust_comment as CommentOf)),
                "json" if under("tests/golden/opencode") || under("tests/golden/responses") => {
                    Some((path, description as CommentOf))
                }
                "sh" | "py" => Some((path, whole)),
                "" if path.ends_with(".ci/run") => Some((path, whole)),
                "md" if !under("tests/golden/prompts") => Some((path, whole)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn every_reference_a_comment_makes_resolves_inside_the_repository() {
    let root = repo();
    let wire = std::fs::read_to_string(root.join("docs/wire.md")).expect("docs/wire.md");
    let sections = wire_sections(&wire);
    let mut problems = Vec::new();
    for (path, comment) in commented_files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let shown = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = comment(line) else {
                continue;
            };
            for problem in dangling(comment, &sections, &exists_in_repo) {
                problems.push(format!("{shown}:{}: {problem}", number + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "references that point nowhere (docs/wire.md has §{}):\n{}",
        sections.join(", §"),
        problems.join("\n")
    );
}

#[test]
fn a_reference_that_points_nowhere_is_named() {
    let sections = ["1", "2", "3", "4"].map(String::from);
    let exists = |path: &str| ["src/lib.rs", "docs/wire.md"].contains(&path);
    let check = |text: &str| dangling(text, &sections, &exists);
    assert_eq!(
        check("the rules of PRODUCT §4 and opencode-wire.md §1.3"),
        [
            "cites `PRODUCT`, which is not in the repository",
            "cites `opencode-wire`, which is not in the repository",
            "§4 names no document (write `docs/wire.md §N`)",
            "§1.3 names no document (write `docs/wire.md §N`)",
        ]
    );
    assert_eq!(
        check("as docs/wire.md §5 says"),
        ["docs/wire.md §5 does not exist (it has §1, §2, §3, §4)"]
    );
    assert_eq!(
        check("see `src/gone.rs` and (src/lib.rs), and ../shared/spec/x"),
        [
            "cites `../shared`, which is not in the repository",
            "cites `shared/spec`, which is not in the repository",
            "names `src/gone.rs`, which is not in the repository",
        ]
    );
    for fine in [
        "docs/wire.md §1 \"History\" and src/lib.rs.",
        "RFC 9110 §7.6.1: hop-by-hop",
        "PRODUCT_CLAMP, GET /ui/api/inspect, codex-rs/templates/x.md",
    ] {
        assert_eq!(check(fine), Vec::<String>::new(), "{fine}");
    }
    assert_eq!(
        rust_comment(r#"let url = "http://x"; // a note"#),
        Some(" a note")
    );
    assert_eq!(rust_comment(r#"let url = "http://x";"#), None);
    assert_eq!(rust_comment("//! PRODUCT §4"), Some(" PRODUCT §4"));
}
