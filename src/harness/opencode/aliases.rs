//! Alias profiles: how a client's tools map to opencode's, with argument translation both ways.
//! The identity profile maps every name to itself.

/// A client's tool dialect.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub name: String,
}

impl Profile {
    pub fn identity() -> Self {
        Self {
            name: "opencode".to_owned(),
        }
    }

    /// The opencode tool a client tool stands for (itself when unmapped).
    pub fn opencode_name<'a>(&'a self, client_tool: &'a str) -> &'a str {
        client_tool
    }

    /// A call from the client's history, in opencode's terms: (name, arguments text).
    pub fn call_to_opencode(&self, client_tool: &str, arguments: &str) -> (String, String) {
        (client_tool.to_owned(), arguments.to_owned())
    }

    /// A tool result from the client's history, as opencode's tools would have returned it.
    pub fn output_to_opencode(&self, _client_tool: &str, text: &str) -> String {
        text.to_owned()
    }
}
