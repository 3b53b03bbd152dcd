//! From the requests a real opencode sent to prompt files ready for `--prompts-dir`: the system
//! prefix (before the identity line), the skills block, the title prompt, and the tool list with
//! this machine's values in the bash description turned back into placeholders. Pure text work.

use serde_json::Value;

/// Where the identity line starts in opencode's system prompt: the prefix ends before it.
const IDENTITY_OPENING: &str = "\n\nYou are powered by the model named ";
const ENV_CLOSE: &str = "</env>";
const SKILLS_MARKER: &str = "<available_skills>";
const TITLE_USER_LINE: &str = "Generate a title for this conversation:\n";

/// One request as captured.
#[derive(Debug, Clone)]
pub struct Capture {
    pub path: String,
    pub body: Value,
}

/// The files calibrate writes, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    pub system: String,
    pub skills: String,
    pub title: Option<String>,
    pub tools: String,
    /// What the operator should know: placeholders not found, machine values left in.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExtractError {
    #[error(
        "no main opencode request was captured (a request with tools and a system message holding `You are powered by the model named`)"
    )]
    NoMainRequest,
    #[error("the main request's tools are not a list of function tools")]
    BadTools,
}

/// The values of this machine that opencode wrote into the bash description.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `$SHELL`: opencode names its file name on every platform but Linux (there: `bash`).
    pub shell: Option<String>,
    /// Where opencode says temporary work goes (`$TMPDIR/opencode`).
    pub temp_dir: String,
}

impl Machine {
    fn shell_on(&self, platform: &str) -> String {
        if platform == "linux" {
            return "bash".to_owned();
        }
        self.shell
            .as_deref()
            .and_then(|s| std::path::Path::new(s).file_name())
            .map_or_else(|| "zsh".to_owned(), |n| n.to_string_lossy().into_owned())
    }
}

/// Is this opencode's title request (system = title prompt, then the fixed user line)?
pub(super) fn is_title(body: &Value) -> bool {
    let messages = body["messages"].as_array();
    messages.is_some_and(|m| {
        m.len() >= 2
            && m[0]["role"] == "system"
            && m[1]["role"] == "user"
            && m[1]["content"] == TITLE_USER_LINE
    }) && body
        .get("tools")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
}

pub(super) fn main_system(body: &Value) -> Option<&str> {
    body.get("tools")?.as_array().filter(|t| !t.is_empty())?;
    let system = body["messages"].get(0)?;
    (system["role"] == "system")
        .then(|| system["content"].as_str())
        .flatten()
        .filter(|text| text.contains(IDENTITY_OPENING))
}

/// The prompt files of the first main request (and the first title request) in `captures`.
pub fn extract(captures: &[Capture], machine: &Machine) -> Result<Files, ExtractError> {
    let (main, system) = captures
        .iter()
        .find_map(|c| main_system(&c.body).map(|s| (&c.body, s)))
        .ok_or(ExtractError::NoMainRequest)?;
    let title = captures
        .iter()
        .find(|c| is_title(&c.body))
        .and_then(|c| c.body["messages"][0]["content"].as_str())
        .map(str::to_owned);
    let mut notes = Vec::new();
    if title.is_none() {
        notes.push("no title request was captured: opencode/title.md not written".to_owned());
    }

    let cut = system.find(IDENTITY_OPENING).unwrap_or(system.len());
    let mut prefix = system[..cut].trim_end().to_owned();
    prefix.push('\n');

    let env = env_values(system);
    let skills = skills_block(system, env.cwd.as_deref(), &mut notes);
    let tools = tools_file(main, &env, machine, &mut notes)?;
    if system[cut..].contains("\nInstructions from: ") {
        notes.push(
            "the capture held project instructions (`Instructions from:`): they belong to the project, not to the prompts, and were left out".to_owned(),
        );
    }
    Ok(Files {
        system: prefix,
        skills,
        title,
        tools,
        notes,
    })
}

#[derive(Debug, Default)]
struct Env {
    cwd: Option<String>,
    platform: Option<String>,
}

fn env_values(system: &str) -> Env {
    let mut env = Env::default();
    for line in system.lines() {
        let line = line.trim();
        if let Some(cwd) = line.strip_prefix("Working directory:") {
            env.cwd.get_or_insert_with(|| cwd.trim().to_owned());
        }
        if let Some(platform) = line.strip_prefix("Platform:") {
            env.platform
                .get_or_insert_with(|| platform.trim().to_owned());
        }
    }
    env
}

/// The skills part: the paragraph that leads to `<available_skills>`, to the end, with the
/// working directory turned back into `{{cwd}}`.
fn skills_block(system: &str, cwd: Option<&str>, notes: &mut Vec<String>) -> String {
    let Some(env_end) = system.find(ENV_CLOSE).map(|at| at + ENV_CLOSE.len()) else {
        notes.push("no `<env>` block in the system prompt: opencode/skills.md is empty".to_owned());
        return String::new();
    };
    let rest = &system[env_end..];
    let Some(marker) = rest.find(SKILLS_MARKER) else {
        notes.push("no skills block after `</env>`: opencode/skills.md is empty".to_owned());
        return String::new();
    };
    // The part starts after the blank line that ends the parts before it (or right after
    // `</env>` and its newline when nothing is in between).
    let start = rest[..marker]
        .rfind("\n\n")
        .map_or_else(|| usize::from(rest.starts_with('\n')), |blank| blank + 2);
    let mut block = escape_braces(rest[start..].trim_end());
    if let Some(cwd) = cwd.filter(|c| c.len() > 1)
        && block.contains(cwd)
    {
        block = block.replace(cwd, "{{cwd}}");
    }
    block.push('\n');
    block
}

/// The tool list, pretty-printed, with the bash description's machine values as placeholders.
fn tools_file(
    main: &Value,
    env: &Env,
    machine: &Machine,
    notes: &mut Vec<String>,
) -> Result<String, ExtractError> {
    let mut tools = main["tools"].clone();
    let list = tools.as_array_mut().ok_or(ExtractError::BadTools)?;
    for tool in list.iter_mut() {
        let name = tool
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or(ExtractError::BadTools)?
            .to_owned();
        let Some(Value::String(description)) = tool.pointer_mut("/function/description") else {
            continue;
        };
        // Literal double braces would read as placeholders: the template syntax escapes them.
        *description = escape_braces(description);
        if name == "bash" {
            let platform = env.platform.as_deref().unwrap_or("linux");
            let timeout = if platform == "linux" {
                "120000ms"
            } else {
                "120000ms (2 minutes)"
            };
            let replacements = [
                (format!("OS: {platform}"), "OS: {{os}}", "{{os}}"),
                (
                    format!("Shell: {}", machine.shell_on(platform)),
                    "Shell: {{shell}}",
                    "{{shell}}",
                ),
                (
                    format!("`{}`", machine.temp_dir),
                    "`{{temp_dir}}`",
                    "{{temp_dir}}",
                ),
                (
                    format!("after {timeout}"),
                    "after {{timeout_description}}",
                    "{{timeout_description}}",
                ),
            ];
            for (found, placeholder, name) in replacements {
                if description.contains(&found) {
                    *description = description.replace(&found, placeholder);
                } else {
                    notes.push(format!(
                        "bash description: `{found}` not found, so {name} stays fixed to this machine's value"
                    ));
                }
            }
        }
        if let Some(cwd) = env.cwd.as_deref().filter(|c| c.len() > 1)
            && description.contains(cwd)
        {
            notes.push(format!(
                "{name} description mentions the working directory `{cwd}`: it is sent as captured"
            ));
        }
    }
    let mut text = serde_json::to_string_pretty(&tools).map_err(|_| ExtractError::BadTools)?;
    text.push('\n');
    Ok(text)
}

/// `{{` and `}}` as the template syntax writes them literally.
fn escape_braces(text: &str) -> String {
    text.replace("{{", "{{{{").replace("}}", "}}}}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn machine() -> Machine {
        Machine {
            shell: None,
            temp_dir: "/var/tmp/opencode".into(),
        }
    }

    /// A hand-made opencode-shaped main request (not a copy of any real prompt).
    fn main_request(instructions: &str) -> Value {
        let system = format!(
            "You are Acme Code.\nBe brief.\n\nYou are powered by the model named m1. The exact model ID is lab/m1\n\
             Here is some useful information about the environment you are running in:\n<env>\n  \
             Working directory: /home/ann/app\n  Workspace root folder: /home/ann/app\n  \
             Is directory a git repo: no\n  Platform: linux\n  Today's date: Mon Nov 30 2026\n</env>\n\
             {instructions}Skills help.\n<available_skills>\n  <skill>\n    <name>s</name>\n    \
             <location>file:///home/ann/app/s</location>\n  </skill>\n</available_skills>"
        );
        json!({
            "model": "m1",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "\"hi\""}],
            "tools": [
                {"type": "function", "function": {"name": "bash", "description": "Runs.\nOS: linux, Shell: bash\nTemp: `/var/tmp/opencode`.\nTimes out after 120000ms.", "parameters": {"type": "object", "required": ["command"]}}},
                {"type": "function", "function": {"name": "read", "description": "Reads.", "parameters": {"type": "object"}}}
            ]
        })
    }

    fn title_request() -> Value {
        json!({"model": "m1", "messages": [
            {"role": "system", "content": "You name threads.\n"},
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": "\"hi\""}
        ]})
    }

    fn captures(bodies: Vec<Value>) -> Vec<Capture> {
        bodies
            .into_iter()
            .map(|body| Capture {
                path: "/v1/chat/completions".into(),
                body,
            })
            .collect()
    }

    #[test]
    fn files_from_a_title_and_a_main_request() {
        let files = extract(
            &captures(vec![title_request(), main_request("")]),
            &machine(),
        )
        .expect("extracts");
        assert_eq!(files.system, "You are Acme Code.\nBe brief.\n");
        assert_eq!(
            files.skills,
            "Skills help.\n<available_skills>\n  <skill>\n    <name>s</name>\n    <location>file://{{cwd}}/s</location>\n  </skill>\n</available_skills>\n"
        );
        assert_eq!(files.title.as_deref(), Some("You name threads.\n"));
        let tools: Value = serde_json::from_str(&files.tools).expect("json");
        assert_eq!(
            tools[0]["function"]["description"],
            "Runs.\nOS: {{os}}, Shell: {{shell}}\nTemp: `{{temp_dir}}`.\nTimes out after {{timeout_description}}."
        );
        assert_eq!(
            tools[0]["function"]["parameters"]["required"],
            json!(["command"])
        );
        assert_eq!(tools[1]["function"]["description"], "Reads.");
        assert!(files.notes.is_empty(), "{:?}", files.notes);
    }

    #[test]
    fn literal_double_braces_are_escaped_for_the_template_syntax() {
        let mut body = main_request("");
        body["tools"][1]["function"]["description"] = json!("Use {{name}} as is.");
        let files = extract(&captures(vec![body]), &machine()).expect("extracts");
        let tools: Value = serde_json::from_str(&files.tools).expect("json");
        assert_eq!(
            tools[1]["function"]["description"],
            "Use {{{{name}}}} as is."
        );
    }

    #[test]
    fn project_instructions_are_not_part_of_the_skills_file() {
        let files = extract(
            &captures(vec![main_request(
                "Instructions from: /home/ann/app/AGENTS.md\n# Rules\n\nTabs.\n\n",
            )]),
            &machine(),
        )
        .expect("extracts");
        assert!(
            files.skills.starts_with("Skills help.\n"),
            "{}",
            files.skills
        );
        assert!(
            files
                .notes
                .iter()
                .any(|n| n.contains("title.md not written"))
        );
        assert!(
            files
                .notes
                .iter()
                .any(|n| n.contains("project instructions"))
        );
    }

    #[test]
    fn missing_values_are_reported_and_no_main_request_is_an_error() {
        let mut body = main_request("");
        body["tools"][0]["function"]["description"] = json!("Runs on linux.");
        let files = extract(&captures(vec![body]), &machine()).expect("extracts");
        assert_eq!(
            files
                .notes
                .iter()
                .filter(|n| n.contains("stays fixed"))
                .count(),
            4
        );
        assert_eq!(
            extract(&captures(vec![title_request()]), &machine()),
            Err(ExtractError::NoMainRequest)
        );
    }
}
