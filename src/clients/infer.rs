//! Capability inference: what a client tool no profile describes does, read from its name and its
//! schema, so an agent the proxy has never seen works at first try (docs/wire.md §3, "Inference").
//!
//! The rule, in order:
//! 1. **The name** says the capability: compared without case, `_`, `-` or spaces, against the
//!    usual synonyms (`shell`/`bash`/`terminal`/`run_command`…, `write`/`save`/`write_file`/
//!    `create_file`…, `read`/`read_file`/`view`…, `edit`/`str_replace`/`replace`…).
//! 2. **Each parameter** the client declares is matched to one neutral parameter of that
//!    capability by its name family (`path`/`file_path`/`filepath`/`filePath`, `command`/`cmd`,
//!    `content`/`text`, `old_string`/`oldString`/`old_str`/`old_text`…) and its JSON type.
//! 3. The inference **applies** only when every parameter the client *requires* is one the
//!    capability requires too (the proxy could not fill it otherwise) and every parameter the
//!    capability requires has a client slot (the client could not carry the model's call
//!    otherwise).
//! 4. **Units**: a timeout is in milliseconds when its name or description says so (`timeout_ms`,
//!    "milliseconds"), in seconds when they say seconds; a timeout whose unit cannot be told is
//!    left without a slot, so a call that sets one is not expressible rather than wrong.
//!
//! What the inferred alias then does with a neutral argument the client has no slot for is the
//! `only` conversion's rule (`profiles::convert`): folded (`workdir` → `cd DIR && …`), dropped if
//! it changes nothing, else the call is not expressible — never silently dropped.
//!
//! Owns: the inference rule. Must not: know an agent by name, do I/O.

use std::collections::BTreeMap;

use serde_json::Value;

use super::capability::{Capability, Param};
use super::profiles::{Alias, Conversion};
use super::schema::ToolSchema;

/// Tool names per capability, normalised (lower case, no `_`, `-`, spaces).
const NAMES: [(Capability, &[&str]); 10] = [
    (
        Capability::Shell,
        &[
            "bash",
            "shell",
            "terminal",
            "runcommand",
            "runshellcommand",
            "runterminalcommand",
            "runterminalcmd",
            "execcommand",
            "executecommand",
            "exec",
            "execute",
            "sh",
            "cmd",
            "command",
            "runbash",
            "shellcommand",
            "bashcommand",
        ],
    ),
    (
        Capability::Read,
        &[
            "read", "readfile", "view", "viewfile", "cat", "openfile", "fileread", "getfile",
        ],
    ),
    (
        Capability::Write,
        &[
            "write",
            "writefile",
            "save",
            "savefile",
            "createfile",
            "writetofile",
            "filewrite",
            "create",
            "newfile",
        ],
    ),
    (
        Capability::Edit,
        &[
            "edit",
            "editfile",
            "strreplace",
            "replace",
            "replaceinfile",
            "searchreplace",
            "searchandreplace",
            "fileedit",
            "applyedit",
            "strreplacefile",
            "modifyfile",
        ],
    ),
    (
        Capability::Glob,
        &[
            "glob",
            "findfiles",
            "globfiles",
            "filesearchglob",
            "find",
            "listfilesglob",
        ],
    ),
    (
        Capability::Grep,
        &[
            "grep",
            "grepsearch",
            "searchfiles",
            "ripgrep",
            "rg",
            "codesearch",
            "searchcode",
            "searchcontent",
            "search",
        ],
    ),
    (
        Capability::Fetch,
        &[
            "fetch",
            "webfetch",
            "fetchurl",
            "urlfetch",
            "readurl",
            "httpget",
            "fetchweb",
            "fetchwebpage",
            "browse",
        ],
    ),
    (
        Capability::Todo,
        &[
            "todowrite",
            "todo",
            "todos",
            "writetodos",
            "settodolist",
            "todolist",
            "updatetodos",
        ],
    ),
    (
        Capability::Agent,
        &[
            "task",
            "agent",
            "subagent",
            "spawnagent",
            "dispatchagent",
            "runagent",
        ],
    ),
    (
        Capability::Skill,
        &[
            "skill",
            "skills",
            "activateskill",
            "useskill",
            "loadskill",
            "readskill",
        ],
    ),
];

/// Parameter names per neutral parameter, normalised; the capability narrows the meaning (`path`
/// is a file for a read, a folder for a glob).
fn families(capability: Capability, neutral: &str) -> &'static [&'static str] {
    match (capability, neutral) {
        (_, "command") => &["command", "cmd", "script", "commandline", "shellcommand"],
        (_, "workdir") => &[
            "workdir",
            "cwd",
            "directory",
            "dir",
            "workingdirectory",
            "workingdir",
            "dirpath",
        ],
        (_, "timeout") => &[
            "timeout",
            "timeoutms",
            "timeoutmillis",
            "timeoutmilliseconds",
            "timeoutseconds",
            "timeoutsecs",
            "timeouts",
        ],
        (_, "description") => &["description", "desc", "summary"],
        (_, "filePath") => &[
            "path",
            "filepath",
            "file",
            "filename",
            "targetfile",
            "absolutepath",
            "target",
        ],
        (_, "content") => &[
            "content",
            "contents",
            "text",
            "data",
            "body",
            "filecontent",
            "filetext",
        ],
        (_, "oldString") => &[
            "oldstring",
            "oldstr",
            "oldtext",
            "old",
            "search",
            "before",
            "original",
            "find",
        ],
        (_, "newString") => &[
            "newstring",
            "newstr",
            "newtext",
            "new",
            "replace",
            "replacement",
            "after",
        ],
        (_, "replaceAll") => &["replaceall", "all", "allowmultiple", "global"],
        (_, "offset") => &[
            "offset",
            "startline",
            "linestart",
            "fromline",
            "lineoffset",
            "start",
        ],
        (_, "limit") => &[
            "limit",
            "nlines",
            "maxlines",
            "lines",
            "numlines",
            "linecount",
        ],
        (Capability::Glob | Capability::Grep, "pattern") => &[
            "pattern",
            "query",
            "regex",
            "searchpattern",
            "glob",
            "globpattern",
        ],
        (Capability::Glob | Capability::Grep, "path") => &[
            "path",
            "dir",
            "directory",
            "dirpath",
            "cwd",
            "root",
            "searchpath",
            "folder",
        ],
        (_, "include") => &["include", "includepattern", "filepattern", "filter", "glob"],
        (_, "url") => &["url", "uri", "link", "href"],
        (_, "format") => &["format"],
        (Capability::Agent, "prompt") => {
            &["prompt", "task", "instructions", "message", "objective"]
        }
        (_, "subagent_type") => &["subagenttype", "agenttype", "agent", "agentname", "type"],
        (_, "name") => &["name", "skill", "skillname"],
        (_, "todos") => &["todos", "items", "tasks"],
        _ => &[],
    }
}

fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' ' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The capability a tool's name says, if any.
pub fn capability_by_name(tool: &str) -> Option<Capability> {
    let name = normalise(tool);
    NAMES
        .iter()
        .find(|(_, names)| names.contains(&name.as_str()))
        .map(|(capability, _)| *capability)
}

/// The alias by which a client tool no profile describes stands for a capability, when its name
/// and schema say so (the rule above); `None` when it does not apply.
pub fn infer(tool: &str, schema: &ToolSchema) -> Option<Alias> {
    let capability = capability_by_name(tool)?;
    let declared = schema.declared()?;
    let params = capability.parameters();
    let mut fields = BTreeMap::new();
    let mut scale = BTreeMap::new();
    for client in &declared {
        let normalised = normalise(client);
        let Some(param) = params.iter().find(|p| {
            !fields.values().any(|taken: &String| taken == p.name)
                && families(capability, p.name).contains(&normalised.as_str())
                && fits(schema, client, p)
        }) else {
            continue;
        };
        if param.name == "timeout" {
            match timeout_factor(capability, &normalised, schema.property(client)) {
                Some(1.0) => {}
                Some(factor) => {
                    scale.insert((*client).to_owned(), factor);
                }
                // A unit we cannot tell: no slot.
                None => continue,
            }
        }
        fields.insert((*client).to_owned(), param.name.to_owned());
    }
    // A parameter the client requires must be one every call carries: one the capability
    // requires (a read that requires its `offset` would refuse the calls that give none).
    let required_found = schema.required().iter().all(|client| {
        fields
            .get(*client)
            .is_some_and(|neutral| params.iter().any(|p| p.required && p.name == neutral))
    });
    let capability_carried = params
        .iter()
        .filter(|p| p.required)
        .all(|p| fields.values().any(|n| n == p.name));
    if !(required_found && capability_carried) {
        return None;
    }
    let mut alias = Alias::new(tool, capability, Conversion::Only);
    alias.fields = fields;
    alias.scale = scale;
    Some(alias)
}

/// Whether a client parameter's declared type fits a neutral parameter (no declared type fits
/// anything).
fn fits(schema: &ToolSchema, client: &str, param: &Param) -> bool {
    let types = schema.types(client);
    types.is_empty() || types.iter().any(|t| param.kind.fits(t))
}

/// The factor from a client timeout to the neutral one (a shell's milliseconds, a fetch's
/// seconds), by the parameter's name, else its description; `None` when neither tells.
fn timeout_factor(
    capability: Capability,
    normalised: &str,
    property: Option<&Value>,
) -> Option<f64> {
    let description = property
        .and_then(|p| p.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let millis = normalised.ends_with("ms")
        || normalised.ends_with("millis")
        || normalised.ends_with("milliseconds")
        || description.contains("millisecond")
        || description.contains(" ms");
    let seconds = normalised.ends_with("seconds")
        || normalised.ends_with("secs")
        || normalised == "timeouts"
        || (!millis && description.contains("second"));
    // The neutral shell timeout is in milliseconds, the neutral fetch timeout in seconds.
    let neutral_ms = capability == Capability::Shell;
    match (millis, seconds, neutral_ms) {
        (true, _, true) | (false, true, false) => Some(1.0),
        (false, true, true) => Some(1000.0),
        (true, _, false) => Some(0.001),
        (false, false, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> ToolSchema {
        ToolSchema::new(Some(value))
    }

    /// Continue CLI 1.5.47's tools, as captured (2026-12-02).
    #[test]
    fn continue_cli_s_bash_and_write_are_a_shell_and_a_write() {
        let bash = infer(
            "Bash",
            &schema(json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string", "description": "The command to execute in the terminal."},
                "timeout": {"type": "number", "description": "Optional timeout in seconds (max 600)."}}})),
        )
        .expect("a shell");
        assert_eq!(bash.capability, Capability::Shell);
        assert_eq!(bash.fields["command"], "command");
        assert_eq!(bash.fields["timeout"], "timeout");
        assert_eq!(
            bash.scale["timeout"], 1000.0,
            "seconds to the neutral milliseconds"
        );
        let write = infer(
            "Write",
            &schema(
                json!({"type": "object", "required": ["filepath", "content"], "properties": {
                "filepath": {"type": "string"}, "content": {"type": "string"}}}),
            ),
        )
        .expect("a write");
        assert_eq!(write.capability, Capability::Write);
        assert_eq!(write.fields["filepath"], "filePath");
        // Continue's `Read {filepath}` and `Fetch {url}` too.
        assert_eq!(
            infer(
                "Read",
                &schema(json!({"type": "object", "required": ["filepath"],
                "properties": {"filepath": {"type": "string"}}}))
            )
            .map(|a| a.capability),
            Some(Capability::Read)
        );
        assert_eq!(
            infer(
                "Fetch",
                &schema(json!({"type": "object", "required": ["url"],
                "properties": {"url": {"type": "string"}}}))
            )
            .map(|a| a.capability),
            Some(Capability::Fetch)
        );
    }

    #[test]
    fn names_compare_without_case_or_separators() {
        for name in [
            "shell",
            "SHELL",
            "run_command",
            "run-command",
            "RunCommand",
            "exec_command",
        ] {
            assert_eq!(capability_by_name(name), Some(Capability::Shell), "{name}");
        }
        assert_eq!(capability_by_name("str_replace"), Some(Capability::Edit));
        assert_eq!(capability_by_name("create_file"), Some(Capability::Write));
        assert_eq!(capability_by_name("teleport"), None);
    }

    #[test]
    fn it_does_not_apply_when_a_required_parameter_is_unknown_or_a_needed_one_missing() {
        // `script_id` is required and means nothing neutral: the proxy could not fill it.
        let odd = schema(
            json!({"type": "object", "required": ["command", "script_id"],
            "properties": {"command": {"type": "string"}, "script_id": {"type": "string"}}}),
        );
        assert!(infer("bash", &odd).is_none());
        // A write with nowhere to put the content.
        let no_content = schema(json!({"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}}}));
        assert!(infer("write_file", &no_content).is_none());
        // A command that is not a string is another tool.
        let argv = schema(json!({"type": "object", "required": ["command"],
            "properties": {"command": {"type": "array", "items": {"type": "string"}}}}));
        assert!(infer("shell", &argv).is_none());
    }

    #[test]
    fn a_timeout_of_unknown_unit_gets_no_slot() {
        let bash = infer(
            "bash",
            &schema(
                json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string"}, "timeout": {"type": "integer"}}}),
            ),
        )
        .expect("still a shell");
        assert!(!bash.fields.contains_key("timeout"));
        let ms = infer(
            "bash",
            &schema(
                json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string"}, "timeout_ms": {"type": "integer"}}}),
            ),
        )
        .expect("a shell");
        assert_eq!(ms.fields["timeout_ms"], "timeout");
        assert!(!ms.scale.contains_key("timeout_ms"), "already milliseconds");
    }

    #[test]
    fn edit_parameters_are_matched_by_family() {
        let edit = infer(
            "str_replace",
            &schema(
                json!({"type": "object", "required": ["path", "old_str", "new_str"],
                "properties": {"path": {"type": "string"}, "old_str": {"type": "string"},
                    "new_str": {"type": "string"}}}),
            ),
        )
        .expect("an edit");
        assert_eq!(edit.fields["path"], "filePath");
        assert_eq!(edit.fields["old_str"], "oldString");
        assert_eq!(edit.fields["new_str"], "newString");
    }
}
