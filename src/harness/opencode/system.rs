//! The one system message (§1.2): prefix, identity line, `<env>` block, skills block — exact newlines.

use super::env::EnvValues;

/// Renders the identity templates: `{model}` is the request's model, `{provider}` the configured one.
pub fn render_identity(template: &str, model: &str, provider: &str) -> String {
    template
        .replace("{model}", model)
        .replace("{provider}", provider)
}

/// The skills block: a newline, then the file text with `{cwd}` substituted, trailing space trimmed.
pub fn skills_block(skills_template: &str, cwd: &str) -> String {
    let mut block = String::with_capacity(skills_template.len() + cwd.len() + 1);
    block.push('\n');
    block.push_str(skills_template.replace("{cwd}", cwd).trim_end());
    block
}

/// Assembles the system content. `skills` is empty for the search agent.
pub fn system_prompt(
    prefix: &str,
    model_name: &str,
    model_id: &str,
    env: &EnvValues,
    skills: &str,
) -> String {
    format!(
        "{prefix}\n\nYou are powered by the model named {model_name}. The exact model ID is {model_id}\n\
         Here is some useful information about the environment you are running in:\n<env>\n  \
         Working directory: {cwd}\n  Workspace root folder: {root}\n  Is directory a git repo: {git}\n  \
         Platform: {platform}\n  Today's date: {today}\n</env>{skills}",
        prefix = prefix.trim_end(),
        cwd = env.cwd,
        root = env.workspace_root,
        git = env.git,
        platform = env.platform,
        today = env.today,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvValues {
        EnvValues {
            cwd: "/home/user/project".into(),
            workspace_root: "/home/user/project".into(),
            git: "yes".into(),
            platform: "linux".into(),
            today: "Sat Nov 29 2025".into(),
        }
    }

    #[test]
    fn layout_matches_the_reference_format_string() {
        let skills = skills_block(
            "Skills intro.\n<location>file://{cwd}/%3Cbuilt-in%3E</location>\n",
            "/home/user/project",
        );
        let text = system_prompt(
            "PREFIX\n\n",
            "deepseek-chat",
            "deepseek/mock-model",
            &env(),
            &skills,
        );
        assert_eq!(
            text,
            "PREFIX\n\nYou are powered by the model named deepseek-chat. The exact model ID is deepseek/mock-model\n\
             Here is some useful information about the environment you are running in:\n<env>\n  \
             Working directory: /home/user/project\n  Workspace root folder: /home/user/project\n  \
             Is directory a git repo: yes\n  Platform: linux\n  Today's date: Sat Nov 29 2025\n</env>\n\
             Skills intro.\n<location>file:///home/user/project/%3Cbuilt-in%3E</location>"
        );
    }

    #[test]
    fn search_agent_has_no_skills_and_no_trailing_newline() {
        let text = system_prompt("P", "n", "i", &env(), "");
        assert!(text.ends_with("Today's date: Sat Nov 29 2025\n</env>"));
    }

    #[test]
    fn identity_templates() {
        assert_eq!(
            render_identity("deepseek/{model}", "m1", "deepseek"),
            "deepseek/m1"
        );
        assert_eq!(
            render_identity("{provider}/{model}", "m1", "openrouter"),
            "openrouter/m1"
        );
        assert_eq!(render_identity("deepseek-chat", "m1", "x"), "deepseek-chat");
    }
}
