//! The bundle JSON reader: strict RFC 8259, bounded nesting, exact numbers, equality as JSON
//! values, and numbers serialised as written.

use super::*;

fn p(t: &str) -> Result<Json, JsonError> {
    parse(t, Keys::Unique)
}

#[test]
fn strict_rfc_8259() {
    for ok in [
        "0",
        "-0",
        "1.5e+3",
        "[]",
        "{}",
        r#"{"a":[1,{"b":null}],"c":"\u00e9\ud83d\ude00"}"#,
        " \t\n\r true ",
    ] {
        assert!(p(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "01",
        "1.",
        ".5",
        "1e",
        "1e+",
        "-",
        "+1",
        "NaN",
        "Infinity",
        "[1,]",
        "{\"a\":1,}",
        "'a'",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\x\"",
        "\"a\u{1}\"",
        "[1] x",
        "\u{feff}1",
        "{\"a\":1,\"a\":2}",
        "1e0000000001234567890",
        "tru",
        "nul",
    ] {
        assert!(p(bad).is_err(), "{bad:?}");
    }
    // Leading zeros of an exponent do not count; the last key wins in a leaf's JSON.
    assert!(p("1e000000000000000000005").is_ok());
    let last = parse(r#"{"a":1,"b":2,"a":3}"#, Keys::LastWins).unwrap();
    assert!(same(&last, &p(r#"{"b":2,"a":3}"#).unwrap()));
}

#[test]
fn depth_is_bounded() {
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(p(&ok).is_ok());
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(p(&deep).is_err());
}

#[test]
fn numbers_compare_by_value_and_values_by_kind() {
    for (a, b) in [
        ("1", "1.0"),
        ("100", "1e2"),
        ("-0", "0.0"),
        ("0.015", "15E-3"),
    ] {
        assert!(num_eq(a, b), "{a} {b}");
    }
    for (a, b) in [
        ("1", "-1"),
        ("1", "10"),
        ("12345678901234567890123", "12345678901234567890124"),
    ] {
        assert!(!num_eq(a, b), "{a} {b}");
    }
    let (a, b) = (
        p(r#"{"x":[1,"a"],"y":true}"#).unwrap(),
        p(r#"{"y":true,"x":[1.0,"a"]}"#).unwrap(),
    );
    assert!(same(&a, &b));
    assert!(!same(&p("1").unwrap(), &p("\"1\"").unwrap()));
    assert!(!same(&p("true").unwrap(), &p("1").unwrap()));
    assert!(!same(&p("[1,2]").unwrap(), &p("[2,1]").unwrap()));
}

#[test]
fn serialises_numbers_as_written() {
    let v = p(r#"{"big":123456789012345678901234567890,"f":1.50,"s":"é\n"}"#).unwrap();
    let text = serde_json::to_string(&v).unwrap();
    assert_eq!(
        text,
        r#"{"big":123456789012345678901234567890,"f":1.50,"s":"é\n"}"#
    );
    assert_eq!(v.to_string(), text);
    assert!(same(&p(&text).unwrap(), &v));
}
