//! A known mix of messages for the catalogue-evolution tests: undeclared fields of several
//! kinds, invalid rows (a missing required field, a type mismatch), an unknown version and an
//! unknown type; written through the sink at fixed bus times, so reports are golden.

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};

use super::records::meta;
use event_audit::test_support::row::record::{record, Naming, Record};

/// The bus time of the first message; each next one is a second later.
pub(crate) fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn ce(name: &str, data: &str) -> String {
    format!(
        r#"{{"specversion":"1.0","type":"{name}","source":"s","id":"{}","data":{data}}}"#,
        rand::random::<u64>()
    )
}

/// The mix: (event, payload).
pub(crate) const MIX: [(&str, &str); 10] = [
    (
        "account.created-v1",
        r#"{"account_number":"A1","account_user_emails":[],"nickname":"x"}"#,
    ),
    (
        "account.created-v1",
        r#"{"account_number":"A2","account_user_emails":[],"nickname":null,"score":3}"#,
    ),
    (
        "account.created-v1",
        r#"{"account_number":"A3","account_user_emails":[],"score":2.5}"#,
    ),
    ("account.created-v1", r#"{"account_user_emails":[1]}"#),
    ("account.created-v1", r#"{"account_user_emails":[]}"#),
    (
        "account.occupied-v1",
        r#"{"account_number":"A6","meta":{"a":1}}"#,
    ),
    (
        "account.occupied-v1",
        r#"{"account_number":"A7","tags":[1,2]}"#,
    ),
    (
        "account.created-v9",
        r#"{"account_number":"A8","account_user_emails":[]}"#,
    ),
    ("x.unknown_thing-v1", r#"{"account_number":"A9"}"#),
    ("x.unknown_thing-v1", r#"{}"#),
];

/// The mix as records of stream `stream` (sequences from 1).
pub(crate) fn records(stream: &str) -> Vec<Record> {
    records_of(stream, &MIX)
}

/// (event, payload) pairs as CloudEvents records of stream `stream` (sequences from 1, a second
/// apart from [`t0`]).
pub(crate) fn records_of(stream: &str, items: &[(&str, &str)]) -> Vec<Record> {
    items
        .iter()
        .enumerate()
        .map(|(i, (name, data))| {
            let at = t0() + Duration::seconds(i as i64);
            record(
                meta(stream, i as u64 + 1, at, 1),
                Bytes::from(ce(name, data)),
                &Naming::default(),
                at,
            )
        })
        .collect()
}
