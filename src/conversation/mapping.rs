//! How the upstream's answer is mapped back, as a harness decides it: forwarded untouched, or
//! reshaped for what the client asked (stream or one JSON, usage or not) with tool calls translated
//! back into the client's dialect by a `CallMapper` (a client profile's bridge implements it).

/// How a call the upstream made reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRoute {
    /// Held until complete, then delivered through `CallMapper::to_client` (translated, or
    /// checked against the client's schema).
    Translate,
    /// One of the client's own tools that takes the call as it is: passed through.
    Native,
    /// Neither: passed through unchanged, and counted.
    Unmapped,
}

/// What became of a call on its way to the client (metrics, logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Put into the client's names, units and shapes, and valid for its schema.
    Translated,
    /// Sent as the model made it, under the client's name: it validates as it is.
    AsMade,
    /// Neither translated nor valid as made: sent as made (still a JSON object), and reported.
    Invalid,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Self::Translated => "translated",
            Self::AsMade => "as_made",
            Self::Invalid => "invalid",
        }
    }
}

/// A call as the client gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub name: String,
    /// A JSON object's text, always.
    pub arguments: String,
    pub outcome: Outcome,
}

pub trait CallMapper: Send + Sync {
    fn route(&self, name: &str) -> CallRoute;
    /// The client's call for a complete `Translate` call.
    fn to_client(&self, name: &str, arguments: &str) -> Delivered;
    /// About what deciding a complete call costs (`to_client`, `deliverable`), in bytes of the
    /// schema it is checked against and of its arguments: the route decides a large answer's
    /// calls on the blocking pool (`routes::checks`).
    fn check_cost(&self, _name: &str, arguments: &str) -> usize {
        arguments.len()
    }
    /// Profile name, for logs.
    fn profile(&self) -> &str;
    /// The profile as a metric label (clipped).
    fn profile_label(&self) -> String;
    /// A call's tool name as a metric label: one of a bounded set fixed at start-up (names the
    /// proxy knows, else `other`), never a name a client or a model chose.
    fn tool_label(&self, name: &str) -> String;
    /// Whether a complete call can reach the client: a call to a tool it has, whose arguments
    /// validate against its schema once converted (or as made). A call that cannot is answered
    /// upstream by the proxy instead (`routes::correct`).
    fn deliverable(&self, name: &str, arguments: &str) -> bool {
        match self.route(name) {
            CallRoute::Native => true,
            CallRoute::Translate => self.to_client(name, arguments).outcome != Outcome::Invalid,
            CallRoute::Unmapped => false,
        }
    }
    /// What the model is told of a call that could not reach the client: what was wrong and
    /// what the tool takes.
    fn explain(&self, name: &str, _arguments: &str) -> String {
        format!("there is no `{name}` tool")
    }
}

/// How the route must treat a successful upstream response.
pub enum ResponsePlan {
    /// Bytes go to the client untouched.
    Passthrough,
    /// The upstream was asked to stream; the client gets what it asked for.
    Reshape(Reshape),
}

pub struct Reshape {
    /// The client asked for SSE (`stream: true`).
    pub client_stream: bool,
    /// The client asked for the usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Translates tool calls into the client's dialect; `None` leaves them as they are.
    pub calls: Option<std::sync::Arc<dyn CallMapper>>,
    /// A text-protocol harness's rules: the answer is held whole and read by them
    /// (`conversation::action`); `None` for every other harness.
    pub actions: Option<std::sync::Arc<dyn super::action::ActionReader>>,
}
