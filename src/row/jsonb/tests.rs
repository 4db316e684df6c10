//! Golden cases of the jsonb module, read off PostgreSQL 15: output text and refusals.

use super::{jsonb_text, refusal, Refusal, MAX_DEPTH, MAX_LEN};

/// (input, PostgreSQL 15's `::jsonb::text`), read off the server.
const GOLDEN: &[(&str, &str)] = &[
    (r#"-0"#, r#"0"#),
    (r#"1e3"#, r#"1000"#),
    (r#"1.0E7"#, r#"10000000"#),
    (r#"1E2"#, r#"100"#),
    (r#"-0.0"#, r#"0.0"#),
    (r#"1.50"#, r#"1.50"#),
    (r#"1e-3"#, r#"0.001"#),
    (
        r#"123456789012345678901234567890"#,
        r#"123456789012345678901234567890"#,
    ),
    (r#"0.1e1"#, r#"1"#),
    (r#"1E+2"#, r#"100"#),
    (r#"-1E-2"#, r#"-0.01"#),
    (r#"0e5"#, r#"0"#),
    (r#"0.0e5"#, r#"0"#),
    (r#"0e-5"#, r#"0.00000"#),
    (r#"-0e-5"#, r#"0.00000"#),
    (r#"100e-2"#, r#"1.00"#),
    (r#"-0.000001e6"#, r#"-1"#),
    (r#"123e-7"#, r#"0.0000123"#),
    (r#"12.345e1"#, r#"123.45"#),
    (r#"1e0000000000000000000000000000002"#, r#"100"#),
    (r#"0e999999"#, r#"0"#),
    (r#"0e1073741822"#, r#"0"#),
    (r#"-12.5e-1"#, r#"-1.25"#),
    (r#""\u00e9\u20AC""#, "\"é\u{20ac}\""),
    (r#""\u00E9""#, r#""é""#),
    (r#""\/""#, r#""/""#),
    (r#""\\""#, r#""\\""#),
    (r#""\"quoted\"""#, r#""\"quoted\"""#),
    (r#""a\b\f\n\r\tb""#, r#""a\b\f\n\r\tb""#),
    (
        r#""\u0001\u001f\u007f\u0080""#,
        "\"\\u0001\\u001f\u{7f}\u{80}\"",
    ),
    (r#""\ud83d\ude00""#, r#""😀""#),
    (r#""\uD83D\uDE00""#, r#""😀""#),
    (r#""😀 raw""#, r#""😀 raw""#),
    (r#""\uDBFF\uDFFF""#, "\"\u{10ffff}\""),
    (r#""\\u0000""#, r#""\\u0000""#),
    (r#""\u2028""#, "\"\u{2028}\""),
    (
        r#"{"b":1,"a":2,"aa":3,"a":4}"#,
        r#"{"a": 4, "b": 1, "aa": 3}"#,
    ),
    (r#"{"a":{"x":1,"x":2},"a":{"y":3}}"#, r#"{"a": {"y": 3}}"#),
    (
        r#"{"a":{"x":1,"x":2,"x":{"z":[1,1e2]}}}"#,
        r#"{"a": {"x": {"z": [1, 100]}}}"#,
    ),
    (
        r#"{"é":1,"z":1,"ab":2,"b":3,"":0}"#,
        r#"{"": 0, "b": 3, "z": 1, "ab": 2, "é": 1}"#,
    ),
    (r#"[]"#, r#"[]"#),
    (r#"{}"#, r#"{}"#),
    (r#"[{},[],"",{"a":[]}]"#, r#"[{}, [], "", {"a": []}]"#),
    (
        r#" { "a" : [ 1 , 2 ] , "b" : null } "#,
        r#"{"a": [1, 2], "b": null}"#,
    ),
    (r#"[true,false,null]"#, r#"[true, false, null]"#),
    ("\t[\t1\t,\n2\t]", r#"[1, 2]"#),
    (r#""x""#, r#""x""#),
    (r#"null"#, r#"null"#),
    (r#"{"\n":1,"\u0041":2,"A":3}"#, r#"{"\n": 1, "A": 3}"#),
    (
        r#"{"aa":1,"b":2,"ab":3,"a":4,"ba":5}"#,
        r#"{"a": 4, "b": 2, "aa": 1, "ab": 3, "ba": 5}"#,
    ),
];

/// Inputs PostgreSQL 15 refuses, each with the refusal matching its SQLSTATE.
const REFUSED: &[(&str, Refusal)] = &[
    (r#""\u0000""#, Refusal::NulCharacter),
    (r#"{"\u0000":1}"#, Refusal::NulCharacter),
    (r#""\ud800""#, Refusal::LoneSurrogate),
    (r#""\udc00""#, Refusal::LoneSurrogate),
    (r#""\ud800\u0041""#, Refusal::LoneSurrogate),
    (r#""\ud800\ud800""#, Refusal::LoneSurrogate),
    (r#""\udc00\ud800""#, Refusal::LoneSurrogate),
    (r#""\ud800\u0000""#, Refusal::LoneSurrogate),
    (r#""\u0000\ud800""#, Refusal::NulCharacter),
    (r#""\ud800\n""#, Refusal::LoneSurrogate),
    (r#""\ud800x""#, Refusal::LoneSurrogate),
    (r#"1e999999"#, Refusal::NumberOutOfRange),
    (r#"1e-999999"#, Refusal::NumberOutOfRange),
    (r#"0e-999999"#, Refusal::NumberOutOfRange),
    (r#"1e131072"#, Refusal::NumberOutOfRange),
    (r#"1e-16384"#, Refusal::NumberOutOfRange),
    (r#"10e-16384"#, Refusal::NumberOutOfRange),
    (r#"0e-16384"#, Refusal::NumberOutOfRange),
    (r#"1e1073741823"#, Refusal::NumberOutOfRange),
    (r#"0e1073741823"#, Refusal::NumberOutOfRange),
    (r#"1e99999999999999999999"#, Refusal::NumberOutOfRange),
    (r#"[1e999999,"\u0000"]"#, Refusal::NumberOutOfRange),
    (r#"["\u0000",1e999999]"#, Refusal::NulCharacter),
    (r#"[1e999999,"\ud800"]"#, Refusal::NumberOutOfRange),
];

#[test]
fn golden_outputs_match_postgres() {
    for (input, expected) in GOLDEN {
        assert_eq!(
            jsonb_text(input).as_deref(),
            Ok(*expected),
            "input {input:?}"
        );
        assert_eq!(refusal(input), None, "input {input:?}");
    }
}

#[test]
fn golden_refusals_match_postgres() {
    for (input, expected) in REFUSED {
        assert_eq!(jsonb_text(input), Err(*expected), "input {input:?}");
        assert_eq!(refusal(input), Some(*expected), "input {input:?}");
    }
}

#[test]
fn numbers_at_the_edges_of_numeric() {
    let big = jsonb_text("1e131071").unwrap();
    assert_eq!((big.len(), &big[..2]), (131_072, "10"));
    assert!(big[1..].bytes().all(|c| c == b'0'));
    assert_eq!(jsonb_text("9.9e131071").unwrap()[..3], *"990");
    let tiny = jsonb_text("1e-16383").unwrap();
    assert_eq!(
        (tiny.len(), &tiny[..4], &tiny[16_383..]),
        (16_385, "0.00", "01")
    );
    assert_eq!(jsonb_text("-1.5e-16382").unwrap().len(), 16_386);
    assert_eq!(
        jsonb_text("0e-16383").unwrap(),
        format!("0.{}", "0".repeat(16_383))
    );
    let long_fraction = format!("0.{}1", "0".repeat(16_382));
    assert_eq!(
        jsonb_text(&long_fraction).as_deref(),
        Ok(long_fraction.as_str())
    );
    // Long digit strings without an exponent (read off PostgreSQL too).
    let widest = format!("1{}", "0".repeat(131_071));
    assert_eq!(jsonb_text(&widest).as_deref(), Ok(widest.as_str()));
    let wider = format!("[1{}]", "0".repeat(131_072));
    assert_eq!(refusal(&wider), Some(Refusal::NumberOutOfRange));
    let mixed = format!("-1{}.{}", "0".repeat(20_000), "5".repeat(16_383));
    assert_eq!(
        (refusal(&mixed), jsonb_text(&mixed).map(|t| t.len())),
        (None, Ok(36_386))
    );
    let finer = format!("0.{}1", "0".repeat(16_383));
    assert_eq!(refusal(&finer), Some(Refusal::NumberOutOfRange));
    let too_long = format!("1.{}", "0".repeat(16_384));
    assert_eq!(refusal(&too_long), Some(Refusal::NumberOutOfRange));
}

#[test]
fn depth_limit() {
    let nest = |n: usize, open: &str, close: &str| open.repeat(n) + &close.repeat(n);
    for (open, close) in [("[", "]"), ("{\"a\":[", "]}")] {
        let per = if open == "[" { 1 } else { 2 };
        let ok = nest(MAX_DEPTH / per, open, close);
        assert_eq!(refusal(&ok), None);
        assert!(jsonb_text(&ok).is_ok());
        let deep = format!("[{}]", ok);
        assert_eq!(refusal(&deep), Some(Refusal::TooDeep));
        assert_eq!(jsonb_text(&deep), Err(Refusal::TooDeep));
    }
    // The issue's payload: 400,000 levels, refused without exhausting the stack.
    assert_eq!(refusal(&nest(400_000, "[", "]")), Some(Refusal::TooDeep));
    assert_eq!(
        refusal(&nest(400_000, "{\"a\":", "}")),
        Some(Refusal::TooDeep)
    );
    // Faults before the depth is reached are reported first, as PostgreSQL does.
    let nul_first = format!("[\"\\u0000\",{}]", nest(2_000, "[", "]"));
    assert_eq!(refusal(&nul_first), Some(Refusal::NulCharacter));
}

#[test]
fn invalid_json_is_refused() {
    let cases = [
        "",
        " ",
        "[",
        "]",
        "[1,]",
        "{\"a\"}",
        "{\"a\":}",
        "{1:2}",
        "01",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "tru",
        "truex",
        "nul",
        "[1 2]",
        "\"a",
        "\"\\x\"",
        "\"\\u12G4\"",
        "\"\\u12\"",
        "\"a\tb\"",
        "\"a\nb\"",
        "1 2",
        "{\"a\":1,}",
        "NaN",
        "Infinity",
        "1_0",
        "1é",
        "[1]x",
        "\u{feff}1",
        "\"\\ud800\\u12\"",
        "/* */ 1",
    ];
    for input in cases {
        assert_eq!(jsonb_text(input), Err(Refusal::InvalidJson), "{input:?}");
        // `refusal` expects valid JSON: it sees some of these, and must not panic on any.
        let _ = refusal(input);
    }
    for input in [
        "[",
        "]",
        "\"a",
        "\"\\x\"",
        "\"a\tb\"",
        "01",
        "-",
        "1e",
        "\"\\u12\"",
    ] {
        assert_eq!(refusal(input), Some(Refusal::InvalidJson), "{input:?}");
    }
    // As in PostgreSQL, a lexical fault in the token after a number wins over its range,
    // but a syntax fault does not.
    assert_eq!(jsonb_text("[1e999999 x]"), Err(Refusal::InvalidJson));
    assert_eq!(
        jsonb_text("[1e999999 \"\\u0000\"]"),
        Err(Refusal::NulCharacter)
    );
    assert_eq!(jsonb_text("[1e999999 2]"), Err(Refusal::NumberOutOfRange));
}

#[test]
fn codes_and_messages_are_stable_and_quote_nothing() {
    let all = [
        (Refusal::NulCharacter, "nul_character", "22P05"),
        (Refusal::LoneSurrogate, "lone_surrogate", "22P02"),
        (Refusal::NumberOutOfRange, "number_out_of_range", "22003"),
        (Refusal::TooDeep, "too_deep", "54001"),
        (Refusal::TooLarge, "too_large", "54000"),
        (Refusal::InvalidJson, "invalid_json", "22P02"),
    ];
    for (refusal, code, sqlstate) in all {
        assert_eq!((refusal.code(), refusal.sqlstate()), (code, sqlstate));
        let text = refusal.to_string();
        assert!(text.starts_with("payload has ") && text.ends_with(&format!("{sqlstate})")));
        assert!(!text.contains('"'), "{text}");
    }
    assert!(Refusal::TooDeep
        .to_string()
        .contains(&MAX_DEPTH.to_string()));
}

#[test]
fn size_limit() {
    let padded = |len: usize| format!("[{}]", " ".repeat(len - 2));
    assert_eq!(refusal(&padded(MAX_LEN)), None);
    assert_eq!(jsonb_text(&padded(MAX_LEN)).as_deref(), Ok("[]"));
    assert_eq!(refusal(&padded(MAX_LEN + 1)), Some(Refusal::TooLarge));
    assert_eq!(jsonb_text(&padded(MAX_LEN + 1)), Err(Refusal::TooLarge));
}

#[test]
fn long_strings() {
    let x = "x".repeat(1 << 20);
    let input = format!("{{\"k\":\"{x}\\n\\u00e9\\/\"}}");
    assert_eq!(refusal(&input), None);
    assert_eq!(jsonb_text(&input), Ok(format!("{{\"k\": \"{x}\\né/\"}}")));
}
