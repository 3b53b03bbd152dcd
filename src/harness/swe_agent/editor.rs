//! SWE-agent's `str_replace_editor` commands as the client's calls (docs/harnesses.md): the
//! command line read with POSIX shell quoting (`shlex`), then `view` → a read (its
//! `--view_range` as the first line and a count), `create` → a write, `str_replace` → an edit,
//! each with a shell command after it for a client without that tool; `insert` → a shell command
//! (the client's edit tools replace text, they do not insert at a line). `undo_edit` needs the
//! editor's history of the file, which lives on the client's machine: not emulated. A line the
//! editor would refuse is the model's mistake, told back as its observation.
//!
//! Relative paths are taken from the working directory (the editor wants absolute ones).

use serde_json::json;

use super::super::text::{call, shell_calls};
use crate::conversation::action::HarnessCall;

/// The harness's tools an editor command becomes, by what they do (`prompts/swe-agent/tools.json`).
pub struct EditorTools<'a> {
    pub shell: &'a str,
    pub read: Option<&'a str>,
    pub write: Option<&'a str>,
    pub edit: Option<&'a str>,
}

/// Why an editor line cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorError {
    /// A line the editor does not take; the words say what is wrong.
    Usage(String),
    /// `undo_edit`: not emulated.
    Undo,
}

/// The calls an editor line becomes, best first.
pub fn calls(
    line: &str,
    cwd: &str,
    tools: &EditorTools<'_>,
    timeout_ms: u64,
) -> Result<Vec<HarnessCall>, EditorError> {
    let usage = |what: &str| Err(EditorError::Usage(what.to_owned()));
    let Some(words) = shlex::split(line) else {
        return usage("its quoting is not closed");
    };
    let mut words = words.into_iter().skip(1);
    let Some(command) = words.next() else {
        return usage("it names no command (view, create, str_replace, insert)");
    };
    let Some(path) = words.next() else {
        return usage("it names no path");
    };
    let path = absolute(&path, cwd);
    let flags = match Flags::read(words) {
        Ok(flags) => flags,
        Err(what) => return Err(EditorError::Usage(what)),
    };
    let shell = |command: &str| shell_calls(tools.shell, command, Some(timeout_ms));
    let quoted = quote(&path);
    match command.as_str() {
        "view" => {
            flags.only(&["view_range"])?;
            let range = match flags.view_range.as_deref() {
                None => None,
                Some([start, end]) => Some((*start, *end)),
                Some(_) => return usage("--view_range takes two line numbers"),
            };
            let mut out = Vec::new();
            let mut read = json!({"filePath": path});
            let listing = match range {
                Some((start, end)) if start >= 1 && (end == -1 || end >= start) => {
                    read["offset"] = json!(start);
                    if end != -1 {
                        read["limit"] = json!(end - start + 1);
                    }
                    let last = if end == -1 {
                        "$".to_owned()
                    } else {
                        end.to_string()
                    };
                    format!("cat -n {quoted} | sed -n '{start},{last}p'")
                }
                Some(_) => {
                    return usage(
                        "--view_range takes a first line from 1 and a last line not before it (or -1)",
                    );
                }
                None => format!(
                    "if [ -d {quoted} ]; then find {quoted} -maxdepth 2 -not -path '*/.*'; else cat -n {quoted}; fi"
                ),
            };
            out.extend(tools.read.map(|tool| call(tool, &read)));
            out.extend(shell(&listing));
            Ok(out)
        }
        "create" => {
            flags.only(&["file_text"])?;
            let Some(text) = flags.file_text else {
                return usage("create needs --file_text");
            };
            let mut out = Vec::new();
            out.extend(
                tools
                    .write
                    .map(|tool| call(tool, &json!({"filePath": path, "content": text}))),
            );
            let dir = std::path::Path::new(&path)
                .parent()
                .map(|d| d.to_string_lossy().into_owned())
                .filter(|d| !d.is_empty());
            let mkdir = dir
                .map(|d| format!("mkdir -p {} && ", quote(&d)))
                .unwrap_or_default();
            out.extend(shell(&format!(
                "{mkdir}printf '%s' {} > {quoted}",
                quote(&text)
            )));
            Ok(out)
        }
        "str_replace" => {
            flags.only(&["old_str", "new_str"])?;
            let Some(old) = flags.old_str else {
                return usage("str_replace needs --old_str");
            };
            let new = flags.new_str.unwrap_or_default();
            Ok(tools
                .edit
                .map(|tool| {
                    call(
                        tool,
                        &json!({"filePath": path, "oldString": old, "newString": new}),
                    )
                })
                .into_iter()
                .collect())
        }
        "insert" => {
            flags.only(&["insert_line", "new_str"])?;
            let (Some(line), Some(text)) = (flags.insert_line, flags.new_str) else {
                return usage("insert needs --insert_line and --new_str");
            };
            if line < 0 {
                return usage("--insert_line is a line number from 0");
            }
            // The text goes after line `line` (0: before the first), a newline after it.
            let script = format!(
                "{{ head -n {line} {quoted}; printf '%s\\n' {}; tail -n +{} {quoted}; }} > {quoted}.swe-insert && mv {quoted}.swe-insert {quoted}",
                quote(&text),
                line + 1,
            );
            Ok(shell(&script))
        }
        "undo_edit" => Err(EditorError::Undo),
        other => Err(EditorError::Usage(format!(
            "`{other}` is not one of its commands (view, create, str_replace, insert)"
        ))),
    }
}

/// The editor's flags, each at most once.
#[derive(Default)]
struct Flags {
    given: Vec<&'static str>,
    view_range: Option<Vec<i64>>,
    file_text: Option<String>,
    old_str: Option<String>,
    new_str: Option<String>,
    insert_line: Option<i64>,
}

impl Flags {
    fn read(words: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut flags = Self::default();
        let mut words = words.peekable();
        while let Some(word) = words.next() {
            let name: &'static str = match word.as_str() {
                "--view_range" => "view_range",
                "--file_text" => "file_text",
                "--old_str" => "old_str",
                "--new_str" => "new_str",
                "--insert_line" => "insert_line",
                other => return Err(format!("`{other}` is not one of its arguments")),
            };
            if flags.given.contains(&name) {
                return Err(format!("--{name} is given twice"));
            }
            flags.given.push(name);
            let mut value = || words.next().ok_or_else(|| format!("--{name} has no value"));
            match name {
                "view_range" => {
                    let first = number(&value()?, name)?;
                    let second = number(&value()?, name)?;
                    flags.view_range = Some(vec![first, second]);
                }
                "insert_line" => flags.insert_line = Some(number(&value()?, name)?),
                "file_text" => flags.file_text = Some(value()?),
                "old_str" => flags.old_str = Some(value()?),
                _ => flags.new_str = Some(value()?),
            }
        }
        Ok(flags)
    }

    /// Only these flags may be given.
    fn only(&self, allowed: &[&str]) -> Result<(), EditorError> {
        match self.given.iter().find(|g| !allowed.contains(g)) {
            Some(extra) => Err(EditorError::Usage(format!(
                "--{extra} does not go with this command"
            ))),
            None => Ok(()),
        }
    }
}

fn number(word: &str, name: &str) -> Result<i64, String> {
    word.trim_matches(|c| c == '[' || c == ']' || c == ',')
        .parse()
        .map_err(|_| format!("--{name} takes whole numbers, not `{word}`"))
}

/// `path` from the working directory when it is relative.
fn absolute(path: &str, cwd: &str) -> String {
    if path.starts_with('/') || cwd.is_empty() || cwd == "." {
        path.to_owned()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

/// A word for the shell (a NUL, which no shell word holds, is left out).
fn quote(text: &str) -> String {
    let clean: String = text.chars().filter(|c| *c != '\0').collect();
    shlex::try_quote(&clean).map_or_else(|_| "''".to_owned(), std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const TOOLS: EditorTools<'static> = EditorTools {
        shell: "bash",
        read: Some("view"),
        write: Some("create"),
        edit: Some("str_replace"),
    };

    fn first(line: &str) -> (String, Value) {
        let calls = calls(line, "/repo", &TOOLS, 30_000).expect("a call");
        let call = calls.first().expect("one").clone();
        (
            call.name,
            serde_json::from_str(&call.arguments).expect("json"),
        )
    }

    #[test]
    fn view_is_a_read_with_its_range_as_first_line_and_count() {
        assert_eq!(
            first("str_replace_editor view /repo/a.py --view_range 10 20"),
            (
                "view".into(),
                json!({"filePath": "/repo/a.py", "offset": 10, "limit": 11})
            )
        );
        assert_eq!(
            first("str_replace_editor view a.py --view_range 5 -1"),
            (
                "view".into(),
                json!({"filePath": "/repo/a.py", "offset": 5})
            )
        );
        assert_eq!(
            first("str_replace_editor view /repo"),
            ("view".into(), json!({"filePath": "/repo"}))
        );
    }

    #[test]
    fn create_is_a_write_with_the_text_as_quoted() {
        assert_eq!(
            first("str_replace_editor create /repo/new.py --file_text 'print(\"hi\")\nx = 1\n'"),
            (
                "create".into(),
                json!({"filePath": "/repo/new.py", "content": "print(\"hi\")\nx = 1\n"})
            )
        );
    }

    #[test]
    fn str_replace_is_an_edit_and_a_missing_new_str_deletes() {
        assert_eq!(
            first("str_replace_editor str_replace /repo/a.py --old_str 'a = 1' --new_str 'a = 2'"),
            (
                "str_replace".into(),
                json!({"filePath": "/repo/a.py", "oldString": "a = 1", "newString": "a = 2"})
            )
        );
        assert_eq!(
            first("str_replace_editor str_replace /repo/a.py --old_str x").1["newString"],
            json!("")
        );
    }

    #[test]
    fn insert_is_a_shell_command_putting_the_text_after_the_line() {
        let (name, args) =
            first("str_replace_editor insert /repo/a.py --insert_line 2 --new_str 'b = 2'");
        assert_eq!(name, "bash");
        assert_eq!(
            args["command"],
            "{ head -n 2 /repo/a.py; printf '%s\\n' 'b = 2'; tail -n +3 /repo/a.py; } > /repo/a.py.swe-insert && mv /repo/a.py.swe-insert /repo/a.py"
        );
        assert_eq!(args["timeout"], 30_000);
    }

    #[test]
    fn without_the_client_s_tool_the_shell_carries_view_and_create() {
        let shell_only = EditorTools {
            shell: "bash",
            read: None,
            write: None,
            edit: None,
        };
        let view = calls(
            "str_replace_editor view /r/a.py --view_range 1 3",
            "/",
            &shell_only,
            1,
        )
        .expect("calls");
        assert_eq!(view[0].name, "bash");
        assert!(
            view[0].arguments.contains("cat -n /r/a.py | sed -n '1,3p'"),
            "{}",
            view[0].arguments
        );
        let create = calls(
            "str_replace_editor create /r/d/n.txt --file_text hi",
            "/",
            &shell_only,
            1,
        )
        .expect("calls");
        assert!(
            create[0]
                .arguments
                .contains("mkdir -p /r/d && printf '%s' hi > /r/d/n.txt"),
            "{}",
            create[0].arguments
        );
        assert_eq!(
            calls(
                "str_replace_editor str_replace /r/a --old_str x",
                "/",
                &shell_only,
                1
            ),
            Ok(Vec::new())
        );
    }

    #[test]
    fn lines_the_editor_refuses_are_usage_errors() {
        for line in [
            "str_replace_editor",
            "str_replace_editor view",
            "str_replace_editor frobnicate /a",
            "str_replace_editor create /a",
            "str_replace_editor view /a --view_range 3",
            "str_replace_editor view /a --view_range 5 2",
            "str_replace_editor view /a --file_text x",
            "str_replace_editor str_replace /a --old_str 'open",
            "str_replace_editor insert /a --new_str x",
            "str_replace_editor insert /a --insert_line x --new_str y",
            "str_replace_editor str_replace /a --old_str x --old_str y",
        ] {
            assert!(
                matches!(calls(line, "/", &TOOLS, 1), Err(EditorError::Usage(_))),
                "{line}"
            );
        }
        assert_eq!(
            calls("str_replace_editor undo_edit /a", "/", &TOOLS, 1),
            Err(EditorError::Undo)
        );
    }
}
