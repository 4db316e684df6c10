//! The Data-Import REST answers as data, tolerant of what deployed versions really send.
//!
//! - The platform account number: the spec's `service_account_number`, a field named after the
//!   platform (`kraken_account_number`, or any other `<name>_account_number`), or
//!   `account_number`. The first non-empty one wins, in that order; an empty string or null
//!   means "no account yet".
//! - A list is a JSON array of import-process records, or an object wrapping one under
//!   `results`, `data` or `accounts` (the imported list's body is "not shown" in the spec). A
//!   paginated object (`next` holding a URL) is followed by the client.
//! - Anything else is a [`ShapeError`] naming the field; the client adds the endpoint. Values
//!   from the body are never echoed (they may be personal data), only their JSON types.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

/// An answer that matches no known shape: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {problem}")]
pub struct ShapeError {
    pub(crate) field: String,
    pub(crate) problem: String,
}

fn shape(field: impl Into<String>, problem: impl Into<String>) -> ShapeError {
    ShapeError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// One import-process record of the list endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRecord {
    pub(crate) external_account_number: String,
    /// The platform's account number; `None` while the account is only staged.
    pub(crate) account_number: Option<String>,
    pub(crate) account_created_at: Option<DateTime<Utc>>,
}

/// One page of a list answer.
#[derive(Debug)]
pub(crate) struct ListPage {
    pub(crate) records: Vec<ImportRecord>,
    /// The next page's URL, when the answer is paginated.
    pub(crate) next: Option<String>,
}

/// `status` of `account-transfer-status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransferStatus {
    Unknown,
    InProgress,
    Completed,
}

/// The answer of `account-transfer-status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusAnswer {
    pub(crate) status: TransferStatus,
    pub(crate) account_number: Option<String>,
}

/// One record of `meterpoint-statuses-for-account`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct MeterPointStatus {
    pub(crate) mpxn: String,
    pub(crate) status: String,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_json(body: &[u8]) -> Result<Value, ShapeError> {
    serde_json::from_slice(body).map_err(|e| {
        shape(
            "(body)",
            format!("not JSON at line {} column {}", e.line(), e.column()),
        )
    })
}

/// The keys that may hold the platform account number, in the order they are tried.
fn account_number_keys(obj: &Map<String, Value>) -> Vec<&str> {
    let mut keys = vec!["service_account_number", "kraken_account_number"];
    let mut others: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| {
            k.ends_with("_account_number")
                && !matches!(
                    *k,
                    "external_account_number" | "service_account_number" | "kraken_account_number"
                )
        })
        .collect();
    others.sort_unstable();
    keys.extend(others);
    keys.push("account_number");
    keys
}

/// The first non-empty platform account number of a record.
fn account_number(obj: &Map<String, Value>, at: &str) -> Result<Option<String>, ShapeError> {
    for key in account_number_keys(obj) {
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.trim().is_empty() => {}
            Some(Value::String(s)) => return Ok(Some(s.trim().to_owned())),
            Some(Value::Number(n)) => return Ok(Some(n.to_string())),
            Some(other) => {
                return Err(shape(
                    format!("{at}{key}"),
                    format!("is {}, expected a string or null", type_name(other)),
                ))
            }
        }
    }
    Ok(None)
}

/// RFC 3339, or the same without offset (taken as UTC).
pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

fn record(v: &Value, i: usize) -> Result<ImportRecord, ShapeError> {
    let at = format!("[{i}].");
    let obj = v.as_object().ok_or_else(|| {
        shape(
            format!("[{i}]"),
            format!("is {}, expected an import-process record", type_name(v)),
        )
    })?;
    let external = match obj.get("external_account_number") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(_)) => {
            return Err(shape(format!("{at}external_account_number"), "is empty"))
        }
        Some(other) => {
            return Err(shape(
                format!("{at}external_account_number"),
                format!("is {}, expected a string", type_name(other)),
            ))
        }
        None => return Err(shape(format!("{at}external_account_number"), "is missing")),
    };
    let account_created_at = match obj.get("account_created_at") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(parse_time(s).ok_or_else(|| {
            shape(
                format!("{at}account_created_at"),
                "is not an ISO 8601 datetime",
            )
        })?),
        Some(other) => {
            return Err(shape(
                format!("{at}account_created_at"),
                format!("is {}, expected a datetime string", type_name(other)),
            ))
        }
    };
    Ok(ImportRecord {
        external_account_number: external,
        account_number: account_number(obj, &at)?,
        account_created_at,
    })
}

/// Keys under which an object may wrap the list.
const WRAPPERS: [&str; 3] = ["results", "data", "accounts"];

/// A list endpoint's answer.
pub(crate) fn parse_list(body: &[u8]) -> Result<ListPage, ShapeError> {
    let v = parse_json(body)?;
    let (items, next) = match &v {
        Value::Array(items) => (items, None),
        Value::Object(obj) => {
            let Some((key, inner)) = WRAPPERS
                .iter()
                .find_map(|k| obj.get(*k).map(|inner| (*k, inner)))
            else {
                return Err(shape(
                    "results",
                    "is missing: expected an array of import-process records, or an object \
                     with `results`, `data` or `accounts`",
                ));
            };
            let Value::Array(items) = inner else {
                return Err(shape(
                    key,
                    format!("is {}, expected an array", type_name(inner)),
                ));
            };
            let next = match obj.get("next") {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            };
            (items, next)
        }
        other => {
            return Err(shape(
                "(body)",
                format!("is {}, expected an array or an object", type_name(other)),
            ))
        }
    };
    let records = items
        .iter()
        .enumerate()
        .map(|(i, v)| record(v, i))
        .collect::<Result<_, _>>()?;
    Ok(ListPage { records, next })
}

/// `account-transfer-status`'s 200 answer.
pub(crate) fn parse_status(body: &[u8]) -> Result<StatusAnswer, ShapeError> {
    let v = parse_json(body)?;
    let obj = v.as_object().ok_or_else(|| {
        shape(
            "(body)",
            format!("is {}, expected an object", type_name(&v)),
        )
    })?;
    let status = match obj.get("status") {
        Some(Value::String(s)) => match s.trim().to_ascii_uppercase().as_str() {
            "UNKNOWN" => TransferStatus::Unknown,
            "IN_PROGRESS" => TransferStatus::InProgress,
            "COMPLETED" => TransferStatus::Completed,
            _ => {
                return Err(shape(
                    "status",
                    "is not one of UNKNOWN, IN_PROGRESS, COMPLETED",
                ))
            }
        },
        Some(other) => {
            return Err(shape(
                "status",
                format!("is {}, expected a string", type_name(other)),
            ))
        }
        None => return Err(shape("status", "is missing")),
    };
    Ok(StatusAnswer {
        status,
        account_number: account_number(obj, "")?,
    })
}

/// `meterpoint-statuses-for-account`'s 200 answer.
pub(crate) fn parse_meter_points(body: &[u8]) -> Result<Vec<MeterPointStatus>, ShapeError> {
    let v = parse_json(body)?;
    let items = match &v {
        Value::Array(items) => items,
        Value::Object(obj) => match WRAPPERS.iter().find_map(|k| obj.get(*k)) {
            Some(Value::Array(items)) => items,
            _ => return Err(shape("results", "is missing: expected an array")),
        },
        other => {
            return Err(shape(
                "(body)",
                format!("is {}, expected an array", type_name(other)),
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| match item.get(name) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(shape(
                    format!("[{i}].{name}"),
                    format!("is {}, expected a string", type_name(other)),
                )),
                None => Err(shape(format!("[{i}].{name}"), "is missing")),
            };
            Ok(MeterPointStatus {
                mpxn: field("mpxn")?,
                status: field("status")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_shape_and_deployed_variants() {
        let page = parse_list(
            br#"[
            {"external_account_number":"E1","service_account_number":"A-1","account_created_at":"2026-01-05T10:00:00Z"},
            {"external_account_number":"E2","service_account_number":null,"account_created_at":null},
            {"external_account_number":"E3","kraken_account_number":"A-3","account_number":"A-3"},
            {"external_account_number":"E4","service_account_number":"","account_number":"A-4"},
            {"external_account_number":"E5","octopus_account_number":"A-5"},
            {"external_account_number":"E6","account_created_at":"2026-01-05T10:00:00.123"}
        ]"#,
        )
        .expect("parses");
        let nums: Vec<Option<&str>> = page
            .records
            .iter()
            .map(|r| r.account_number.as_deref())
            .collect();
        assert_eq!(
            nums,
            vec![
                Some("A-1"),
                None,
                Some("A-3"),
                Some("A-4"),
                Some("A-5"),
                None
            ]
        );
        assert!(page.records[0].account_created_at.is_some());
        assert!(page.records[5].account_created_at.is_some());
        assert!(page.next.is_none());
    }

    #[test]
    fn wrapped_and_paginated_lists() {
        for key in WRAPPERS {
            let body = format!(
                r#"{{"count":1,"next":"http://x/?page=2","{key}":[{{"external_account_number":"E1"}}]}}"#
            );
            let page = parse_list(body.as_bytes()).expect("parses");
            assert_eq!(page.records.len(), 1);
            assert_eq!(page.next.as_deref(), Some("http://x/?page=2"));
        }
    }

    #[test]
    fn unknown_shapes_name_the_field() {
        let err = |b: &str| parse_list(b.as_bytes()).expect_err(b).field;
        assert_eq!(err(r#"{"items":[]}"#), "results");
        assert_eq!(err(r#"{"results":{}}"#), "results");
        assert_eq!(err("42"), "(body)");
        assert_eq!(err("not json"), "(body)");
        assert_eq!(
            err(r#"[{"account_number":"A-1"}]"#),
            "[0].external_account_number"
        );
        assert_eq!(
            err(r#"[{"external_account_number":"E","service_account_number":[1]}]"#),
            "[0].service_account_number"
        );
        assert_eq!(
            err(r#"[{"external_account_number":"E","account_created_at":"yesterday"}]"#),
            "[0].account_created_at"
        );
        assert_eq!(err("[1]"), "[0]");
    }

    #[test]
    fn errors_do_not_echo_values() {
        let e = parse_list(br#"[{"external_account_number":{"secret":"s3cr3t"}}]"#)
            .expect_err("object");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn single_status() {
        let s = parse_status(br#"{"status":"COMPLETED","service_account_number":"A-1"}"#)
            .expect("parses");
        assert_eq!(s.status, TransferStatus::Completed);
        assert_eq!(s.account_number.as_deref(), Some("A-1"));
        let s =
            parse_status(br#"{"status":"UNKNOWN","service_account_number":""}"#).expect("parses");
        assert_eq!(s.status, TransferStatus::Unknown);
        assert_eq!(s.account_number, None);
        let s = parse_status(br#"{"status":"in_progress","kraken_account_number":""}"#)
            .expect("parses");
        assert_eq!(s.status, TransferStatus::InProgress);
        assert_eq!(
            parse_status(br#"{"state":"COMPLETED"}"#)
                .expect_err("no status")
                .field,
            "status"
        );
        assert_eq!(
            parse_status(br#"{"status":"DONE"}"#)
                .expect_err("bad status")
                .field,
            "status"
        );
    }

    #[test]
    fn meter_points() {
        let m =
            parse_meter_points(br#"[{"mpxn":"123","status":"PRE_REGISTRATION"}]"#).expect("parses");
        assert_eq!(m[0].status, "PRE_REGISTRATION");
        assert_eq!(
            parse_meter_points(br#"[{"mpxn":"123"}]"#)
                .expect_err("no status")
                .field,
            "[0].status"
        );
    }
}
