//! The verdict on one message: envelope + catalogue → exactly one status (`decoded`, `invalid`,
//! `unknown_version`, `unknown_type`, `malformed`) with its reasons. Pure: no I/O.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::decode::catalogue::kind::JsonKind;
use crate::decode::catalogue::rt::dynamic::DynCatalogue;
use crate::decode::catalogue::rt::{Ctx, Decoded, ErrorCode, FieldError};
use crate::decode::catalogue::{self, Event, Lookup};
use crate::decode::envelope::{self, EnvelopeKind};

/// The one status every input gets.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Decoded,
    Invalid,
    UnknownVersion,
    UnknownType,
    Malformed,
}

impl Status {
    pub(crate) const ALL: [Status; 5] = [
        Status::Decoded,
        Status::Invalid,
        Status::UnknownVersion,
        Status::UnknownType,
        Status::Malformed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Decoded => "decoded",
            Status::Invalid => "invalid",
            Status::UnknownVersion => "unknown_version",
            Status::UnknownType => "unknown_type",
            Status::Malformed => "malformed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything known about one message after decoding.
#[derive(Debug)]
pub struct Verdict<'a> {
    pub status: Status,
    pub envelope: Option<EnvelopeKind>,
    /// The full event name, when one was found.
    pub name: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub time: Option<Cow<'a, str>>,
    /// The payload object's exact text, when there is one.
    pub payload: Option<&'a str>,
    pub errors: Vec<FieldError>,
    pub unknown_fields: Vec<String>,
    /// The JSON kind of each unknown field, same order.
    pub unknown_kinds: Vec<JsonKind>,
    /// Which declared top-level fields the payload has (bit = catalogue field order).
    pub declared_seen: u64,
    pub account_number: Option<String>,
    /// The typed event, for `decoded`.
    pub event: Option<Event>,
    /// Index into [`catalogue::EVENTS`] for a known event version.
    pub catalogue_index: Option<u16>,
}

impl Verdict<'_> {
    /// `(type, version)` of the event name; the version is `None` when the name has no suffix.
    pub(crate) fn type_and_version(&self) -> (Option<&str>, Option<&str>) {
        match self.name.as_deref() {
            None => (None, None),
            Some(n) => match catalogue::split_name(n) {
                Some((t, v)) => (Some(t), Some(v)),
                None => (Some(n), None),
            },
        }
    }
}

#[derive(Deserialize)]
struct AccountOnly<'a> {
    #[serde(borrow)]
    account_number: Option<&'a RawValue>,
}

/// The top-level `account_number` of a payload we cannot type, when it is a string.
fn account_number_of(payload: &str) -> Option<String> {
    let a: AccountOnly<'_> = serde_json::from_str(payload).ok()?;
    let raw = a.account_number?.get();
    serde_json::from_str::<String>(raw).ok()
}

/// Decodes one message. `fallback_name` names a payload that carries no envelope.
pub fn decode<'a>(bytes: &'a [u8], fallback_name: Option<&'a str>) -> Verdict<'a> {
    judge(bytes, fallback_name, None)
}

/// Decodes one message with a catalogue read at run time instead of the built-in one (the
/// verdict has no typed event and no built-in catalogue index).
pub fn decode_with<'a>(
    bytes: &'a [u8],
    fallback_name: Option<&'a str>,
    cat: &DynCatalogue,
) -> Verdict<'a> {
    judge(bytes, fallback_name, Some(cat))
}

fn judge<'a>(
    bytes: &'a [u8],
    fallback_name: Option<&'a str>,
    cat: Option<&DynCatalogue>,
) -> Verdict<'a> {
    let env = match envelope::open(bytes, fallback_name) {
        Ok(env) => env,
        Err(m) => {
            return Verdict {
                status: Status::Malformed,
                envelope: m.kind,
                name: m.name,
                id: m.id,
                time: m.time,
                payload: m.payload,
                account_number: m.payload.and_then(account_number_of),
                errors: vec![m.error],
                unknown_fields: Vec::new(),
                unknown_kinds: Vec::new(),
                declared_seen: 0,
                event: None,
                catalogue_index: None,
            }
        }
    };
    let mut v = Verdict {
        status: Status::Decoded,
        envelope: Some(env.kind),
        name: None,
        id: env.id,
        time: env.time,
        payload: Some(env.payload),
        errors: Vec::new(),
        unknown_fields: Vec::new(),
        unknown_kinds: Vec::new(),
        declared_seen: 0,
        account_number: None,
        event: None,
        catalogue_index: None,
    };
    let found = match cat {
        None => catalogue::lookup(&env.name),
        Some(c) => c.lookup(&env.name),
    };
    match found {
        Lookup::Known(idx) => {
            let mut cx = Ctx::new();
            let decoded = match cat {
                None => {
                    v.catalogue_index = Some(idx);
                    catalogue::decode_payload(idx, env.payload, &mut cx).map(|d| d.map(Some))
                }
                Some(c) => c
                    .decode(idx, env.payload, &mut cx)
                    .map(|d| d.map(|()| None)),
            };
            match decoded {
                Ok(Decoded::Ok(event)) => v.event = event,
                Ok(_) => v.status = Status::Invalid,
                // The envelope parser only skims the payload: serde_json still rejects a number
                // out of f64 range (`1e400`) or a lone surrogate escape (`"\ud800"`) when it
                // reads the value. The decode stopped there, so field errors and unknown fields
                // found before that point are partial: drop them, `malformed` has one reason.
                Err(e) => {
                    v.status = Status::Malformed;
                    cx.errors.clear();
                    cx.unknown_fields.clear();
                    cx.unknown_kinds.clear();
                    cx.declared_seen = 0;
                    cx.errors.push(FieldError {
                        path: String::new(),
                        code: ErrorCode::NotJson,
                        message: format!("payload is not JSON ({e})"),
                    });
                }
            }
            if v.status == Status::Invalid && cx.errors.is_empty() {
                // Defensive: an invalid verdict always carries a reason.
                cx.errors.push(FieldError {
                    path: String::new(),
                    code: ErrorCode::InvalidType,
                    message: "payload does not match the catalogue".into(),
                });
            }
            v.errors = cx.errors;
            v.unknown_fields = cx.unknown_fields;
            v.unknown_kinds = cx.unknown_kinds;
            v.declared_seen = cx.declared_seen;
            v.account_number = cx.account_number;
        }
        Lookup::UnknownVersion => {
            v.status = Status::UnknownVersion;
            v.account_number = account_number_of(env.payload);
        }
        Lookup::UnknownType => {
            v.status = Status::UnknownType;
            v.account_number = account_number_of(env.payload);
        }
    }
    v.name = Some(env.name);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ce(name: &str, data: &str) -> String {
        format!(r#"{{"specversion":"1.0","type":"{name}","id":"x","source":"s","data":{data}}}"#)
    }

    #[test]
    fn statuses() {
        let d = |s: &str| decode(s.as_bytes(), None).status;
        assert_eq!(
            d(&ce("account.occupied-v1", r#"{"account_number":"A"}"#)),
            Status::Decoded
        );
        assert_eq!(d(&ce("account.occupied-v1", "{}")), Status::Invalid);
        assert_eq!(
            d(&ce("account.occupied-v9", r#"{"account_number":"A"}"#)),
            Status::UnknownVersion
        );
        assert_eq!(d(&ce("account.occupied", "{}")), Status::UnknownVersion);
        assert_eq!(
            d(&ce("tech.kraken.workflow.created.v1-v1", "{}")),
            Status::UnknownType
        );
        assert_eq!(d("{"), Status::Malformed);
    }

    #[test]
    fn invalid_keeps_account_number_and_unknown_fields() {
        let msg = ce(
            "account.created-v1",
            r#"{"account_number":"A-9","account_user_emails":[1],"new_field":true}"#,
        );
        let v = decode(msg.as_bytes(), None);
        assert_eq!(v.status, Status::Invalid);
        assert_eq!(v.account_number.as_deref(), Some("A-9"));
        assert_eq!(v.unknown_fields, vec!["new_field".to_string()]);
        assert_eq!(v.unknown_kinds, vec![JsonKind::Boolean]);
        // account_number and account_user_emails are there (bits 0 and 1), is_imported is not.
        assert_eq!(v.declared_seen, 0b011);
        assert_eq!(v.errors[0].path, "account_user_emails.0");
        assert_eq!(v.errors[0].code, ErrorCode::InvalidType);
    }

    #[test]
    fn payload_serde_rejects_is_malformed_with_one_reason() {
        for data in [
            r#"{"account_number":5,"key":"\ud800x","extra":1}"#,
            r#"{"account_number":5,"extra":1,"value":1e400}"#,
        ] {
            let msg = ce("account_metadata.created-v1", data);
            let v = decode(msg.as_bytes(), None);
            assert_eq!(v.status, Status::Malformed, "{data}");
            assert_eq!(v.errors.len(), 1, "{:?}", v.errors);
            assert_eq!(v.errors[0].code, ErrorCode::NotJson);
            assert!(v.unknown_fields.is_empty());
        }
    }

    /// (The catalogue read at run time gives the same verdict: `evolution::compat`'s tests.)
    #[test]
    fn a_name_without_payload_is_malformed_no_payload_with_its_name() {
        let v = decode(br#"{"event": "account.created-v1"}"#, None);
        assert_eq!(v.status, Status::Malformed);
        assert_eq!(v.type_and_version(), (Some("account.created"), Some("v1")));
        assert_eq!(v.envelope, Some(EnvelopeKind::Native));
        assert_eq!(v.errors.len(), 1);
        assert_eq!(v.errors[0].code, ErrorCode::NoPayload);
    }

    #[test]
    fn unknown_type_keeps_account_number() {
        let msg = ce("x.y-v1", r#"{"account_number":"A-1"}"#);
        let v = decode(msg.as_bytes(), None);
        assert_eq!(v.status, Status::UnknownType);
        assert_eq!(v.account_number.as_deref(), Some("A-1"));
        assert_eq!(v.type_and_version(), (Some("x.y"), Some("v1")));
    }
}
