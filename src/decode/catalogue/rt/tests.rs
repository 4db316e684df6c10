//! Unit tests of the decoding runtime.

use super::*;
use crate::decode::catalogue::JsonObject;

fn dec<T: Decode>(json: &str) -> (Decoded<T>, Ctx) {
    let mut cx = Ctx::new();
    let mut de = serde_json::Deserializer::from_str(json);
    let r = T::decode(&mut de, &mut cx).expect("valid JSON");
    (r, cx)
}

#[test]
fn integers_reject_fractions_and_overflow() {
    assert!(matches!(dec::<i64>("12").0, Decoded::Ok(12)));
    let (r, cx) = dec::<i64>("12.5");
    assert!(matches!(r, Decoded::Bad));
    assert_eq!(cx.errors[0].code, ErrorCode::InvalidType);
    assert!(cx.errors[0].message.contains("fraction"));
    let (r, cx) = dec::<i64>("18446744073709551615");
    assert!(matches!(r, Decoded::Bad));
    assert_eq!(cx.errors[0].code, ErrorCode::OutOfRange);
}

#[test]
fn arrays_report_element_paths() {
    let (r, cx) = dec::<Vec<String>>(r#"["a", 1, null, "d"]"#);
    assert!(matches!(r, Decoded::Bad));
    let got: Vec<_> = cx
        .errors
        .iter()
        .map(|e| (e.path.as_str(), e.code))
        .collect();
    assert_eq!(
        got,
        vec![("1", ErrorCode::InvalidType), ("2", ErrorCode::NullValue)]
    );
}

#[test]
fn objects_keep_raw_text() {
    match dec::<JsonObject>(r#"{"a": [1, {"b": 2}]}"#).0 {
        Decoded::Ok(raw) => assert_eq!(raw.get(), r#"{"a": [1, {"b": 2}]}"#),
        other => panic!("expected object, got {other:?}"),
    }
    let (r, cx) = dec::<JsonObject>("[1]");
    assert!(matches!(r, Decoded::Bad));
    assert!(cx.errors[0].message.contains("found array"));
}

#[test]
fn null_is_reported_to_the_caller() {
    assert!(matches!(dec::<String>("null").0, Decoded::Null));
    assert!(matches!(dec::<Vec<i64>>("null").0, Decoded::Null));
}
