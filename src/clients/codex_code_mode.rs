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
use super::capability::{EDITED, WROTE};
use super::codex_responses::{bash_to_exec, exec_to_bash, patch_calls, to_patch};

const EXEC_OPEN: &str = "text(await tools.exec_command(";
const EXEC_CLOSE: &str = "));";
const PATCH_OPEN: &str = "const r = await tools.apply_patch(";
/// After the patch: Codex's nested `apply_patch` answers a success with an empty object, which
/// the script turns into opencode's sentence (known when the script is written); anything else
/// it returns is the result as it is.
const PATCH_SENTENCE: &str = "); text(JSON.stringify(r) === \"{}\" ? ";
const PATCH_CLOSE: &str = " : r);";

/// A neutral shell, write or edit call → the `exec` script that makes it.
pub(crate) fn neutral_to_script(
    capability: Capability,
    args: &Map<String, Value>,
) -> Option<Value> {
    let source = match capability {
        Capability::Shell => format!("{EXEC_OPEN}{}{EXEC_CLOSE}", bash_to_exec(args)?),
        Capability::Write | Capability::Edit => {
            let patch = to_patch(capability, args)?;
            let done = if capability == Capability::Write {
                WROTE
            } else {
                EDITED
            };
            // A JSON string is a JavaScript string literal.
            format!(
                "{PATCH_OPEN}{}{PATCH_SENTENCE}{}{PATCH_CLOSE}",
                patch.get("input")?,
                Value::from(done)
            )
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
    if let Some(inner) = source
        .strip_prefix(EXEC_OPEN)
        .and_then(|rest| rest.strip_suffix(EXEC_CLOSE))
    {
        let Value::Object(exec) = serde_json::from_str(inner).ok()? else {
            return None;
        };
        return Some(vec![(Capability::Shell, exec_to_bash(&exec)?)]);
    }
    let rest = source.strip_prefix(PATCH_OPEN)?;
    // The patch's string literal, then the rest of the script.
    let mut literal = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    let patch = literal.next()?.ok()?;
    if !rest[literal.byte_offset()..].starts_with(PATCH_SENTENCE) {
        return None;
    }
    Some(vec![patch_calls(&json!({ "input": patch }).to_string())])
}

/// What an `exec` script returned (`Script completed`, its wall time, `Output:`, then what it
/// gave `text`), read as the nested tool's output: `exec_command`'s object → its output (blank:
/// opencode's `(no output)`); anything else as it came after the header. A script that failed
/// (no such header) is left as it is.
pub fn script_output(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Script completed\n")?;
    let (wall, rest) = rest.split_once('\n')?;
    if !wall.starts_with("Wall time") {
        return None;
    }
    let given = rest.strip_prefix("Output:")?.trim_start_matches('\n');
    if let Ok(Value::Object(result)) = serde_json::from_str::<Value>(given.trim())
        && let Some(Value::String(output)) = result.get("output")
    {
        return Some(if output.is_empty() {
            "(no output)".to_owned()
        } else {
            output.clone()
        });
    }
    Some(given.to_owned())
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
        assert_eq!(
            script["input"],
            r#"const r = await tools.apply_patch("*** Begin Patch\n*** Add File: /w/a.txt\n+one\n+two\n*** End Patch"); text(JSON.stringify(r) === "{}" ? "Wrote file successfully." : r);"#
        );
        let back = script_to_neutral(Capability::Write, &object(script)).expect("read back");
        assert_eq!(back[0].0, Capability::Write);
        assert_eq!(back[0].1["filePath"], "/w/a.txt");
        let edit = object(json!({"filePath": "/w/a.txt", "oldString": "one", "newString": "1"}));
        let script = neutral_to_script(Capability::Edit, &edit).expect("a script");
        assert!(
            script["input"]
                .as_str()
                .is_some_and(|s| s.ends_with(r#"? "Edit applied successfully." : r);"#))
        );
        assert_eq!(
            script_to_neutral(Capability::Edit, &object(script)).expect("read back")[0].0,
            Capability::Edit
        );
    }

    #[test]
    fn another_script_has_no_neutral_reading_and_outputs_read_as_the_nested_tools() {
        let other = object(json!({"input": "const x = 1; text(x);"}));
        assert_eq!(script_to_neutral(Capability::Shell, &other), None);
        // As Codex 0.171 answers (captured): the header and the text parts joined by a newline.
        let ran = "Script completed\nWall time 0.2 seconds\nOutput:\n\n{\"chunk_id\":\"364249\",\"exit_code\":0,\"output\":\"hi\\n\"}";
        assert_eq!(script_output(ran).as_deref(), Some("hi\n"));
        let silent =
            "Script completed\nWall time 0.2 seconds\nOutput:\n\n{\"exit_code\":0,\"output\":\"\"}";
        assert_eq!(script_output(silent).as_deref(), Some("(no output)"));
        let wrote = "Script completed\nWall time 0.0 seconds\nOutput:\n\nWrote file successfully.";
        assert_eq!(
            script_output(wrote).as_deref(),
            Some("Wrote file successfully.")
        );
        assert_eq!(script_output("SyntaxError: Unexpected token"), None);
    }
}
