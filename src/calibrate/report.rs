//! What the calibrated files change against the built-in prompts, one line per finding, so an
//! operator sees at a glance how far the shipped wording is from their opencode's.

use serde_json::Value;

use super::extract::Files;
use crate::prompts::Prompts;

/// Findings, in file order; an identical file gets one "same" line.
pub fn differences(files: &Files, builtin: &Prompts) -> Vec<String> {
    let mut out = Vec::new();
    text_difference(
        &mut out,
        "opencode/system.md",
        files.system.trim_end(),
        builtin.system.trim_end(),
    );
    text_difference(
        &mut out,
        "opencode/skills.md",
        files.skills.trim_end(),
        builtin.skills.trim_end(),
    );
    if let Some(title) = &files.title {
        text_difference(&mut out, "opencode/title.md", title, &builtin.title);
    }
    tools_difference(&mut out, &files.tools, builtin);
    out
}

fn text_difference(out: &mut Vec<String>, file: &str, captured: &str, builtin: &str) {
    if captured == builtin {
        out.push(format!("{file}: same as the built-in text"));
        return;
    }
    let line = captured
        .lines()
        .zip(builtin.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| captured.lines().count().min(builtin.lines().count()));
    let show = |text: &str| {
        let line: String = text
            .lines()
            .nth(line)
            .unwrap_or("")
            .chars()
            .take(70)
            .collect();
        format!("{line:?}")
    };
    out.push(format!(
        "{file}: differs ({} vs {} built-in bytes); first at line {}: {} (built-in {})",
        captured.len(),
        builtin.len(),
        line + 1,
        show(captured),
        show(builtin)
    ));
}

fn tools_difference(out: &mut Vec<String>, captured: &str, builtin: &Prompts) {
    let captured: Vec<Value> = serde_json::from_str(captured).unwrap_or_default();
    let name = |tool: &Value| {
        tool.pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let builtin: Vec<Value> = builtin
        .tools
        .iter()
        .filter_map(|t| serde_json::from_str(&t.json).ok())
        .collect();
    let captured_names: Vec<String> = captured.iter().map(name).collect();
    let builtin_names: Vec<String> = builtin.iter().map(name).collect();
    if captured_names != builtin_names {
        out.push(format!(
            "opencode/tools.json: tools {captured_names:?} (built-in {builtin_names:?})"
        ));
    }
    let mut same = 0;
    for tool in &captured {
        let tool_name = name(tool);
        let Some(shipped) = builtin.iter().find(|b| name(b) == tool_name) else {
            continue;
        };
        let mut findings = Vec::new();
        if tool.pointer("/function/description") != shipped.pointer("/function/description") {
            findings.push("description differs".to_owned());
        }
        let mut paths = Vec::new();
        value_paths(
            tool.pointer("/function/parameters"),
            shipped.pointer("/function/parameters"),
            String::new(),
            &mut paths,
        );
        if !paths.is_empty() {
            let shown: Vec<&str> = paths.iter().take(6).map(String::as_str).collect();
            let more = paths.len().saturating_sub(shown.len());
            findings.push(format!(
                "parameters differ at {}{}",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if findings.is_empty() {
            same += 1;
        } else {
            out.push(format!(
                "opencode/tools.json: {tool_name}: {}",
                findings.join("; ")
            ));
        }
    }
    if same > 0 {
        out.push(format!(
            "opencode/tools.json: {same} tool(s) same as built-in"
        ));
    }
}

/// JSON pointers where two values differ (objects by key, arrays of one length by index, the
/// rest whole). Key order is not compared.
pub fn value_paths(a: Option<&Value>, b: Option<&Value>, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().collect();
            keys.extend(b.keys().filter(|k| !a.contains_key(*k)));
            for key in keys {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                value_paths(a.get(key), b.get(key), format!("{at}/{escaped}"), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (a, b)) in a.iter().zip(b).enumerate() {
                value_paths(Some(a), Some(b), format!("{at}/{i}"), out);
            }
        }
        (a, b) if a != b => out.push(if at.is_empty() { "/".to_owned() } else { at }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn findings_name_files_tools_and_schema_paths() {
        let builtin = Prompts::load(None).expect("built-in prompts");
        let mut tools: Vec<Value> = builtin
            .tools
            .iter()
            .map(|t| serde_json::from_str(&t.json).expect("json"))
            .collect();
        tools[0]["function"]["parameters"]["required"] = json!(["command"]);
        tools[8]["function"]["description"] = json!("Fetches.");
        let files = Files {
            system: builtin.system.clone(),
            skills: "Other skills text.\n".into(),
            title: None,
            tools: serde_json::to_string(&tools).expect("json"),
            notes: Vec::new(),
        };
        let found = differences(&files, &builtin);
        assert_eq!(found[0], "opencode/system.md: same as the built-in text");
        assert!(
            found[1].starts_with("opencode/skills.md: differs") && found[1].contains("line 1"),
            "{found:?}"
        );
        assert!(
            found.contains(&"opencode/tools.json: bash: parameters differ at /required".to_owned()),
            "{found:?}"
        );
        assert!(
            found.contains(&"opencode/tools.json: webfetch: description differs".to_owned()),
            "{found:?}"
        );
        assert_eq!(
            found.last().map(String::as_str),
            Some("opencode/tools.json: 8 tool(s) same as built-in")
        );
    }
}
