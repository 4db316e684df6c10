//! The leaf parser against `canon.rs`: every encoding it produces parses back to the same
//! fields (property), and each way a leaf can break the grammar is refused, naming the field.

use proptest::prelude::*;

use super::*;

fn sample(v2: bool) -> Canon<'static> {
    Canon {
        payload: v2.then_some((0, 7)),
        catalogue: v2.then_some("0123456789abcdef"),
        ..crate::canon::tests::sample()
    }
}

fn err(data: &[u8]) -> LeafError {
    parse(data).expect_err("refused")
}

#[test]
fn both_versions_parse_back() {
    for v2 in [false, true] {
        let c = sample(v2);
        let enc = c.encode();
        let back = parse(&enc).expect("parses");
        assert_eq!(format!("{back:?}"), format!("{c:?}"));
        assert_eq!(back.hash(), c.hash());
    }
}

#[test]
fn the_raw_field_is_the_whole_raw_message_and_nothing_follows_it() {
    // A malformed message whose tail looks like a length-prefixed field of its own.
    let mut raw = b"not json ".to_vec();
    raw.extend_from_slice(&5u64.to_be_bytes());
    raw.extend_from_slice(b"hello");
    let mut c = sample(true);
    c.raw = &raw;
    c.payload = None;
    let enc = c.encode();
    assert!(enc.ends_with(&[&5u64.to_be_bytes()[..], b"hello"].concat()));
    assert_eq!(parse(&enc).expect("parses").raw, &raw[..]);
    let mut longer = enc.clone();
    longer.push(0);
    assert_eq!(err(&longer).field, "raw");
    assert_eq!(err(&enc[..enc.len() - 1]).field, "raw");
}

/// The leaf with the 8 bytes at `at` replaced by `v`.
fn with_u64(enc: &[u8], at: usize, v: u64) -> Vec<u8> {
    let mut e = enc.to_vec();
    e[at..at + 8].copy_from_slice(&v.to_be_bytes());
    e
}

#[test]
fn nulls_only_where_the_grammar_has_them() {
    let enc = sample(true).encode();
    let tag = TAG_V2.len();
    assert_eq!(err(&with_u64(&enc, tag, u64::MAX)).field, "stream");
    // stream "S" (8+1), seq, published, received (3 × 16): subject's length.
    let subject = tag + 9 + 48;
    assert_eq!(err(&with_u64(&enc, subject, u64::MAX)).field, "subject");
    // An integer field 7 bytes long.
    let e = err(&with_u64(&enc, tag + 9, 7));
    assert_eq!(
        (e.field, e.why),
        ("stream_seq", "an integer field that is not 8 bytes long")
    );
    // A length past the end.
    assert_eq!(err(&with_u64(&enc, subject, 1 << 40)).field, "subject");
    // The status (the sixth text) may not be NULL; the catalogue of a version 2 leaf neither.
    let mut c = sample(true);
    c.catalogue = Some("");
    let enc = c.encode();
    let at = enc.len() - 8 - 7 - 8;
    assert_eq!(err(&with_u64(&enc, at, u64::MAX)).field, "catalogue");
}

#[test]
fn other_faults_name_their_field() {
    assert_eq!(err(b"event-audit row v4\0").field, "version tag");
    assert_eq!(err(b"").field, "version tag");
    // Not UTF-8.
    let mut c = sample(true);
    c.subject = "s\u{e9}";
    let mut enc = c.encode();
    let i = enc
        .windows(2)
        .position(|w| w == "\u{e9}".as_bytes())
        .expect("é");
    enc[i + 1] = 0xff;
    assert_eq!(
        err(&enc),
        LeafError {
            field: "subject",
            why: "not UTF-8"
        }
    );
    // A payload place beyond the raw message, or reversed.
    for place in [(0, 8), (5, 4)] {
        let mut c = sample(true);
        c.payload = Some(place);
        assert_eq!(err(&c.encode()).field, "payload_place");
    }
    // Version 1: the presence byte of the envelope time.
    let mut c = sample(false);
    c.occurred_at_us = None;
    let mut enc = c.encode();
    let at = enc.len() - 8 - 7 - 1;
    assert_eq!(enc[at], 0);
    enc[at] = 2;
    assert_eq!(err(&enc).field, "occurred_at");
    // A version 2 delivery count beyond 32 bits.
    let enc = sample(true).encode();
    let dc = TAG_V2.len() + 9 + 48 + 12 + 8;
    assert_eq!(u64::from_be_bytes(enc[dc..dc + 8].try_into().unwrap()), 1);
    assert_eq!(err(&with_u64(&enc, dc, 1 << 40)).field, "delivery_count");
}

/// The owned values of one row.
#[derive(Debug, Clone)]
struct Row {
    stream: String,
    ints: (i64, i64, i64, i32),
    subject: String,
    texts: [Option<String>; 9],
    occurred: Option<i64>,
    place: Option<(u8, u8)>,
    payload_error: Option<String>,
    catalogue: Option<String>,
    raw: Vec<u8>,
}

fn text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(any::<String>())
}

fn row() -> impl Strategy<Value = Row> {
    (
        any::<String>(),
        any::<(i64, i64, i64, i32)>(),
        any::<String>(),
        [
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
        ],
        proptest::option::of(any::<i64>()),
        proptest::option::of(any::<(u8, u8)>()),
        text(),
        text(),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(
            |(stream, ints, subject, texts, occurred, place, payload_error, catalogue, raw)| Row {
                stream,
                ints,
                subject,
                texts,
                occurred,
                place,
                payload_error,
                catalogue,
                raw,
            },
        )
}

fn canon(r: &Row) -> Canon<'_> {
    let t = |i: usize| r.texts[i].as_deref();
    // A place within the raw message (as the writer only records one).
    let n = r.raw.len() as u64;
    let place = r.place.map(|(a, b)| {
        let (a, b) = (u64::from(a.min(b)), u64::from(a.max(b)));
        (a.min(n), b.min(n))
    });
    Canon {
        stream: &r.stream,
        stream_seq: r.ints.0,
        published_at_us: r.ints.1,
        received_at_us: r.ints.2,
        subject: &r.subject,
        delivery_count: r.ints.3,
        headers: t(0),
        envelope: t(1),
        event_id: t(2),
        event_type: t(3),
        event_version: t(4),
        status: t(5).unwrap_or("decoded"),
        errors: t(6),
        unknown_fields: t(7),
        account_number: t(8),
        occurred_at_us: r.occurred,
        payload: place,
        payload_error: r.payload_error.as_deref(),
        catalogue: r.catalogue.as_deref(),
        raw: &r.raw,
        salt: None,
        commitment: None,
    }
}

proptest! {
    /// A version 3 leaf parses back to its non-personal fields; its opening gives back the
    /// personal ones; any other opening, a prefix or an extension of either is refused.
    #[test]
    fn version_3_parses_back_and_opens(r in row(), salt in any::<[u8; 32]>(), cut in any::<usize>()) {
        let mut c = canon(&r);
        if c.catalogue.is_none() {
            c.catalogue = Some("f");
        }
        c.salt = Some(&salt);
        c.commitment = c.committed();
        let (enc, opening) = (c.encode(), c.opening().expect("a salt"));
        prop_assert!(enc.starts_with(TAG_V3));
        let mut back = parse(&enc).expect("a v3 encoding");
        prop_assert_eq!(back.encode(), enc.clone());
        prop_assert!(back.raw.is_empty() && back.account_number.is_none());
        open(&mut back, &opening).expect("its own opening");
        prop_assert_eq!(format!("{back:?}"), format!("{c:?}"));
        let mut other = opening.clone();
        other[0] ^= 1;
        prop_assert!(open(&mut parse(&enc).expect("v3"), &other).is_err());
        prop_assert!(parse(&enc[..cut % enc.len()]).is_err());
        prop_assert!(open(&mut parse(&enc).expect("v3"), &opening[..cut % opening.len()]).is_err());
    }

    #[test]
    fn every_encoding_parses_back_to_its_fields(r in row()) {
        let c = canon(&r);
        let enc = c.encode();
        let back = parse(&enc).expect("an encoding canon.rs produced");
        // Version 1 does not encode the payload's place or error.
        let mut want = c.clone();
        if want.catalogue.is_none() {
            want.payload = None;
            want.payload_error = None;
        }
        prop_assert_eq!(format!("{back:?}"), format!("{want:?}"));
        prop_assert_eq!(back.encode(), enc);
    }

    #[test]
    fn no_prefix_and_no_extension_of_an_encoding_parses(r in row(), cut in any::<usize>(), extra in proptest::collection::vec(any::<u8>(), 1..9)) {
        let enc = canon(&r).encode();
        let cut = cut % enc.len();
        prop_assert!(parse(&enc[..cut]).is_err());
        let mut longer = enc.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(parse(&longer).is_err());
    }
}
