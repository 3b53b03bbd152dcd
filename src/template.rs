//! The strict `{{ name }}` template engine used for embedded prompts (Codex's template rules, as
//! docs/harnesses.md "Collaboration modes" states them), plus `format_mode_names` for the collaboration-mode `KNOWN_MODE_NAMES` value.
//!
//! It owns parsing and rendering only: it does no I/O, knows no prompt names and never guesses — every
//! malformed template and every mismatch between placeholders and supplied values is an error, so a bad
//! prompt fails at start-up instead of reaching a model.
//!
//! Syntax, read left to right outside placeholders:
//! - `{{{{` is a literal `{{` and `}}}}` a literal `}}` (the four-brace escape wins over `{{`/`}}`);
//! - `{{` opens a placeholder that the *first* following `}}` closes; the name between them is trimmed of
//!   Unicode whitespace and must not be empty or contain `{{`;
//! - any other `}}` is an unmatched-delimiter error;
//! - a single `{` or `}` is literal text.
//!
//! Consequences pinned by the tests: the four-brace escapes are not recognised inside a placeholder, so
//! `{{a}}}` renders `a`'s value followed by a literal `}`, while `{{a}}}}` is an error (the placeholder
//! closes at the first `}}`, leaving a stray `}}`); `{{{a}}` opens a placeholder named `{a` (a single brace
//! inside a name is not special), which strict rendering then reports as a missing value rather than
//! silently emitting text. Supplied values are inserted verbatim and never re-parsed.

use thiserror::Error;

/// A prompt file's text that does not fit the placeholders it may use.
#[derive(Debug, Error)]
pub enum BindError {
    /// The template's own error, then the placeholders that file knows (`known`).
    #[error("{source}; {known}")]
    Template {
        source: TemplateError,
        known: &'static str,
    },
    /// A placeholder in the single-brace form of before `{{ }}`: it would be sent as text.
    #[error("`{{{name}}}` is not a placeholder; write `{{{{{name}}}}}`")]
    OldForm { name: &'static str },
}

/// Why a template failed to parse or render. Parse offsets are byte offsets into the template source,
/// pointing at the `{{` that opened the offending placeholder or at the stray `}}`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TemplateError {
    /// `{{ }}`: nothing but whitespace between the delimiters.
    #[error("template placeholder at byte {at} is empty")]
    EmptyPlaceholder {
        /// Where the placeholder's `{{` starts.
        at: usize,
    },
    /// `{{ a {{`: a second opener before the placeholder closed.
    #[error("template placeholder starting at byte {at} contains a nested `{{{{`")]
    NestedPlaceholder {
        /// Where the outer placeholder's `{{` starts.
        at: usize,
    },
    /// A `}}` that closes nothing and is not part of the `}}}}` escape.
    #[error("template contains an unmatched `}}}}` at byte {at}")]
    UnmatchedClose {
        /// Where the stray `}}` starts.
        at: usize,
    },
    /// `{{ a` with no `}}` before the end of the source.
    #[error("template placeholder starting at byte {at} is missing `}}}}`")]
    UnterminatedPlaceholder {
        /// Where the placeholder's `{{` starts.
        at: usize,
    },
    /// The template uses a placeholder for which no value was supplied.
    #[error("template placeholder `{name}` is missing a value")]
    MissingValue {
        /// The placeholder's (trimmed) name.
        name: String,
    },
    /// A value was supplied that no placeholder uses; strict so a renamed placeholder cannot go unnoticed.
    #[error("template value `{name}` is not used by this template")]
    UnusedValue {
        /// The supplied value's name.
        name: String,
    },
    /// The same name was supplied twice, which would make the rendered text depend on argument order.
    #[error("template value `{name}` was provided more than once")]
    DuplicateValue {
        /// The repeated name.
        name: String,
    },
}

/// One run of the parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Text copied to the output as is, escapes already resolved.
    Literal(String),
    /// A placeholder name, already trimmed.
    Placeholder(String),
}

/// A parsed template, ready to be rendered any number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The template as alternating literal and placeholder runs, in source order.
    segments: Vec<Segment>,
    /// Each distinct placeholder name once, in order of first appearance, so the strictness checks and
    /// `placeholders()` need not walk the segments.
    names: Vec<String>,
}

impl Template {
    /// Parses `source`, resolving the `{{{{`/`}}}}` escapes and collecting the placeholders.
    ///
    /// # Errors
    /// [`TemplateError::EmptyPlaceholder`], [`TemplateError::NestedPlaceholder`],
    /// [`TemplateError::UnmatchedClose`] or [`TemplateError::UnterminatedPlaceholder`], each with the byte
    /// offset of the offending delimiter.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let mut segments = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut literal = String::new();
        let mut cursor = 0;

        // Only braces are interesting, so jump from one to the next; every delimiter is ASCII, which keeps
        // all the offsets below on char boundaries.
        while let Some(offset) = source[cursor..].find(['{', '}']) {
            let at = cursor + offset;
            literal.push_str(&source[cursor..at]);
            let rest = &source[at..];
            if rest.starts_with("{{{{") {
                literal.push_str("{{");
                cursor = at + 4;
            } else if rest.starts_with("}}}}") {
                literal.push_str("}}");
                cursor = at + 4;
            } else if rest.starts_with("{{") {
                let (name, end) = parse_placeholder(source, at)?;
                if !literal.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                if !names.iter().any(|known| known == name) {
                    names.push(name.to_owned());
                }
                segments.push(Segment::Placeholder(name.to_owned()));
                cursor = end;
            } else if rest.starts_with("}}") {
                return Err(TemplateError::UnmatchedClose { at });
            } else {
                // A lone brace is ordinary text.
                literal.push_str(&rest[..1]);
                cursor = at + 1;
            }
        }
        literal.push_str(&source[cursor..]);
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        Ok(Self { segments, names })
    }

    /// The distinct placeholder names, in order of first appearance.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Renders the template with exactly one value per placeholder name.
    ///
    /// The checks run in a fixed order so the reported error is deterministic: duplicated names first (in
    /// the order supplied), then missing values (in placeholder order), then unused values (in the order
    /// supplied). A placeholder used several times takes its one value everywhere.
    ///
    /// # Errors
    /// [`TemplateError::DuplicateValue`], [`TemplateError::MissingValue`] or
    /// [`TemplateError::UnusedValue`].
    pub fn render(&self, values: &[(&str, &str)]) -> Result<String, TemplateError> {
        for (index, (name, _)) in values.iter().enumerate() {
            if values[..index].iter().any(|(earlier, _)| earlier == name) {
                return Err(TemplateError::DuplicateValue {
                    name: (*name).to_owned(),
                });
            }
        }
        for name in &self.names {
            if !values.iter().any(|(supplied, _)| supplied == name) {
                return Err(TemplateError::MissingValue { name: name.clone() });
            }
        }
        for (name, _) in values {
            if !self.names.iter().any(|used| used == name) {
                return Err(TemplateError::UnusedValue {
                    name: (*name).to_owned(),
                });
            }
        }

        let mut rendered = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => rendered.push_str(text),
                Segment::Placeholder(name) => {
                    // The checks above guarantee a value; failing loudly keeps this free of `unwrap`.
                    let Some((_, value)) = values.iter().find(|(supplied, _)| supplied == name)
                    else {
                        return Err(TemplateError::MissingValue { name: name.clone() });
                    };
                    rendered.push_str(value);
                }
            }
        }
        Ok(rendered)
    }
}

/// A template bound at start-up: every placeholder is either filled with a value known then or
/// left as a numbered hole, filled per request by [`Pattern::fill`], which cannot fail. This keeps
/// "requests never render templates" true for texts that need a per-request value (the model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// Index into the `holes` given to [`Template::bind`].
    Hole(usize),
}

impl Template {
    /// Fills the placeholders named in `values` now and keeps those named in `holes` for later.
    /// Unlike [`Template::render`], a value or hole the template does not use is not an error:
    /// one set of values serves several templates (the identity line's two halves).
    ///
    /// # Errors
    /// [`TemplateError::DuplicateValue`] when a name is given twice, [`TemplateError::MissingValue`]
    /// for a placeholder that is neither a value nor a hole.
    pub fn bind(&self, values: &[(&str, &str)], holes: &[&str]) -> Result<Pattern, TemplateError> {
        let names = values
            .iter()
            .map(|(name, _)| *name)
            .chain(holes.iter().copied());
        for (index, name) in names.clone().enumerate() {
            if names.clone().take(index).any(|earlier| earlier == name) {
                return Err(TemplateError::DuplicateValue {
                    name: name.to_owned(),
                });
            }
        }
        let mut pieces: Vec<Piece> = Vec::with_capacity(self.segments.len());
        let push_text = |pieces: &mut Vec<Piece>, text: &str| {
            if let Some(Piece::Text(last)) = pieces.last_mut() {
                last.push_str(text);
            } else {
                pieces.push(Piece::Text(text.to_owned()));
            }
        };
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => push_text(&mut pieces, text),
                Segment::Placeholder(name) => {
                    if let Some((_, value)) = values.iter().find(|(known, _)| known == name) {
                        push_text(&mut pieces, value);
                    } else if let Some(hole) = holes.iter().position(|hole| hole == name) {
                        pieces.push(Piece::Hole(hole));
                    } else {
                        return Err(TemplateError::MissingValue { name: name.clone() });
                    }
                }
            }
        }
        Ok(Pattern { pieces })
    }
}

/// A piece of a pattern, in order: literal text, or the hole of that index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternPiece<'a> {
    Text(&'a str),
    Hole(usize),
}

impl Pattern {
    /// The pattern's pieces in order, for a caller that keeps its literal runs in a form of its
    /// own (a body's shared runs).
    pub fn segments(&self) -> impl Iterator<Item = PatternPiece<'_>> {
        self.pieces.iter().map(|piece| match piece {
            Piece::Text(text) => PatternPiece::Text(text),
            Piece::Hole(index) => PatternPiece::Hole(*index),
        })
    }

    /// The text with hole `i` replaced by `holes[i]` (an absent value leaves the hole empty).
    #[must_use]
    pub fn fill(&self, holes: &[&str]) -> String {
        let mut text = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(literal) => text.push_str(literal),
                Piece::Hole(index) => text.push_str(holes.get(*index).copied().unwrap_or_default()),
            }
        }
        text
    }

    /// A pattern whose fill is this one's fill with its trailing whitespace trimmed, whatever
    /// fills the holes: only when the pattern ends in literal text that is not all whitespace,
    /// else `None` (the trim could reach into a hole's value).
    #[must_use]
    pub fn trimmed_end(&self) -> Option<Pattern> {
        self.trimmed_end_with(str::trim_end)
    }

    /// As `trimmed_end`, for another trim of the end (`trim_end_matches('\n')`, say).
    #[must_use]
    pub fn trimmed_end_with(&self, trim: impl Fn(&str) -> &str) -> Option<Pattern> {
        let Some(Piece::Text(last)) = self.pieces.last() else {
            return None;
        };
        let trimmed = trim(last);
        if trimmed.is_empty() {
            return None;
        }
        let mut pieces = self.pieces.clone();
        let end = pieces.len() - 1;
        pieces[end] = Piece::Text(trimmed.to_owned());
        Some(Pattern { pieces })
    }

    /// Whether anything is left to fill.
    pub fn has_holes(&self) -> bool {
        self.pieces
            .iter()
            .any(|piece| matches!(piece, Piece::Hole(_)))
    }

    /// The literal runs, for checks on what the template says outside its placeholders.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Text(text) => Some(text.as_str()),
            Piece::Hole(_) => None,
        })
    }
}

/// Reads the placeholder whose `{{` starts at byte `start` of `source`; returns its trimmed name and the
/// byte offset just past its closing `}}`.
fn parse_placeholder(source: &str, start: usize) -> Result<(&str, usize), TemplateError> {
    let inner = start + 2;
    let mut cursor = inner;
    while let Some(offset) = source[cursor..].find(['{', '}']) {
        let at = cursor + offset;
        let rest = &source[at..];
        if rest.starts_with("{{") {
            return Err(TemplateError::NestedPlaceholder { at: start });
        }
        if rest.starts_with("}}") {
            let name = source[inner..at].trim();
            if name.is_empty() {
                return Err(TemplateError::EmptyPlaceholder { at: start });
            }
            return Ok((name, at + 2));
        }
        cursor = at + 1;
    }
    Err(TemplateError::UnterminatedPlaceholder { at: start })
}

/// Formats mode display names the way the Default collaboration template expects them: none → `none`,
/// one → the name, two → `A and B`, three or more → `A, B, C` (no "and", as upstream does).
#[must_use]
pub fn format_mode_names(names: &[&str]) -> String {
    match names {
        [] => "none".to_owned(),
        [only] => (*only).to_owned(),
        [first, second] => format!("{first} and {second}"),
        _ => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    #[test]
    fn a_pattern_ending_in_text_trims_as_its_fill_would_and_shows_its_pieces() {
        let template = Template::parse("Hi {{who}} \"x\"\n\n").expect("parses");
        let pattern = template.bind(&[], &["who"]).expect("binds");
        let trimmed = pattern.trimmed_end().expect("ends in text");
        assert_eq!(trimmed.fill(&["ann "]), pattern.fill(&["ann "]).trim_end());
        assert_eq!(
            trimmed.segments().collect::<Vec<_>>(),
            [
                PatternPiece::Text("Hi "),
                PatternPiece::Hole(0),
                PatternPiece::Text(" \"x\"")
            ]
        );
        let ends_in_hole = Template::parse("Hi {{who}}\n").expect("parses");
        let hole = ends_in_hole.bind(&[], &["who"]).expect("binds");
        assert!(
            hole.trimmed_end().is_none(),
            "\\n alone after the hole: the trim could reach it"
        );
    }

    /// Codex's Default collaboration-mode template, byte for byte `prompts/collaboration/default.md`.
    const DEFAULT_MD: &str = r"# Collaboration Mode: Default

You are now in Default mode. Any previous instructions for other modes (e.g. Plan mode) are no longer active.

Your active mode changes only when new developer instructions with a different `<collaboration_mode>...</collaboration_mode>` change it; user requests or tool descriptions do not change mode by themselves. Known mode names are {{KNOWN_MODE_NAMES}}.

## request_user_input availability

Use the `request_user_input` tool only when it is listed in the available tools for this turn.

In Default mode, strongly prefer making reasonable assumptions and executing the user's request rather than stopping to ask questions. If you absolutely must ask a question because the answer cannot be discovered from local context and a reasonable assumption would be risky, ask the user directly with a concise plain-text question. Never write a multiple choice question as a textual assistant message.
";

    fn render(source: &str, values: &[(&str, &str)]) -> Result<String, TemplateError> {
        Template::parse(source)?.render(values)
    }

    fn parse_error(source: &str) -> String {
        Template::parse(source)
            .expect_err("the template should not parse")
            .to_string()
    }

    fn render_error(source: &str, values: &[(&str, &str)]) -> String {
        Template::parse(source)
            .expect("the template should parse")
            .render(values)
            .expect_err("rendering should fail")
            .to_string()
    }

    #[test]
    fn renders_a_placeholder() {
        assert_eq!(
            render("Hello {{ name }}!", &[("name", "World")]).expect("renders"),
            "Hello World!"
        );
    }

    #[test]
    fn trims_whitespace_inside_the_delimiters() {
        for source in [
            "{{name}}",
            "{{ name }}",
            "{{  name\t}}",
            "{{\nname\n}}",
            "{{\u{a0}name }}",
        ] {
            let template = Template::parse(source).expect("parses");
            assert_eq!(
                template.placeholders().collect::<Vec<_>>(),
                ["name"],
                "{source:?}"
            );
            assert_eq!(
                template.render(&[("name", "x")]).expect("renders"),
                "x",
                "{source:?}"
            );
        }
    }

    #[test]
    fn renders_several_placeholders_in_any_value_order() {
        let source = "{{ a }}-{{b}} and {{ c }}.";
        assert_eq!(
            render(source, &[("c", "3"), ("a", "1"), ("b", "2")]).expect("renders"),
            "1-2 and 3."
        );
    }

    #[test]
    fn a_repeated_placeholder_takes_its_one_value_everywhere() {
        let template = Template::parse("{{a}}/{{ a }}/{{b}}/{{a}}").expect("parses");
        assert_eq!(template.placeholders().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            template.render(&[("a", "x"), ("b", "y")]).expect("renders"),
            "x/x/y/x"
        );
    }

    #[test]
    fn placeholders_are_listed_in_order_of_first_appearance() {
        let template = Template::parse("{{ zeta }} {{alpha}} {{zeta}} {{ mid }}").expect("parses");
        assert_eq!(
            template.placeholders().collect::<Vec<_>>(),
            ["zeta", "alpha", "mid"]
        );
    }

    #[test]
    fn four_braces_escape_two() {
        assert_eq!(render("{{{{", &[]).expect("renders"), "{{");
        assert_eq!(render("}}}}", &[]).expect("renders"), "}}");
        assert_eq!(render("{{{{name}}}}", &[]).expect("renders"), "{{name}}");
        assert_eq!(
            render("a {{{{ {{ x }} }}}} b", &[("x", "1")]).expect("renders"),
            "a {{ 1 }} b"
        );
        // Five braces: the escape is taken first, then the lone brace is literal.
        assert_eq!(render("}}}}}", &[]).expect("renders"), "}}}");
        assert!(
            Template::parse("{{{{}}}}")
                .expect("parses")
                .placeholders()
                .next()
                .is_none()
        );
    }

    #[test]
    fn single_braces_are_literal_text() {
        assert_eq!(
            render("fn f() { x } {a} }{", &[]).expect("renders"),
            "fn f() { x } {a} }{"
        );
        assert_eq!(
            render("{ {{v}} }", &[("v", "1")]).expect("renders"),
            "{ 1 }"
        );
    }

    #[test]
    fn a_placeholder_closes_at_the_first_double_brace() {
        // `}}}` after the name: `}}` closes, the third brace is literal.
        assert_eq!(render("{{a}}}", &[("a", "x")]).expect("renders"), "x}");
        // `}}}}` after the name is not the escape: `}}` closes, the next `}}` is stray.
        assert_eq!(
            parse_error("{{a}}}}"),
            "template contains an unmatched `}}` at byte 5"
        );
        // A single brace inside the delimiters is part of the name; strict rendering then catches it.
        let template = Template::parse("{{{a}}").expect("parses");
        assert_eq!(template.placeholders().collect::<Vec<_>>(), ["{a"]);
        assert_eq!(
            template
                .render(&[("a", "x")])
                .expect_err("missing")
                .to_string(),
            "template placeholder `{a` is missing a value"
        );
    }

    #[test]
    fn values_are_inserted_verbatim() {
        assert_eq!(
            render("[{{ v }}]", &[("v", "{{ other }} }} {{{{")]).expect("renders"),
            "[{{ other }} }} {{{{]"
        );
    }

    #[test]
    fn empty_placeholder_is_a_parse_error() {
        assert_eq!(
            parse_error("{{}}"),
            "template placeholder at byte 0 is empty"
        );
        assert_eq!(
            parse_error("ab {{  \t }} cd"),
            "template placeholder at byte 3 is empty"
        );
    }

    #[test]
    fn nested_opener_is_a_parse_error() {
        assert_eq!(
            parse_error("x {{ a {{ b }} }}"),
            "template placeholder starting at byte 2 contains a nested `{{`"
        );
        assert_eq!(
            parse_error("{{a}{{b}}"),
            "template placeholder starting at byte 0 contains a nested `{{`"
        );
    }

    #[test]
    fn stray_closer_is_a_parse_error() {
        assert_eq!(
            parse_error("ab }} cd"),
            "template contains an unmatched `}}` at byte 3"
        );
        assert_eq!(
            parse_error("{{a}} and }}"),
            "template contains an unmatched `}}` at byte 10"
        );
        // Byte offsets, not char offsets: `é` is two bytes.
        assert_eq!(
            parse_error("é}}"),
            "template contains an unmatched `}}` at byte 2"
        );
    }

    #[test]
    fn unterminated_placeholder_is_a_parse_error() {
        assert_eq!(
            parse_error("hi {{ name"),
            "template placeholder starting at byte 3 is missing `}}`"
        );
        assert_eq!(
            parse_error("{{a}"),
            "template placeholder starting at byte 0 is missing `}}`"
        );
        assert_eq!(
            parse_error("{{a}} {{"),
            "template placeholder starting at byte 6 is missing `}}`"
        );
    }

    #[test]
    fn missing_value_is_a_render_error() {
        assert_eq!(
            render_error("{{ a }} {{ b }}", &[("a", "1")]),
            "template placeholder `b` is missing a value"
        );
        assert_eq!(
            render_error("{{KNOWN_MODE_NAMES}}", &[]),
            "template placeholder `KNOWN_MODE_NAMES` is missing a value"
        );
    }

    #[test]
    fn unused_value_is_a_render_error() {
        assert_eq!(
            render_error("plain", &[("a", "1")]),
            "template value `a` is not used by this template"
        );
        assert_eq!(
            render_error("{{ a }}", &[("a", "1"), ("b", "2")]),
            "template value `b` is not used by this template"
        );
    }

    #[test]
    fn duplicated_value_is_a_render_error() {
        assert_eq!(
            render_error("{{ a }}", &[("a", "1"), ("a", "1")]),
            "template value `a` was provided more than once"
        );
    }

    #[test]
    fn render_errors_are_reported_duplicate_then_missing_then_unused() {
        assert_eq!(
            render_error("{{ a }}", &[("b", "1"), ("b", "2")]),
            "template value `b` was provided more than once"
        );
        assert_eq!(
            render_error("{{ a }}", &[("b", "1")]),
            "template placeholder `a` is missing a value"
        );
    }

    #[test]
    fn errors_carry_their_offsets_and_names() {
        assert_eq!(
            Template::parse("ab }}"),
            Err(TemplateError::UnmatchedClose { at: 3 })
        );
        assert_eq!(
            render("{{x}}", &[]),
            Err(TemplateError::MissingValue {
                name: "x".to_owned()
            })
        );
    }

    #[test]
    fn bind_fills_values_now_and_holes_later() {
        let template = Template::parse("{{ provider }}/{{model}} ({{model}})").expect("parses");
        let pattern = template
            .bind(&[("provider", "openrouter")], &["model"])
            .expect("binds");
        assert_eq!(pattern.fill(&["qwen3"]), "openrouter/qwen3 (qwen3)");
        assert_eq!(
            pattern.texts().collect::<Vec<_>>(),
            ["openrouter/", " (", ")"]
        );
        // Values and holes a template does not use are fine.
        let literal = Template::parse("deepseek-chat").expect("parses");
        let pattern = literal
            .bind(&[("provider", "x")], &["model"])
            .expect("binds");
        assert_eq!(pattern.fill(&["m"]), "deepseek-chat");
    }

    #[test]
    fn bind_reports_unknown_and_repeated_names() {
        let template = Template::parse("{{ vendor }}/{{model}}").expect("parses");
        assert_eq!(
            template.bind(&[("provider", "x")], &["model"]),
            Err(TemplateError::MissingValue {
                name: "vendor".into()
            })
        );
        assert_eq!(
            template.bind(&[("model", "x")], &["model"]),
            Err(TemplateError::DuplicateValue {
                name: "model".into()
            })
        );
    }

    #[test]
    fn formats_mode_names() {
        assert_eq!(format_mode_names(&[]), "none");
        assert_eq!(format_mode_names(&["Default"]), "Default");
        assert_eq!(format_mode_names(&["Default", "Plan"]), "Default and Plan");
        assert_eq!(format_mode_names(&["A", "B", "C"]), "A, B, C");
        assert_eq!(format_mode_names(&["A", "B", "C", "D"]), "A, B, C, D");
    }

    #[test]
    fn renders_the_default_collaboration_template() {
        // The template is 929 bytes; checking the size proves the copy above is whole.
        assert_eq!(DEFAULT_MD.len(), 929);
        let template = Template::parse(DEFAULT_MD).expect("the built-in template parses");
        assert_eq!(
            template.placeholders().collect::<Vec<_>>(),
            ["KNOWN_MODE_NAMES"]
        );
        let names = format_mode_names(&["Default", "Plan"]);
        let rendered = template
            .render(&[("KNOWN_MODE_NAMES", &names)])
            .expect("the built-in template renders");
        assert!(!rendered.contains("{{KNOWN_MODE_NAMES}}"));
        assert!(rendered.contains(
            "do not change mode by themselves. Known mode names are Default and Plan.\n\n## request_user_input availability"
        ));
        assert!(rendered.contains(
            "Use the `request_user_input` tool only when it is listed in the available tools for this turn."
        ));
        assert!(rendered.contains("ask the user directly with a concise plain-text question"));
        // 929 bytes minus `{{KNOWN_MODE_NAMES}}` (20) plus `Default and Plan` (16).
        assert_eq!(rendered.len(), 925);
        assert!(
            rendered.starts_with("# Collaboration Mode: Default\n\nYou are now in Default mode.")
        );
        assert!(rendered.ends_with("as a textual assistant message.\n"));
    }

    proptest! {
        #[test]
        fn text_without_braces_is_its_own_template(text in "[^{}]*") {
            let template = Template::parse(&text).expect("brace-free text parses");
            prop_assert_eq!(template.placeholders().count(), 0);
            prop_assert_eq!(template.render(&[]).expect("renders"), text);
        }
    }
}
