//! swe-agent's command extraction (docs/harnesses.md): the first of four ordered rules that
//! yields a non-empty command (trimmed) wins — `<tool_invoke>` blocks naming `execute_bash`,
//! `<invoke name="bash">` blocks, the first `<execute_bash>` block, the first fenced block (its
//! `bash`/`sh`/`shell` label line dropped). Tag searches are first-occurrence, case-sensitive, no
//! nesting; the tag rules decode `&lt; &gt; &quot; &apos;`, then `&amp;`.
//!
//! Every search moves forward through the text, so the work is linear in its length; nothing here
//! can panic on any input (the fuzz target `swe_agent_extract` holds it to that).

/// The command of an answer, if any rule finds one.
pub fn command(text: &str) -> Option<String> {
    tool_invoke(text)
        .or_else(|| invoke(text))
        .or_else(|| execute_bash(text))
        .or_else(|| fenced(text))
}

/// Rule 1: `<tool_invoke>` blocks in order; a block without its closing tag ends the search.
fn tool_invoke(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(block) = between(rest, "<tool_invoke>", "</tool_invoke>") {
        rest = block.after;
        if between(block.inner, "<name>", "</name>")
            .is_some_and(|n| n.inner.trim() == "execute_bash")
            && let Some(code) = between(block.inner, "<code>", "</code>")
            && let Some(found) = found(&decode(code.inner))
        {
            return Some(found);
        }
    }
    None
}

const INVOKE_NAMES: [&str; 4] = [
    "name=\"bash\"",
    "name='bash'",
    "name=\"execute_bash\"",
    "name='execute_bash'",
];

/// Rule 2: `<invoke name=…>` blocks whose opening tag names bash: the `command` parameter (a
/// `<parameter>` nested in it first), else a `<command>` element.
fn invoke(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(at) = rest.find("<invoke") {
        let from = &rest[at..];
        let tag_end = from.find('>')?;
        let tag = &from[..tag_end];
        let body = &from[tag_end + 1..];
        let close = body.find("</invoke>")?;
        let inner = &body[..close];
        rest = &body[close + "</invoke>".len()..];
        if !INVOKE_NAMES.iter().any(|name| tag.contains(name)) {
            continue;
        }
        if let Some(found) = parameter(inner)
            .or_else(|| between(inner, "<command>", "</command>").map(|c| c.inner))
            .and_then(|command| found(&decode(command)))
        {
            return Some(found);
        }
    }
    None
}

/// The content of `<parameter name="command">` (either quote), or of the `<parameter>` nested in
/// it before its own closing tag.
fn parameter(inner: &str) -> Option<&str> {
    let open = ["<parameter name=\"command\">", "<parameter name='command'>"]
        .iter()
        .filter_map(|tag| inner.find(tag).map(|at| (at, tag.len())))
        .min()?;
    let content = &inner[open.0 + open.1..];
    let close = content.find("</parameter>")?;
    match content[..close].find("<parameter>") {
        Some(nested) => {
            let after = &content[nested + "<parameter>".len()..];
            after.find("</parameter>").map(|end| &after[..end])
        }
        None => Some(&content[..close]),
    }
}

/// Rule 3: the first `<execute_bash>` block, or the `<code>` inside it.
fn execute_bash(text: &str) -> Option<String> {
    let block = between(text, "<execute_bash>", "</execute_bash>")?;
    let command = between(block.inner, "<code>", "</code>").map_or(block.inner, |c| c.inner);
    found(&decode(command))
}

/// Rule 4: the first fenced block; a first line that is exactly `bash`, `sh` or `shell` is its
/// label, any other stays in the command.
fn fenced(text: &str) -> Option<String> {
    let block = between(text, "```", "```")?;
    let inner = block.inner;
    let (first, rest) = inner.split_once('\n').unwrap_or((inner, ""));
    let command = if matches!(first.trim(), "bash" | "sh" | "shell") {
        rest
    } else {
        inner
    };
    found(command)
}

/// A command found: trimmed, not empty.
fn found(command: &str) -> Option<String> {
    let trimmed = command.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

struct Between<'a> {
    inner: &'a str,
    after: &'a str,
}

/// The text between the first `open` and the next `close` after it, and what follows `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<Between<'a>> {
    let start = text.find(open)? + open.len();
    let from = &text[start..];
    let end = from.find(close)?;
    Some(Between {
        inner: &from[..end],
        after: &from[end + close.len()..],
    })
}

/// The tag rules' entity decoding: `&lt; &gt; &quot; &apos;`, then `&amp;` (so `&amp;lt;` stays
/// `&lt;`).
fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::command;

    /// The reference's extraction vectors, written out by hand.
    #[test]
    fn the_spec_vectors() {
        assert_eq!(
            command("Let's run this.\n```bash\npython test.py\n```").as_deref(),
            Some("python test.py")
        );
        assert_eq!(
            command(
                "<tool_invoke>\n<name>execute_bash</name>\n<code>ls -la /app</code>\n</tool_invoke>"
            )
            .as_deref(),
            Some("ls -la /app")
        );
        assert_eq!(
            command("<invoke name=\"bash\">\n<parameter name=\"command\">\n<parameter>ls -la /app</parameter>\n</parameter>\n</invoke>")
                .as_deref(),
            Some("ls -la /app")
        );
        assert_eq!(
            command("DISCUSSION\n<execute_bash>\n<code>find /app -maxdepth 2 -type f</code>\n</execute_bash>")
                .as_deref(),
            Some("find /app -maxdepth 2 -type f")
        );
    }

    #[test]
    fn the_rules_go_in_order_and_a_tag_rule_beats_an_earlier_fence() {
        let text = "```bash\nls\n```\n<execute_bash>pwd</execute_bash>";
        assert_eq!(command(text).as_deref(), Some("pwd"));
    }

    #[test]
    fn a_tool_invoke_of_another_name_or_empty_code_is_passed_over() {
        let text = "<tool_invoke><name>python</name><code>print(1)</code></tool_invoke>\
                    <tool_invoke><name>execute_bash</name><code>  </code></tool_invoke>\
                    <tool_invoke><name>execute_bash</name><code>echo &lt;a&gt; &amp;&amp; true</code></tool_invoke>";
        assert_eq!(command(text).as_deref(), Some("echo <a> && true"));
    }

    #[test]
    fn an_unclosed_tool_invoke_ends_that_rule_only() {
        let text = "<tool_invoke><name>execute_bash</name><code>ls</code>\n```\ncat x\n```";
        assert_eq!(command(text).as_deref(), Some("cat x"));
    }

    #[test]
    fn invoke_takes_single_quotes_and_the_command_element() {
        assert_eq!(
            command(
                "<invoke name='execute_bash'><command>make &amp;&amp; make test</command></invoke>"
            )
            .as_deref(),
            Some("make && make test")
        );
        assert_eq!(
            command("<invoke name=\"python\"><parameter name=\"command\">x</parameter></invoke>"),
            None
        );
        assert_eq!(
            command("<invoke name=\"bash\"><parameter name='command'>echo &quot;hi&quot;</parameter></invoke>")
                .as_deref(),
            Some("echo \"hi\"")
        );
    }

    #[test]
    fn a_fence_label_other_than_a_shell_stays_in_the_command() {
        assert_eq!(
            command("```python\nprint(1)\n```").as_deref(),
            Some("python\nprint(1)")
        );
        assert_eq!(command("```\n  ls -l  \n```").as_deref(), Some("ls -l"));
        assert_eq!(command("```sh\n```"), None);
    }

    #[test]
    fn forms_the_rules_do_not_know_find_nothing() {
        assert_eq!(
            command("<function=bash><parameter=command>ls</parameter></function>"),
            None
        );
        assert_eq!(command("I will now run ls."), None);
        assert_eq!(command("```bash\nls"), None);
        assert_eq!(command("<EXECUTE_BASH>ls</EXECUTE_BASH>"), None);
    }

    #[test]
    fn entities_decode_once_and_amp_last() {
        assert_eq!(
            command("<execute_bash>echo &amp;lt;</execute_bash>").as_deref(),
            Some("echo &lt;")
        );
    }
}
