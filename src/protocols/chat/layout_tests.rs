use proptest::prelude::*;

use super::*;

/// A layout learnt around the string at `at..` in `data` (its first string there).
fn layout_around(data: &str, string: &str) -> Layout {
    let start = data.find(string).expect("in data");
    let mut layout = Layout::default();
    layout.learn(data.as_bytes(), (start, start + string.len()));
    layout
}

#[test]
fn a_chunk_laid_out_alike_is_read_by_its_string() {
    let data = r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}"#;
    let layout = layout_around(data, r#""a""#);
    let with = |string: &str| data.replace(r#""a""#, string);
    assert_eq!(
        layout.string_in(with(r#""b""#).as_bytes()).as_deref(),
        Some("b")
    );
    assert_eq!(
        layout.string_in(with(r#""""#).as_bytes()).as_deref(),
        Some("")
    );
    assert_eq!(
        layout
            .string_in(with(r#""q\"\n\u00e9\ud83d\ude00""#).as_bytes())
            .as_deref(),
        Some("q\"\né😀")
    );
    // Not one whole string between the same bytes: laid out otherwise.
    for other in [
        r#""a","x":"b""#,
        "null",
        "1",
        r#""a"#,
        r#""bad \q escape""#,
        "\"\u{1}\"",
        r#"["a"]"#,
    ] {
        assert_eq!(layout.string_in(with(other).as_bytes()), None, "{other}");
    }
    assert_eq!(
        layout.string_in(data.replace("\"c\"", "\"d\"").as_bytes()),
        None
    );
    assert_eq!(layout.string_in(b"{}"), None);
}

#[test]
fn a_chunk_is_learnt_only_when_plain() {
    let learn = |data: &str| {
        let chunk: ChunkView<'_> = parse_event(data.as_bytes()).expect("parses");
        let mut slot = None;
        LearntChunk::learn_chunk(&mut slot, data.as_bytes(), &chunk);
        slot.map(|l| (l.role, l.finish_reason))
    };
    assert_eq!(
        learn(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}"#
        ),
        Some((Some("assistant".into()), Some("stop".into())))
    );
    assert_eq!(
        learn(r#"{"choices":[{"delta":{"content":"a\n"}}]}"#),
        Some((None, None))
    );
    assert_eq!(
        learn(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"k","function":{"name":"n","arguments":"ls -la"}}]},"finish_reason":null}]}"#
        ),
        Some((None, None))
    );
    for not_plain in [
        r#"{"choices":[{"index":0,"delta":{"content":"a","reasoning_content":"r"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a","tool_calls":[]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\"a\""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"n"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"a"}},{"index":1}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"x","tool_calls":[{"function":{"arguments":"a"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":["a"]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":null}}]}"#,
        r#"{"choices":[{"index":1,"delta":{"content":"a"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"total_tokens":1}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"error":{"message":"m"}}"#,
    ] {
        assert_eq!(learn(not_plain), None, "{not_plain}");
    }
}

/// Every piece `CallPieces` hands over for a stream, and what each chunk holds.
fn pieces_of(chunks: &[String], every: bool) -> Vec<(Vec<CallPiece<'static>>, bool)> {
    pieces_and_reader(chunks, every).0
}

fn pieces_and_reader(
    chunks: &[String],
    every: bool,
) -> (Vec<(Vec<CallPiece<'static>>, bool)>, CallPieces) {
    let mut pieces = CallPieces {
        parses_every_chunk: every,
        ..CallPieces::default()
    };
    let read = chunks
        .iter()
        .map(|chunk| {
            let mut noted = Vec::new();
            let holds = pieces.read(chunk.as_bytes(), |piece| {
                let owned =
                    |t: &Option<Cow<'_, str>>| t.as_deref().map(|t| Cow::Owned(t.to_owned()));
                noted.push(CallPiece {
                    index: piece.index,
                    id: owned(&piece.id),
                    name: owned(&piece.name),
                    arguments: owned(&piece.arguments),
                });
            });
            (noted, holds)
        })
        .collect();
    (read, pieces)
}

#[test]
fn a_call_piece_laid_out_alike_is_read_by_its_arguments() {
    let piece = |arguments: &str| {
        format!(
            r#"{{"id":"c","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":1,"function":{{"arguments":{}}}}}]}},"finish_reason":null}}]}}"#,
            serde_json::to_string(arguments).expect("a string serializes")
        )
    };
    let chunks = [
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#.to_owned(),
        piece("{\"command\""),
        piece(": \"ls"),
        piece(" -la"),
        piece(" src"),
        piece("\"}"),
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned(),
    ];
    let (read, reader) = pieces_and_reader(&chunks, false);
    assert_eq!(read, pieces_of(&chunks, true));
    // ` -la` has no escape: its layout is learnt, and ` src` and `"}` are read by it.
    assert_eq!(reader.read_by_layout, 2);
    let arguments: String = read
        .iter()
        .flat_map(|(pieces, _)| pieces.iter().filter_map(|p| p.arguments.clone()))
        .collect();
    assert_eq!(arguments, "{\"command\": \"ls -la src\"}");
    assert_eq!(
        read.iter().map(|(_, holds)| *holds).collect::<Vec<_>>(),
        [true; 7]
    );
}

fn call_chunk() -> impl Strategy<Value = String> {
    let text =
        || any::<String>().prop_map(|t| serde_json::to_string(&t).expect("a string serializes"));
    prop_oneof![
        4 => text().prop_map(|t| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{t}}}}}]}},"finish_reason":null}}]}}"#)),
        2 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":1,"id":"k","function":{{"name":"n","arguments":{t}}}}}]}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"function":{{"arguments":{t}}}}}]}},"finish_reason":"tool_calls"}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{t}}}}},{{"index":1}}]}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":1,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{t}}}}}]}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":{t}}}}}]}}"#)),
        1 => Just(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned()),
        1 => Just(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a" "b"}}]}}]}"#.to_owned()),
    ]
}

proptest! {
    // Call chunks laid out alike and others among them, in any order: read with layouts learnt,
    // every piece and what each chunk holds are those of parsing every chunk.
    #[test]
    fn reading_call_pieces_by_learnt_layouts_is_parsing_every_chunk(
        chunks in proptest::collection::vec(call_chunk(), 1..12),
    ) {
        prop_assert_eq!(pieces_of(&chunks, false), pieces_of(&chunks, true));
    }
}
