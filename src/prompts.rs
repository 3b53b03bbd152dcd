//! Prompt texts: compiled in from `prompts/`, each replaceable by the same relative path under a
//! prompts directory. Everything is read, parsed and rendered once at start-up, so a broken file
//! fails start-up with its path named and never fails a request.

use std::path::{Path, PathBuf};

use crate::template::{Template, TemplateError, format_mode_names};

/// Display names of the collaboration modes a client can select, in the reference's order.
pub const KNOWN_MODE_NAMES: [&str; 2] = ["Default", "Plan"];

/// A prompt file compiled in, by its path under the prompts directory.
pub struct Builtin {
    pub path: &'static str,
    pub text: &'static str,
}

/// A prompt file of a harness, compiled in from `prompts/<path>`: `prompt_file!("pi/system.md")`.
#[macro_export]
macro_rules! prompt_file {
    ($path:literal) => {
        $crate::prompts::Builtin {
            path: $path,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/", $path)),
        }
    };
}

const SYSTEM: Builtin = Builtin {
    path: "opencode/system.md",
    text: include_str!("../prompts/opencode/system.md"),
};
const SEARCH_AGENT: Builtin = Builtin {
    path: "opencode/search_agent.md",
    text: include_str!("../prompts/opencode/search_agent.md"),
};
const TITLE: Builtin = Builtin {
    path: "opencode/title.md",
    text: include_str!("../prompts/opencode/title.md"),
};
const SKILLS: Builtin = Builtin {
    path: "opencode/skills.md",
    text: include_str!("../prompts/opencode/skills.md"),
};
const TOOLS: Builtin = Builtin {
    path: "opencode/tools.json",
    text: include_str!("../prompts/opencode/tools.json"),
};
const DEFAULT_MODE: Builtin = Builtin {
    path: "collaboration/default.md",
    text: include_str!("../prompts/collaboration/default.md"),
};
const PLAN_MODE: Builtin = Builtin {
    path: "collaboration/plan.md",
    text: include_str!("../prompts/collaboration/plan.md"),
};

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("prompt file {path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("prompt file {path}: {source}")]
    Tools { path: String, source: ToolsError },
    #[error("prompt file {path}: {source}")]
    Template { path: String, source: TemplateError },
    #[error("prompt file {path}: {source}; this file may use {known}")]
    Placeholders {
        path: String,
        source: TemplateError,
        known: String,
    },
}

/// One opencode tool definition as shipped: its name and its JSON text.
#[derive(Debug, Clone)]
pub struct ToolText {
    pub name: String,
    pub json: String,
}

/// Every prompt, loaded and checked.
#[derive(Debug, Clone)]
pub struct Prompts {
    /// The operator's prompts directory: a harness's own files are read from it (else built in)
    /// when the harness is built, at start-up.
    pub dir: Option<PathBuf>,
    /// Main system prefix (file text; trimmed where used).
    pub system: String,
    pub search_agent: String,
    /// Title system prompt, sent whole (final newline included).
    pub title: String,
    /// Skills block with a `{{cwd}}` placeholder.
    pub skills: String,
    /// The ten tool definitions in file order; bash keeps its `{{os}}`-style placeholders.
    pub tools: Vec<ToolText>,
    /// Default collaboration instructions, rendered.
    pub collaboration_default: String,
    /// Plan collaboration instructions, rendered.
    pub collaboration_plan: String,
}

impl Prompts {
    /// The built-in prompts, with files under `dir` taking precedence.
    pub fn load(dir: Option<&Path>) -> Result<Self, PromptError> {
        let read = |builtin: &Builtin| read_file(dir, builtin);
        let (system, _) = read(&SYSTEM)?;
        let (search_agent, _) = read(&SEARCH_AGENT)?;
        let (title, _) = read(&TITLE)?;
        let (skills, _) = read(&SKILLS)?;
        let (tools_text, tools_path) = read(&TOOLS)?;
        let tools = parse_tools(&tools_text).map_err(|source| PromptError::Tools {
            path: tools_path,
            source,
        })?;
        let (default_text, default_path) = read(&DEFAULT_MODE)?;
        let names = format_mode_names(&KNOWN_MODE_NAMES);
        let collaboration_default = render(&default_text, &[("KNOWN_MODE_NAMES", &names)])
            .map_err(|source| PromptError::Template {
                path: default_path,
                source,
            })?;
        let (plan_text, plan_path) = read(&PLAN_MODE)?;
        let collaboration_plan =
            render(&plan_text, &[]).map_err(|source| PromptError::Template {
                path: plan_path,
                source,
            })?;
        Ok(Self {
            dir: dir.map(Path::to_path_buf),
            system,
            search_agent,
            title,
            skills,
            tools,
            collaboration_default,
            collaboration_plan,
        })
    }
}

impl Prompts {
    /// A harness's prompt file: the operator's copy under the prompts directory, else the one
    /// compiled in; its text and the path errors name.
    pub fn read(&self, builtin: &Builtin) -> Result<PromptText, PromptError> {
        let (text, path) = read_file(self.dir.as_deref(), builtin)?;
        Ok(PromptText { text, path })
    }
}

/// One prompt file's text, and where it came from (for errors).
#[derive(Debug, Clone)]
pub struct PromptText {
    pub text: String,
    pub path: String,
}

impl PromptText {
    /// The text, bound as a template whose placeholders are among `holes` (filled per request,
    /// `Pattern::fill`); a placeholder outside them fails naming the file and the known ones.
    /// The file's final newline is not part of the text.
    pub fn pattern(&self, holes: &[&str]) -> Result<crate::template::Pattern, PromptError> {
        let text = self.text.strip_suffix('\n').unwrap_or(&self.text);
        Template::parse(text)
            .and_then(|t| t.bind(&[], holes))
            .map_err(|source| PromptError::Placeholders {
                path: self.path.clone(),
                source,
                known: if holes.is_empty() {
                    "no placeholder".to_owned()
                } else {
                    holes.join(", ")
                },
            })
    }

    /// The text as it is, its final newline left out (a file with no placeholders; `{{` still
    /// has to be written `{{{{`).
    pub fn plain(&self) -> Result<String, PromptError> {
        Ok(self.pattern(&[])?.fill(&[]))
    }

    /// A tools file: a JSON array of `{"type":"function","function":{"name":…,"parameters":…}}`.
    pub fn tools(&self) -> Result<Vec<ToolText>, PromptError> {
        parse_tools(&self.text).map_err(|source| PromptError::Tools {
            path: self.path.clone(),
            source,
        })
    }
}

fn read_file(dir: Option<&Path>, builtin: &Builtin) -> Result<(String, String), PromptError> {
    if let Some(dir) = dir {
        let path = dir.join(builtin.path);
        match std::fs::read_to_string(&path) {
            Ok(text) => return Ok((text, path.display().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(PromptError::Read { path, source }),
        }
    }
    Ok((
        builtin.text.to_owned(),
        format!("<built-in>/{}", builtin.path),
    ))
}

fn render(text: &str, values: &[(&str, &str)]) -> Result<String, TemplateError> {
    Template::parse(text).and_then(|t| t.render(values))
}

/// What is wrong with the tools file.
#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error("not a JSON array of tools: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("tool #{0} has no function.name")]
    NoName(usize),
    #[error("tool `{0}` has no function.parameters")]
    NoParameters(String),
    #[error("tool `{0}` is defined twice")]
    Twice(String),
}

/// The tools file must be a JSON array of `{"type":"function","function":{"name":…}}` objects.
fn parse_tools(text: &str) -> Result<Vec<ToolText>, ToolsError> {
    let values: Vec<serde_json::Value> = serde_json::from_str(text)?;
    let mut tools = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let name = value
            .pointer("/function/name")
            .and_then(serde_json::Value::as_str)
            .ok_or(ToolsError::NoName(i))?;
        if value.pointer("/function/parameters").is_none() {
            return Err(ToolsError::NoParameters(name.to_owned()));
        }
        if tools.iter().any(|t: &ToolText| t.name == name) {
            return Err(ToolsError::Twice(name.to_owned()));
        }
        tools.push(ToolText {
            name: name.to_owned(),
            json: value.to_string(),
        });
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_render() {
        let prompts = Prompts::load(None).expect("built-in prompts are valid");
        assert!(
            prompts
                .collaboration_default
                .contains("Known mode names are Default and Plan.")
        );
        assert!(!prompts.collaboration_default.contains("{{"));
        let names: Vec<&str> = prompts.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "bash",
                "edit",
                "glob",
                "grep",
                "read",
                "skill",
                "task",
                "todowrite",
                "webfetch",
                "write"
            ]
        );
        assert!(prompts.title.starts_with("You are a title generator."));
        assert!(prompts.title.ends_with("</examples>\n"));
        assert!(prompts.skills.contains("{{cwd}}"));
    }

    /// The seed documents' texts ship verbatim: their lengths and SHA-256s (head and tail here) are
    /// the reference's.
    #[test]
    fn verbatim_prompts_match_the_spec_hashes() {
        use sha2::{Digest, Sha256};
        let hash = |text: &str| hex::encode(Sha256::digest(text.as_bytes()));
        let cases = [
            (TITLE.text, 2120, "e7a6848e", "656f"),
            (SEARCH_AGENT.text, 871, "97c4780d", "1e13"),
            (DEFAULT_MODE.text, 929, "94a6a72b", "58d7"),
        ];
        for (text, len, head, tail) in cases {
            let digest = hash(text);
            assert_eq!(text.len(), len);
            assert!(
                digest.starts_with(head) && digest.ends_with(tail),
                "{digest}"
            );
        }
    }

    #[test]
    fn directory_files_override_and_missing_ones_fall_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("opencode")).expect("mkdir");
        std::fs::write(dir.path().join("opencode/system.md"), "custom prefix\n").expect("write");
        let prompts = Prompts::load(Some(dir.path())).expect("valid");
        assert_eq!(prompts.system, "custom prefix\n");
        assert!(prompts.title.starts_with("You are a title generator."));
    }

    #[test]
    fn a_bad_template_fails_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("collaboration")).expect("mkdir");
        std::fs::write(
            dir.path().join("collaboration/plan.md"),
            "Plan {{ missing }}\n",
        )
        .expect("write");
        let err = Prompts::load(Some(dir.path()))
            .expect_err("bad template")
            .to_string();
        assert!(err.contains("collaboration/plan.md"), "{err}");
        assert!(
            err.contains("template placeholder `missing` is missing a value"),
            "{err}"
        );

        std::fs::write(dir.path().join("collaboration/plan.md"), "ok\n").expect("write");
        std::fs::write(
            dir.path().join("collaboration/default.md"),
            "no placeholder here\n",
        )
        .expect("write");
        let err = Prompts::load(Some(dir.path()))
            .expect_err("unused value")
            .to_string();
        assert!(
            err.contains("collaboration/default.md")
                && err.contains("is not used by this template"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_tools_file_fails_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("opencode")).expect("mkdir");
        std::fs::write(
            dir.path().join("opencode/tools.json"),
            "[{\"type\":\"function\"}]",
        )
        .expect("write");
        let err = Prompts::load(Some(dir.path()))
            .expect_err("bad tools")
            .to_string();
        assert!(
            err.contains("opencode/tools.json") && err.contains("no function.name"),
            "{err}"
        );
    }
}
