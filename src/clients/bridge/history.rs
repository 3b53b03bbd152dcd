//! The client's history in the harness's tools: each past call as the harness's tool takes it,
//! each result in the neutral words (a sub-agent's answer as the task result it was).

use super::{Bridge, Via, parse_object};
use crate::clients::capability::Capability;

impl Bridge {
    /// A call from the client's history as the harness's tools take it: one call, or several
    /// when the client's tool does several things at once (pi's `edits[]`), as (name, arguments
    /// text); the client's call as it is when it does not convert.
    pub fn history_calls(&self, client_tool: &str, arguments: &str) -> Vec<(String, String)> {
        let keep = || vec![(client_tool.to_owned(), arguments.to_owned())];
        // The harness's own agent as the client: its calls are the harness's already.
        if self.profile.is_known_agent()
            && self.profile.name == self.harness.profile().name
            && self.harness.get(client_tool).is_some()
        {
            return keep();
        }
        let neutral = match self.by_name.get(client_tool).map(|&i| &self.tools[i].via) {
            Some(Via::Inferred(alias)) => parse_object(arguments)
                .and_then(|args| alias.to_neutral(args))
                .map(|calls| {
                    calls
                        .into_iter()
                        .map(|(c, v)| (c, crate::conversation::json_text(&v)))
                        .collect::<Vec<_>>()
                }),
            Some(Via::SameName) => None,
            Some(Via::Profile) | None => self.profile.calls_to_neutral(client_tool, arguments),
        };
        let Some(neutral) = neutral else {
            // Arguments that do not convert keep their text; the call still goes under the
            // harness's tool for what the client's tool does (docs/wire.md §1, invalid JSON →
            // verbatim).
            let harness_tool = self
                .profile
                .capabilities(client_tool)
                .next()
                .and_then(|c| self.harness.for_capability(c));
            return match harness_tool {
                Some(tool) => vec![(tool.name.clone(), arguments.to_owned())],
                None => keep(),
            };
        };
        let harness_has = |tool: &str| self.harness.get(tool).is_some();
        let converted: Option<Vec<(String, String)>> = neutral
            .iter()
            .map(|(capability, args)| {
                self.harness
                    .profile()
                    .call_from_neutral(*capability, args, &harness_has)
            })
            .collect();
        converted.unwrap_or_else(keep)
    }

    /// A result from the client's history in the neutral words (the harness's tools answer in
    /// them, or reword them). A sub-agent's answer is the task result, named by the id of the
    /// call that started it (`subagent`).
    pub fn history_output(&self, client_tool: &str, call_id: Option<&str>, text: &str) -> String {
        if self.is_subagent_tool(client_tool) && !crate::clients::subagent::is_task_result(text) {
            let answer = self.profile.output_to_neutral(client_tool, text);
            let id = crate::clients::subagent::task_id(call_id.unwrap_or(client_tool));
            return crate::clients::subagent::task_result(&id, &answer);
        }
        let neutral = self.profile.output_to_neutral(client_tool, text);
        // A write or an edit of a tool read by inference: its own success sentence, in the
        // neutral words (Continue CLI's `Successfully created file: …`).
        let capability = match self.by_name.get(client_tool).map(|&i| &self.tools[i].via) {
            Some(Via::Inferred(alias)) => Some(alias.capability),
            _ => None,
        };
        match capability {
            Some(Capability::Write) if reads_as_success(&neutral) => {
                crate::clients::capability::WROTE.to_owned()
            }
            Some(Capability::Edit) if reads_as_success(&neutral) => {
                crate::clients::capability::EDITED.to_owned()
            }
            _ => neutral,
        }
    }
}

impl Bridge {
    /// Whether a client tool starts the client's sub-agents, for a harness whose agent is not the
    /// client itself (its own results are its own words already).
    fn is_subagent_tool(&self, client_tool: &str) -> bool {
        let same_agent =
            self.profile.is_known_agent() && self.profile.name == self.harness.profile().name;
        let inferred = match self.by_name.get(client_tool).map(|&i| &self.tools[i].via) {
            Some(Via::Inferred(alias)) => alias.capability == Capability::Agent,
            _ => false,
        };
        !same_agent
            && (inferred
                || self
                    .profile
                    .capabilities(client_tool)
                    .any(|c| c == Capability::Agent))
    }
}

/// A one-line success sentence of a file tool (`Successfully created file: …`, `File written`,
/// `Wrote 12 bytes to …`): nothing for the model to read but that it worked.
fn reads_as_success(text: &str) -> bool {
    let text = text.trim();
    let lower = text.to_lowercase();
    !text.contains('\n')
        && [
            "success", "wrote ", "written", "created", "updated", "edited", "applied", "saved",
        ]
        .iter()
        .any(|word| lower.contains(word))
        && !["error", "fail", "not ", "cannot", "unable"]
            .iter()
            .any(|word| lower.contains(word))
}
