//! The signed-note tests: keys, Go's note format, strict parsing, signing and opening.
use super::*;
use proptest::prelude::*;

fn key(name: &str, b: u8) -> PrivateKey {
    PrivateKey::from_seed(name, &[b; 32]).unwrap()
}

#[test]
fn keys_round_trip() {
    let k = key("event-audit/test", 7);
    let k2 = PrivateKey::parse(&k.encode()).unwrap();
    assert_eq!(k2.public(), k.public());
    let p = PublicKey::parse(&k.public().encode()).unwrap();
    assert_eq!(p, k.public());
    assert!(k.public().encode().starts_with("event-audit/test+"));
    assert!(format!("{k:?}").contains("redacted"));
    // A changed id or key is refused.
    let mut s = k.public().encode();
    s.replace_range(17..18, if &s[17..18] == "0" { "1" } else { "0" });
    assert!(PublicKey::parse(&s).is_err());
    assert!(PublicKey::parse("nope").is_err());
    assert!(PrivateKey::from_seed("a b", &[0; 32]).is_err());
}

#[test]
fn matches_the_go_note_format() {
    // The key id of golang.org/x/mod/sumdb/note's example key "PeterNeumann".
    let vk = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    let p = PublicKey::parse(vk).unwrap();
    assert_eq!(p.encode(), vk);
    let note = "If you think cryptography is the answer to your problem,\n\
                then you don't know what your problem is.\n\n\
                \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
    let n = Note::parse(note).unwrap();
    let blob = &n.sigs[0].blob;
    let sig = Signature::from_slice(&blob[4..]).unwrap();
    assert_eq!(blob[..4], p.id);
    assert!(p.key.verify(n.text.as_bytes(), &sig).is_ok());
}

fn cp(origin: &str, size: u64) -> Checkpoint {
    Checkpoint {
        origin: origin.into(),
        size,
        root: [5; 32],
    }
}

#[test]
fn the_text_ends_at_the_last_blank_line() {
    let k = key("log.example/a", 1);
    // A body with an empty line inside (an extension area the spec allows in notes).
    let text = "log.example/a\n3\nBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=\n";
    let note = k.sign(&cp("log.example/a", 3));
    assert!(note.starts_with(text));
    let n = Note::parse(&note).unwrap();
    assert_eq!(n.text, text);
    // A blank line inside the text: split at the last one, as Go does.
    let odd = format!("a\n\nb\n\n{}", &note[text.len() + 1..]);
    assert_eq!(Note::parse(&odd).unwrap().text, "a\n\nb\n");
}

#[test]
fn a_failing_signature_by_the_key_rejects_the_note() {
    let k = key("log.example/a", 1);
    let note = k.sign(&cp("log.example/a", 3));
    // The same key's line again, with a corrupted signature, after the good one.
    let line = note.lines().last().unwrap().to_owned();
    let mut bad = line.clone().into_bytes();
    let n = bad.len();
    bad[n - 3] = if bad[n - 3] == b'A' { b'B' } else { b'A' };
    let twice = format!("{note}{}\n", String::from_utf8(bad).unwrap());
    assert!(matches!(
        open(&twice, &k.public()),
        Err(NoteError::BadSignature(_))
    ));
    assert!(open(&note, &k.public()).is_ok());
}

#[test]
fn strict_bodies() {
    let k = key("log.example/a", 1);
    let sign_text = |text: &str| {
        let blob = k.blob(&[], text.as_bytes());
        format!("{text}\n{DASH}{} {}\n", k.name, B64.encode(blob))
    };
    let root = B64.encode([5u8; 32]);
    assert!(open(
        &sign_text(&format!("log.example/a\n3\n{root}\n")),
        &k.public()
    )
    .is_ok());
    for bad in [
        format!("log.example/a\n03\n{root}\n"),
        format!("log.example/a\n+3\n{root}\n"),
        format!("log.example/a\n3 \n{root}\n"),
        format!("log.exa\tmple/a\n3\n{root}\n"),
        format!("log.example/a\r\n3\n{root}\n"),
        format!("\n3\n{root}\n"),
        format!("log.example/a\n18446744073709551616\n{root}\n"),
        format!("log.example/a\n3\n{}\n", &root[..root.len() - 1]),
    ] {
        assert!(open(&sign_text(&bad), &k.public()).is_err(), "{bad:?}");
    }
    assert_eq!(parse_decimal("0"), Some(0));
    assert_eq!(parse_decimal("00"), None);
    assert_eq!(parse_decimal("10"), Some(10));
}

#[test]
fn signatures_are_appended_once() {
    let k = key("log.example/a", 1);
    let note = k.sign(&cp("log.example/a", 3));
    let extra = "\u{2014} w.example/1 AAAAAA==\n";
    let once = with_signatures(&note, extra);
    assert_eq!(with_signatures(&once, extra), once);
    assert!(once.ends_with(extra));
    assert!(open(&once, &k.public()).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn sign_and_open(size in 0u64..u64::MAX, root in any::<[u8; 32]>(), flip in 0usize..400) {
        let k = key("event-audit/db", 3);
        let cp = Checkpoint { origin: "event-audit/db".into(), size, root };
        let note = k.sign(&cp);
        prop_assert_eq!(open(&note, &k.public()), Ok(cp.clone()));
        prop_assert_eq!(claimed(&note), Ok(cp.clone()));
        // Another key: no signature by it.
        let other = key("event-audit/db", 4);
        prop_assert!(matches!(open(&note, &other.public()), Err(NoteError::NoSignature(_))));
        // Any changed byte is refused.
        let mut bytes = note.clone().into_bytes();
        let i = flip % bytes.len();
        bytes[i] ^= 0x01;
        if let Ok(s) = String::from_utf8(bytes) {
            prop_assert!(open(&s, &k.public()).is_err());
        }
    }
}
