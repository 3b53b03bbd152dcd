//! terminus-2's reading of an answer (the reference's `parse_response`): the one JSON object
//! found by balanced braces, text around it a warning, then its fields in order — `analysis`,
//! `plan`, `commands` required (`null` is missing), `commands` an array of `{keystrokes,
//! duration?}`, `task_complete` a boolean or a string that says yes.
//!
//! Bounded: one pass over the characters, `serde_json`'s own nesting limit, and at most
//! `MAX_COMMANDS` commands (more is an error the model is told). Never panics (the fuzz target
//! `terminus_2_parse` holds it to that).

use serde_json::Value;

/// The most commands one answer may give.
pub const MAX_COMMANDS: usize = 64;

/// One command of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Keystrokes {
    pub keys: String,
    /// Seconds, as the model gave it.
    pub duration: Option<f64>,
}

/// An answer that parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub commands: Vec<Keystrokes>,
    pub task_complete: bool,
    /// Rendered `- w1\n- w2`; empty when none.
    pub warnings: String,
}

/// Why an answer did not parse, with the warnings found on the way (rendered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub error: String,
    pub warnings: String,
}

const BEFORE: &str = "there is text before the JSON object";
const AFTER: &str = "there is text after the JSON object";

/// Reads one answer.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let Some((start, end)) = object_span(text) else {
        return Err(ParseError {
            error: "the reply holds no JSON object".to_owned(),
            warnings: render(&["no JSON object was found"]),
        });
    };
    let mut warnings = Vec::new();
    if !text[..start].trim().is_empty() {
        warnings.push(BEFORE);
    }
    if !text[end..].trim().is_empty() {
        warnings.push(AFTER);
    }
    let warnings = render(&warnings);
    let fail = |error: String| ParseError {
        error,
        warnings: warnings.clone(),
    };
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&text[start..end]) else {
        return Err(fail("the JSON object is not valid JSON".to_owned()));
    };
    for field in ["analysis", "plan", "commands"] {
        if object.get(field).is_none_or(Value::is_null) {
            return Err(fail(format!("a required field is missing: {field}")));
        }
    }
    let not_commands =
        || fail("'commands' must be an array of {\"keystrokes\", \"duration\"} objects".to_owned());
    let Some(list) = object.get("commands").and_then(Value::as_array) else {
        return Err(not_commands());
    };
    if list.len() > MAX_COMMANDS {
        return Err(fail(format!(
            "'commands' holds {} commands; send at most {MAX_COMMANDS} at once",
            list.len()
        )));
    }
    let mut commands = Vec::with_capacity(list.len());
    for command in list {
        let Some(keys) = command.get("keystrokes").and_then(Value::as_str) else {
            return Err(not_commands());
        };
        let duration = match command.get("duration") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(_) => return Err(not_commands()),
        };
        commands.push(Keystrokes {
            keys: keys.to_owned(),
            duration,
        });
    }
    let task_complete = match object.get("task_complete") {
        Some(Value::Bool(done)) => *done,
        Some(Value::String(said)) => ["true", "1", "yes"]
            .iter()
            .any(|yes| said.eq_ignore_ascii_case(yes)),
        _ => false,
    };
    Ok(Parsed {
        commands,
        task_complete,
        warnings,
    })
}

/// The byte span of the first balanced `{…}` outside strings: a `\` skips the next character
/// everywhere and a `"` toggles the string flag everywhere (the reference's scan).
fn object_span(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut start = None;
    let mut in_string = false;
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '{' if !in_string => {
                if depth == 0 {
                    start = Some(at);
                }
                depth += 1;
            }
            '}' if !in_string && depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return start.map(|s| (s, at + 1));
                }
            }
            _ => {}
        }
    }
    None
}

fn render(warnings: &[&str]) -> String {
    warnings
        .iter()
        .map(|w| format!("- {w}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's `parses_fenced_json_command`, by hand.
    #[test]
    fn a_fenced_object_parses_with_a_warning_for_the_text_around_it() {
        let parsed = parse("Here:\n```json\n{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[{\"keystrokes\":\"ls -la\\n\",\"duration\":0.1}]}\n```")
            .expect("parses");
        assert_eq!(
            parsed.commands,
            [Keystrokes {
                keys: "ls -la\n".into(),
                duration: Some(0.1)
            }]
        );
        assert!(!parsed.task_complete);
        assert_eq!(
            parsed.warnings,
            "- there is text before the JSON object\n- there is text after the JSON object"
        );
    }

    #[test]
    fn the_errors_in_their_order() {
        let error = |text: &str| parse(text).expect_err("an error");
        let none = error("no braces here");
        assert_eq!(none.error, "the reply holds no JSON object");
        assert_eq!(none.warnings, "- no JSON object was found");
        assert_eq!(
            error("{\"analysis\": }").error,
            "the JSON object is not valid JSON"
        );
        assert_eq!(
            error("{\"analysis\":\"a\",\"plan\":null,\"commands\":[]}").error,
            "a required field is missing: plan"
        );
        assert_eq!(
            error("{\"plan\":\"p\",\"commands\":[]}").error,
            "a required field is missing: analysis"
        );
        for bad in [
            "{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":\"ls\"}",
            "{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[\"ls\"]}",
            "{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[{\"keystrokes\":1}]}",
            "{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[{\"keystrokes\":\"ls\",\"duration\":\"1\"}]}",
        ] {
            assert!(
                error(bad).error.starts_with("'commands' must be an array"),
                "{bad}"
            );
        }
    }

    #[test]
    fn braces_in_strings_and_escapes_do_not_end_the_object() {
        let parsed = parse(r#"{"analysis":"a } \" {","plan":"p","commands":[{"keystrokes":"echo '{'\n"}],"task_complete":"YES"}"#)
            .expect("parses");
        assert_eq!(parsed.commands[0].keys, "echo '{'\n");
        assert_eq!(parsed.commands[0].duration, None);
        assert!(parsed.task_complete);
        assert!(parsed.warnings.is_empty());
    }

    #[test]
    fn task_complete_says_yes_only_in_so_many_words() {
        let done = |value: &str| {
            parse(&format!(
                "{{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[],\"task_complete\":{value}}}"
            ))
            .expect("parses")
            .task_complete
        };
        assert!(done("true") && done("\"1\"") && done("\"True\""));
        assert!(!done("false") && !done("1") && !done("\"done\"") && !done("null"));
    }

    #[test]
    fn more_commands_than_the_bound_is_an_error() {
        let commands = vec!["{\"keystrokes\":\"ls\\n\"}"; MAX_COMMANDS + 1].join(",");
        let text = format!("{{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[{commands}]}}");
        assert!(
            parse(&text)
                .expect_err("too many")
                .error
                .contains("at most 64")
        );
    }
}
