//! How the upstream's answer is mapped back, as a harness decides it: forwarded untouched, or
//! reshaped for what the client asked (stream or one JSON, usage or not) with tool calls translated
//! back into the client's dialect by a `CallMapper` (a client profile implements it).

/// How a call the upstream made reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRoute {
    /// An alias of one of the client's tools: name and arguments are translated.
    Translate,
    /// One of the client's own tools: passed through.
    Native,
    /// Neither: passed through unchanged, and counted.
    Unmapped,
}

pub trait CallMapper: Send + Sync {
    fn route(&self, name: &str) -> CallRoute;
    /// The client's (name, arguments) for a complete call; `None` if the arguments do not translate.
    fn to_client(&self, name: &str, arguments: &str) -> Option<(String, String)>;
    /// The client's name of the tool a `Translate` call is made to, for a call whose arguments do
    /// not translate (it still goes to the client under the client's name).
    fn client_name(&self, _name: &str) -> Option<String> {
        None
    }
    /// Profile name, for metrics.
    fn profile(&self) -> &str;
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
}
