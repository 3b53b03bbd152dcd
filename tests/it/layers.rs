//! The dependency picture of ARCHITECTURE.md, checked on the source: a folder below another never
//! names it (`crate::<module>` anywhere in its files, tests included), so no arrow runs up and no
//! folder-level cycle comes back unnoticed.

use std::path::{Path, PathBuf};

/// (a module of `src/`, the modules it must not name).
const BELOW: &[(&str, &[&str])] = &[
    // Conversation memory sits below its consumers; the store backend below everything it holds.
    ("memory", &["titles", "routes", "server", "cli", "state"]),
    (
        "store",
        &["memory", "titles", "routes", "server", "cli", "state"],
    ),
    // Pure layers: they know no route, server or title.
    (
        "conversation",
        &["routes", "server", "titles", "memory", "store", "upstream"],
    ),
    (
        "clients",
        &["routes", "server", "titles", "memory", "store", "upstream"],
    ),
    (
        "harness",
        &["routes", "server", "titles", "memory", "store", "upstream"],
    ),
    (
        "protocols",
        &["routes", "server", "titles", "memory", "store", "upstream"],
    ),
    (
        "upstream",
        &["routes", "server", "titles", "memory", "store"],
    ),
    ("titles", &["routes", "server", "cli"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files of `src/<module>` (a folder, or `src/<module>.rs`).
fn module_files(module: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join(module), &mut files);
    let single = src.join(format!("{module}.rs"));
    if single.is_file() {
        files.push(single);
    }
    files
}

#[test]
fn no_module_names_a_module_above_it() {
    let mut wrong = Vec::new();
    for (module, above) in BELOW {
        let files = module_files(module);
        assert!(!files.is_empty(), "src/{module} has no files: fix BELOW");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                for up in *above {
                    let named = format!("crate::{up}::");
                    let braced = format!("crate::{up}}}");
                    let used = format!("crate::{up};");
                    if line.contains(&named) || line.contains(&braced) || line.contains(&used) {
                        wrong.push(format!("{}:{}: {module} names {up}", file.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "arrows running up:\n{}", wrong.join("\n"));
}
