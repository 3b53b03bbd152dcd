use super::*;

fn seal() -> ReasoningSeal {
    ReasoningSeal::from_secret("test secret")
}

#[test]
fn a_seal_opens_to_its_text() {
    let blob = seal().seal("I should run ls — then read.");
    assert!(blob.starts_with("hpr2."));
    assert_eq!(
        seal().open(&blob).as_deref(),
        Some("I should run ls — then read.")
    );
    assert_eq!(seal().open(&seal().seal("")).as_deref(), Some(""));
}

#[test]
fn forged_corrupt_foreign_or_oversized_blobs_open_to_nothing() {
    let blob = seal().seal("secret plan");
    // Another key.
    assert_eq!(ReasoningSeal::from_secret("other").open(&blob), None);
    // One character changed anywhere after the prefix.
    for at in [5, blob.len() / 2, blob.len() - 1] {
        let mut bytes = blob.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).expect("ascii");
        assert_eq!(seal().open(&changed), None, "changed at {at}");
    }
    // Cut, unversioned, another vendor's, not base64, too short, too long.
    assert_eq!(seal().open(&blob[..blob.len() - 4]), None);
    assert_eq!(seal().open(blob.trim_start_matches("hpr2.")), None);
    assert_eq!(seal().open(&blob.replacen("hpr2.", "hpr1.", 1)), None);
    assert_eq!(seal().open("harness-proxy"), None);
    assert_eq!(seal().open("EqQBCkgIARABGAIiQL2y"), None);
    assert_eq!(seal().open("hpr1.!!!"), None);
    assert_eq!(seal().open("hpr1.AAAA"), None);
    assert_eq!(seal().open("hpr2.AAAA"), None);
    for prefix in ["hpr1.", "hpr2."] {
        let huge = format!("{prefix}{}", "A".repeat(200 * 1024));
        assert_eq!(seal().open(&huge), None);
    }
}

/// A seal as the previous version made it: the tag, then the text in clear.
fn seal_v1(seal: &ReasoningSeal, text: &str) -> String {
    let mut mac = seal.mac(CONTEXT_V1);
    mac.update(text.as_bytes());
    let mut payload = mac.finalize().into_bytes().to_vec();
    payload.extend_from_slice(text.as_bytes());
    format!("hpr1.{}", URL_SAFE_NO_PAD.encode(payload))
}

#[test]
fn the_text_cannot_be_read_out_of_a_seal_and_a_v1_seal_still_opens() {
    let text = "I should run ls — then read the config.";
    let blob = seal().seal(text);
    let payload = URL_SAFE_NO_PAD
        .decode(blob.trim_start_matches("hpr2."))
        .expect("base64url");
    assert!(
        !payload
            .windows(8)
            .any(|w| text.as_bytes().windows(8).any(|t| t == w)),
        "no 8 bytes of the text in the clear"
    );
    // The same text, the same seal (the client's echoed history stays byte-identical); another
    // text, another nonce.
    assert_eq!(seal().seal(text), blob);
    assert_ne!(seal().seal("other")[5..37], blob[5..37]);
    // What the previous version sealed opens, for this version; forged, it does not.
    let old = seal_v1(&seal(), text);
    assert_eq!(seal().open(&old).as_deref(), Some(text));
    assert_eq!(ReasoningSeal::from_secret("other").open(&old), None);
    assert_eq!(seal().open(&old.replacen("hpr1.", "hpr2.", 1)), None);
}

#[test]
fn long_reasoning_is_sealed_cut_at_a_char_boundary() {
    let text = "é".repeat(MAX_SEALED_TEXT);
    let opened = seal().open(&seal().seal(&text)).expect("opens");
    assert!(opened.len() <= MAX_SEALED_TEXT && opened.len() >= MAX_SEALED_TEXT - 1);
    assert!(text.starts_with(&opened));
}

#[test]
fn recovery_fills_only_empty_texts_from_valid_seals() {
    use crate::conversation::{Item, Reasoning};
    let item = |text: &str, sealed: Option<String>| {
        Item::Reasoning(Reasoning {
            text: text.into(),
            opaque: None,
            sealed,
            signature: None,
            redacted: Vec::new(),
        })
    };
    let mut items = vec![
        item("", Some(seal().seal("from the seal"))),
        item("shown", Some(seal().seal("sealed"))),
        item("", Some("sig==".into())),
        item("", None),
    ];
    recover(&mut items, &seal());
    assert_eq!(
        items,
        vec![
            item("from the seal", Some(seal().seal("from the seal"))),
            item("shown", Some(seal().seal("sealed"))),
            item("", Some("sig==".into())),
            item("", None),
        ]
    );
}

#[test]
fn a_signed_seal_carries_the_server_s_signature_and_opens_only_whole() {
    let blob = seal().seal_signed("thought", Some("EqQBsig=="));
    assert!(blob.starts_with("hpr3."), "{blob}");
    let opened = seal().open_signed(&blob).expect("opens");
    assert_eq!(opened.text, "thought");
    assert_eq!(opened.signature.as_deref(), Some("EqQBsig=="));
    assert_eq!(seal().open(&blob).as_deref(), Some("thought"));
    assert_eq!(
        seal().seal_signed("thought", Some("EqQBsig==")),
        blob,
        "stable"
    );
    // Without a signature (or one too long to carry) the seal is the one `seal` makes.
    assert_eq!(seal().seal_signed("thought", None), seal().seal("thought"));
    let long = "s".repeat(MAX_SEALED_SIGNATURE + 1);
    assert_eq!(seal().seal_signed("t", Some(&long)), seal().seal("t"));
    let opened = seal().open_signed(&seal().seal("t")).expect("opens");
    assert_eq!(opened.signature, None);
    // Another key, a changed byte, a cut or an unversioned blob: nothing.
    assert_eq!(ReasoningSeal::from_secret("other").open_signed(&blob), None);
    let mut bytes = blob.clone().into_bytes();
    let at = blob.len() / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    assert_eq!(
        seal().open_signed(&String::from_utf8(bytes).expect("ascii")),
        None
    );
    assert_eq!(seal().open_signed(&blob[..blob.len() - 4]), None);
    assert_eq!(
        seal().open_signed(&blob.replacen("hpr3.", "hpr2.", 1)),
        None
    );
    let huge = format!("hpr3.{}", "A".repeat(200 * 1024));
    assert_eq!(seal().open_signed(&huge), None);
    // Recovery puts the signature beside the text.
    let reasoning = recovered(blob);
    assert_eq!(reasoning.text, "thought");
    assert_eq!(reasoning.signature.as_deref(), Some("EqQBsig=="));
}

/// Issue 34: redacted thinking goes in an `hpr4.` seal with the signature and the text, in
/// order, and comes back whole; without any, the seal is the one made before; older seals open.
#[test]
fn a_seal_with_redacted_thinking_carries_it_in_order_and_older_seals_still_open() {
    let redacted = vec!["EnCrYpTeD-1".to_owned(), "EnCrYpTeD-2".to_owned()];
    let blob = seal().seal_with_server("thought", Some("EqQBsig=="), &redacted);
    assert!(blob.starts_with("hpr4."), "{blob}");
    assert!(!blob.contains("EnCrYpTeD"), "not in the clear");
    let opened = seal().open_signed(&blob).expect("opens");
    assert_eq!(
        opened,
        Opened {
            text: "thought".into(),
            signature: Some("EqQBsig==".into()),
            redacted: redacted.clone(),
        }
    );
    assert_eq!(seal().open(&blob).as_deref(), Some("thought"));
    assert_eq!(
        seal().seal_with_server("thought", Some("EqQBsig=="), &redacted),
        blob,
        "stable"
    );
    // Redacted thinking alone (no text shown, no signature).
    let alone = seal().seal_with_server("", None, &redacted[..1]);
    let opened = seal().open_signed(&alone).expect("opens");
    assert_eq!((opened.text.as_str(), opened.signature), ("", None));
    assert_eq!(opened.redacted, redacted[..1]);
    // None, or too much to carry: the seal made before.
    assert_eq!(
        seal().seal_with_server("t", Some("sig"), &[]),
        seal().seal_signed("t", Some("sig"))
    );
    let huge = vec!["r".repeat(MAX_SEALED_REDACTED)];
    assert_eq!(seal().seal_with_server("t", None, &huge), seal().seal("t"));
    // Another key, a changed byte, a cut, a version swapped: nothing.
    assert_eq!(ReasoningSeal::from_secret("other").open_signed(&blob), None);
    let mut bytes = blob.clone().into_bytes();
    let at = blob.len() / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(bytes).expect("ascii");
    assert_eq!(seal().open_signed(&changed), None);
    assert_eq!(seal().open_signed(&blob[..blob.len() - 4]), None);
    assert_eq!(
        seal().open_signed(&blob.replacen("hpr4.", "hpr3.", 1)),
        None
    );
    let signed = seal().seal_signed("old", Some("sig"));
    assert_eq!(
        seal().open_signed(&signed.replacen("hpr3.", "hpr4.", 1)),
        None
    );
    let opened = seal().open_signed(&signed).expect("an hpr3. seal opens");
    assert_eq!(
        (opened.signature.as_deref(), opened.redacted.len()),
        (Some("sig"), 0)
    );
    // Recovery puts it beside the text.
    let reasoning = recovered(blob);
    assert_eq!(reasoning.redacted, redacted);
    assert_eq!(reasoning.signature.as_deref(), Some("EqQBsig=="));
}

#[test]
fn the_key_never_shows() {
    assert_eq!(format!("{:?}", seal()), "ReasoningSeal(<key>)");
}

/// What recovery makes of a reasoning item that carries only `blob`.
fn recovered(blob: String) -> crate::conversation::Reasoning {
    use crate::conversation::{Item, Reasoning};
    let mut items = vec![Item::Reasoning(Reasoning {
        sealed: Some(blob),
        ..Reasoning::default()
    })];
    recover(&mut items, &seal());
    match items.remove(0) {
        Item::Reasoning(reasoning) => reasoning,
        other => panic!("a reasoning item, not {other:?}"),
    }
}
