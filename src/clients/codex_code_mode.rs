//! Codex's code mode (0.171 with its GPT-6 models, captured through the proxy): every tool is
//! reached from one freeform `exec` tool whose input is JavaScript run in a fresh V8 isolate, the
//! shell and patch tools as `await tools.exec_command({...})` and `await tools.apply_patch("...")`,
//! and `text(...)` appending to what the call returns. A harness's shell, write or edit call
//! becomes one such script (`{"input": source}`, as any freeform tool on the chat side), the
//! script this module writes reads back as the call it came from, and its output is read as
//! `exec_command`'s or `apply_patch`'s own.
//!
//! Owns: the scripts' shape. Must not: run or parse JavaScript beyond its own scripts.

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::codex_responses::{bash_to_exec, exec_output, exec_to_bash, patch_calls, to_patch};

const EXEC_OPEN: &str = "text(await tools.exec_command(";
const PATCH_OPEN: &str = "text(await tools.apply_patch(";
const CLOSE: &str = "));";

/// A neutral shell, write or edit call → the `exec` script that makes it.
pub(crate) fn neutral_to_script(
    capability: Capability,
    args: &Map<String, Value>,
) -> Option<Value> {
    let source = match capability {
        Capability::Shell => format!("{EXEC_OPEN}{}{CLOSE}", bash_to_exec(args)?),
        Capability::Write | Capability::Edit => {
            let patch = to_patch(capability, args)?;
            // A JSON string is a JavaScript string literal.
            format!("{PATCH_OPEN}{}{CLOSE}", patch.get("input")?)
        }
        _ => return None,
    };
    Some(json!({ "input": source }))
}

/// An `exec` script from the history → the neutral call it makes, when it is one this module
/// wrote; any other script has no neutral reading.
pub(crate) fn script_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let source = args.get("input")?.as_str()?.trim();
    if let Some(inner) = inside(source, EXEC_OPEN) {
        let Value::Object(exec) = serde_json::from_str(inner).ok()? else {
            return None;
        };
        return Some(vec![(Capability::Shell, exec_to_bash(&exec)?)]);
    }
    let patch: String = serde_json::from_str(inside(source, PATCH_OPEN)?).ok()?;
    Some(vec![patch_calls(&json!({ "input": patch }).to_string())])
}

fn inside<'a>(source: &'a str, open: &str) -> Option<&'a str> {
    source.strip_prefix(open)?.strip_suffix(CLOSE)
}

/// What an `exec` script returned, read as its nested tool's output (`exec_command`'s header
/// above `Output:`, or `apply_patch`'s success); anything else is left as it is.
pub fn script_output(text: &str) -> Option<String> {
    super::codex_responses::patch_output(text).or_else(|| exec_output(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_shell_call_is_a_script_that_reads_back_as_the_call() {
        let bash = object(json!({"command": "echo \"hi\" > a.txt", "workdir": "/w"}));
        let script = neutral_to_script(Capability::Shell, &bash).expect("a script");
        assert_eq!(
            script["input"],
            r#"text(await tools.exec_command({"cmd":"echo \"hi\" > a.txt","workdir":"/w"}));"#
        );
        let back = script_to_neutral(Capability::Shell, &object(script)).expect("read back");
        assert_eq!(
            back,
            vec![(
                Capability::Shell,
                json!({"command": "echo \"hi\" > a.txt", "workdir": "/w"})
            )]
        );
    }

    #[test]
    fn a_write_is_a_patch_script_that_reads_back_as_the_write() {
        let write = object(json!({"filePath": "/w/a.txt", "content": "one\ntwo"}));
        let script = neutral_to_script(Capability::Write, &write).expect("a script");
        let source = script["input"].as_str().expect("source");
        assert!(
            source.starts_with(PATCH_OPEN) && source.ends_with(CLOSE),
            "{source}"
        );
        assert!(source.contains(r#"*** Add File: /w/a.txt\n+one\n+two\n*** End Patch"#));
        let back = script_to_neutral(Capability::Write, &object(script)).expect("read back");
        assert_eq!(back[0].0, Capability::Write);
        assert_eq!(back[0].1["filePath"], "/w/a.txt");
    }

    #[test]
    fn another_script_has_no_neutral_reading_and_outputs_read_as_the_nested_tools() {
        let other = object(json!({"input": "const x = 1; text(x);"}));
        assert_eq!(script_to_neutral(Capability::Shell, &other), None);
        assert_eq!(
            script_output("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nhi\n").as_deref(),
            Some("hi\n")
        );
        assert_eq!(
            script_output("Success. Updated the following files:\nA /w/a.txt\n").as_deref(),
            Some("Wrote file successfully.")
        );
        assert_eq!(script_output("{\"a\": 1}"), None);
    }
}
