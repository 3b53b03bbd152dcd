//! Every test RELIABILITY.md cites exists (issue 30 item 7): the last column of each of its
//! tables names the tests that hold the row (`module::test`, `module::{a,b}::*`, a store
//! contract's bare `test_name`), and a renamed or removed test leaves a row that proves nothing.
//! A cited name is found as a `fn` of that name in a source file below a directory or file named
//! like its first module (`titles::…` in `src/titles/` or `tests/it/titles.rs`); a `*` asks only
//! that the module is there.

use std::path::{Path, PathBuf};

use super::repo;

/// The Rust sources, with the module-like names of their paths (directories and file stems).
fn sources() -> Vec<(Vec<String>, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = repo();
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    walk(&root.join("tests"), &mut files);
    files
        .into_iter()
        .map(|path| {
            let names = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .iter()
                .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
                .collect();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            (names, text)
        })
        .collect()
}

/// The backticked names in the last column of RELIABILITY.md's table rows that read as tests:
/// module paths (`a::b`, `{x,y}` alternatives, a `*` last) and bare snake-case names of three or
/// more words.
fn cited(reliability: &str) -> Vec<String> {
    let mut out = Vec::new();
    for row in reliability.lines().filter(|l| l.starts_with('|')) {
        let columns: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
        let [_, _, .., last] = columns.as_slice() else {
            continue;
        };
        for (i, span) in last.split('`').enumerate() {
            if i % 2 == 1 && reads_as_a_test(span) {
                out.extend(expand(span));
            }
        }
    }
    out
}

fn reads_as_a_test(span: &str) -> bool {
    let part = |p: &str| {
        p == "*"
            || (!p.is_empty()
                && p.trim_matches(|c| c == '{' || c == '}')
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ','))
    };
    if span.contains("::") {
        span.split("::").all(part) && !span.starts_with('*')
    } else {
        part(span) && span.matches('_').count() >= 2
    }
}

/// `a::{b,c}::d` → `a::b::d`, `a::c::d`.
fn expand(span: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (span.find('{'), span.find('}')) else {
        return vec![span.to_owned()];
    };
    span[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{}{alt}{}", &span[..open], &span[close + 1..])))
        .collect()
}

fn defines(text: &str, name: &str) -> bool {
    text.match_indices(&format!("fn {name}"))
        .any(|(at, found)| {
            let before = text[..at].chars().next_back();
            let after = text[at + found.len()..].chars().next();
            before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
                && after.is_some_and(|c| c == '(' || c == '<')
        })
}

/// The cited names no source defines.
fn missing(reliability: &str, sources: &[(Vec<String>, String)]) -> Vec<String> {
    cited(reliability)
        .into_iter()
        .filter(|path| {
            let segments: Vec<&str> = path.split("::").collect();
            let name = segments[segments.len() - 1];
            let in_module =
                |names: &Vec<String>| segments.len() == 1 || names.iter().any(|n| n == segments[0]);
            let mut candidates = sources.iter().filter(|(names, _)| in_module(names));
            if name == "*" {
                candidates.next().is_none()
            } else {
                !candidates.any(|(_, text)| defines(text, name))
            }
        })
        .collect()
}

#[test]
fn every_test_reliability_md_cites_exists() {
    let reliability =
        std::fs::read_to_string(repo().join("RELIABILITY.md")).expect("RELIABILITY.md");
    let sources = sources();
    assert!(cited(&reliability).len() > 100, "the rows' tests are read");
    let missing = missing(&reliability, &sources);
    assert!(
        missing.is_empty(),
        "RELIABILITY.md cites tests that do not exist (renamed or removed?): {missing:#?}"
    );
}

#[test]
fn a_cited_test_that_does_not_exist_is_named() {
    let sources = vec![
        (
            vec!["tests".into(), "it".into(), "load".into()],
            "async fn two_thousand_streams() {}\nfn other_one() {}".to_owned(),
        ),
        (
            vec![
                "src".into(),
                "titles".into(),
                "store".into(),
                "contract".into(),
            ],
            "fn bounds_hold_at_write_time<S>() {}".to_owned(),
        ),
    ];
    let doc = "| a | b | `load::two_thousand_streams`, `load::{other_one,gone_one}`, \
               `titles::store::*`, `bounds_hold_at_write_time`, `load::two_thousand` |\n\
               | c | d | `nowhere::*`, `VmRSS`, `docs/metrics.md`, `rows_were_renamed_away` |";
    assert_eq!(
        missing(doc, &sources),
        [
            "load::gone_one",
            "load::two_thousand",
            "nowhere::*",
            "rows_were_renamed_away"
        ]
    );
}
