//! Envelopes: finds the event name, id, time and payload of one message, detected per message
//! among CloudEvents 1.0 (structured JSON), the AWS EventBridge envelope, the native envelope,
//! and a bare payload whose name comes from outside (header or subject). Pure: no I/O.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::decode::catalogue::rt::{ErrorCode, FieldError};

/// Which envelope a message used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeKind {
    /// CloudEvents 1.0 structured JSON: `specversion`, `type`, `id`, `time`, `data`.
    #[serde(rename = "cloudevents")]
    CloudEvents,
    /// AWS EventBridge: `detail-type`, `id`, `time`, `detail`.
    #[serde(rename = "eventbridge")]
    EventBridge,
    /// event-audit's native envelope: `event`, `id`, `time`, `payload`.
    Native,
    /// No envelope: the whole message is the payload; the name came from a header or subject.
    Bare,
}

impl EnvelopeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvelopeKind::CloudEvents => "cloudevents",
            EnvelopeKind::EventBridge => "eventbridge",
            EnvelopeKind::Native => "native",
            EnvelopeKind::Bare => "bare",
        }
    }
}

/// The top-level keys of every envelope we know, as raw JSON (nothing is parsed twice).
#[derive(Deserialize)]
struct Keys<'a> {
    #[serde(borrow)]
    specversion: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    ce_type: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow, rename = "detail-type")]
    detail_type: Option<&'a RawValue>,
    #[serde(borrow)]
    detail: Option<&'a RawValue>,
    #[serde(borrow)]
    event: Option<&'a RawValue>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    time: Option<&'a RawValue>,
}

/// What the envelope says about one message.
#[derive(Debug)]
pub struct Envelope<'a> {
    pub kind: EnvelopeKind,
    pub name: Cow<'a, str>,
    pub id: Option<Cow<'a, str>>,
    pub time: Option<Cow<'a, str>>,
    /// The payload object's exact text.
    pub payload: &'a str,
}

/// Why a message has no usable envelope: the `malformed` status. Partial facts are kept.
#[derive(Debug)]
pub struct Malformed<'a> {
    pub kind: Option<EnvelopeKind>,
    pub name: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub time: Option<Cow<'a, str>>,
    /// The message itself when it is a JSON object without a recognised envelope.
    pub payload: Option<&'a str>,
    pub error: FieldError,
}

fn fail<'a>(kind: Option<EnvelopeKind>, path: &str, code: ErrorCode, msg: String) -> Malformed<'a> {
    Malformed {
        kind,
        name: None,
        id: None,
        time: None,
        payload: None,
        error: FieldError {
            path: path.to_owned(),
            code,
            message: msg,
        },
    }
}

/// A JSON string's value, borrowed when it has no escapes; `None` when not a string.
fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    let inner = &text[1..text.len() - 1];
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

fn kind_of(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// Reads the envelope of one message. `fallback_name` (from an `Event-Type` header or the
/// subject) names a bare payload; an envelope's own name always wins.
#[allow(clippy::result_large_err)] // built once per bad message; boxing would cost every caller
pub fn open<'a>(
    bytes: &'a [u8],
    fallback_name: Option<&'a str>,
) -> Result<Envelope<'a>, Malformed<'a>> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        fail(
            None,
            "",
            ErrorCode::NotJson,
            format!("message is not UTF-8 text ({e})"),
        )
    })?;
    let keys: Keys<'a> = serde_json::from_str(text).map_err(|e| classify(text, e))?;
    let named_outside = fallback_name.is_some_and(|n| !n.is_empty());
    let Some(shape) = Shape::of(&keys, named_outside) else {
        return bare(text, fallback_name);
    };
    let found = Found {
        kind: shape.kind,
        id: keys.id.and_then(raw_str),
        time: keys.time.and_then(raw_str),
    };
    if shape.kind == EnvelopeKind::CloudEvents {
        let version = keys.specversion.and_then(raw_str);
        if version.as_deref() != Some("1.0") {
            return Err(found.fail(
                "specversion",
                ErrorCode::InvalidEnvelope,
                "specversion: expected \"1.0\" (CloudEvents 1.0)".into(),
                None,
            ));
        }
    }
    let name = shape.name(&found)?;
    shape.payload(found, name)
}

/// Where an envelope keeps the event's name and its payload.
struct Shape<'a> {
    kind: EnvelopeKind,
    name_key: &'static str,
    name: Option<&'a RawValue>,
    payload_key: &'static str,
    payload: Option<&'a RawValue>,
}

/// What is known of a message once its envelope is recognised, kept when it turns out broken.
struct Found<'a> {
    kind: EnvelopeKind,
    id: Option<Cow<'a, str>>,
    time: Option<Cow<'a, str>>,
}

impl<'a> Found<'a> {
    fn fail(
        &self,
        path: &str,
        code: ErrorCode,
        msg: String,
        name: Option<Cow<'a, str>>,
    ) -> Malformed<'a> {
        let mut m = fail(Some(self.kind), path, code, msg);
        m.id = self.id.clone();
        m.time = self.time.clone();
        m.name = name;
        m
    }
}

impl<'a> Shape<'a> {
    /// The envelope the keys show: EventBridge, CloudEvents or native; `None` for none. With
    /// no name from outside (header or subject), `event` or `payload` alone is a native
    /// envelope missing its other half: `{"event": "account.created-v1"}` names its event and
    /// lacks the payload (`no_payload`), it is not a nameless bare payload. With a name from
    /// outside, the message is a bare payload unless it has both.
    fn of(keys: &Keys<'a>, named_outside: bool) -> Option<Shape<'a>> {
        let (kind, name_key, name, payload_key, payload) = if keys.detail_type.is_some() {
            (
                EnvelopeKind::EventBridge,
                "detail-type",
                keys.detail_type,
                "detail",
                keys.detail,
            )
        } else if keys.specversion.is_some() {
            (
                EnvelopeKind::CloudEvents,
                "type",
                keys.ce_type,
                "data",
                keys.data,
            )
        } else if (keys.event.is_some() && keys.payload.is_some())
            || (!named_outside && (keys.event.is_some() || keys.payload.is_some()))
        {
            (
                EnvelopeKind::Native,
                "event",
                keys.event,
                "payload",
                keys.payload,
            )
        } else {
            return None;
        };
        Some(Shape {
            kind,
            name_key,
            name,
            payload_key,
            payload,
        })
    }

    /// The event's name: a non-empty string.
    #[allow(clippy::result_large_err)]
    fn name(&self, found: &Found<'a>) -> Result<Cow<'a, str>, Malformed<'a>> {
        let key = self.name_key;
        match self.name.map(|r| (r, raw_str(r))) {
            Some((_, Some(n))) if !n.is_empty() => Ok(n),
            Some((r, _)) => {
                let kind = kind_of(r);
                Err(found.fail(
                    key,
                    ErrorCode::NoEventName,
                    format!("{key}: expected a non-empty string event name, found {kind}"),
                    None,
                ))
            }
            None => Err(found.fail(
                key,
                ErrorCode::NoEventName,
                format!("{key}: missing event name"),
                None,
            )),
        }
    }

    /// The envelope, once its payload is an object.
    #[allow(clippy::result_large_err)]
    fn payload(&self, found: Found<'a>, name: Cow<'a, str>) -> Result<Envelope<'a>, Malformed<'a>> {
        let key = self.payload_key;
        match self.payload {
            Some(p) if p.get().starts_with('{') => Ok(Envelope {
                kind: found.kind,
                name,
                id: found.id,
                time: found.time,
                payload: p.get(),
            }),
            Some(p) => {
                let kind = kind_of(p);
                Err(found.fail(
                    key,
                    ErrorCode::NoPayload,
                    format!("{key}: expected the payload object, found {kind}"),
                    Some(name),
                ))
            }
            None => Err(found.fail(
                key,
                ErrorCode::NoPayload,
                format!(
                    "{key}: missing payload object (the event name is there, its payload is not)"
                ),
                Some(name),
            )),
        }
    }
}

/// No envelope: the message itself is the payload, named from outside.
#[allow(clippy::result_large_err)]
fn bare<'a>(text: &'a str, fallback_name: Option<&'a str>) -> Result<Envelope<'a>, Malformed<'a>> {
    let Some(name) = fallback_name.filter(|n| !n.is_empty()) else {
        let mut m = fail(
            None,
            "",
            ErrorCode::NoEventName,
            "no event name: no CloudEvents (`specversion`, `type`), EventBridge (`detail-type`) \
             or native (`event`, `payload`) envelope, and no Event-Type header or subject name"
                .into(),
        );
        m.payload = Some(text.trim());
        return Err(m);
    };
    Ok(Envelope {
        kind: EnvelopeKind::Bare,
        name: Cow::Borrowed(name),
        id: None,
        time: None,
        payload: text.trim(),
    })
}

/// Tells "not JSON" from "not an object" from "a broken envelope" after a failed parse.
fn classify(text: &str, err: serde_json::Error) -> Malformed<'_> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return fail(None, "", ErrorCode::NotJson, "empty message".into());
    }
    if err.is_syntax() || err.is_eof() {
        return fail(
            None,
            "",
            ErrorCode::NotJson,
            super::syntax::not_json(text, &err),
        );
    }
    if !trimmed.starts_with('{') {
        let found = serde_json::from_str::<&RawValue>(text).map_or("value", kind_of);
        return fail(
            None,
            "",
            ErrorCode::NotAnObject,
            format!("message is a JSON {found}, not an object"),
        );
    }
    // A JSON object whose envelope keys are broken (e.g. the same key twice).
    fail(
        None,
        "",
        ErrorCode::InvalidEnvelope,
        format!("envelope: {}", strip_position(&err)),
    )
}

/// serde_json's message without values from the input (they may be personal data).
fn strip_position(err: &serde_json::Error) -> String {
    let msg = err.to_string();
    let core = msg.split(" at line ").next().unwrap_or(&msg);
    let core = core.split(": `").next().unwrap_or(core);
    format!("{core} (line {}, column {})", err.line(), err.column())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(json: &str) -> Envelope<'_> {
        open(json.as_bytes(), None).expect("envelope")
    }

    fn bad(json: &str) -> Malformed<'_> {
        open(json.as_bytes(), None).expect_err("malformed")
    }

    #[test]
    fn golden_cloudevents() {
        let e = ok(
            r#"{"specversion":"1.0","type":"account.created-v1","source":"/kraken","id":"ce-1","time":"2026-01-02T03:04:05Z","datacontenttype":"application/json","data":{"account_number":"A-1"}}"#,
        );
        assert_eq!(e.kind, EnvelopeKind::CloudEvents);
        assert_eq!(e.name, "account.created-v1");
        assert_eq!(e.id.as_deref(), Some("ce-1"));
        assert_eq!(e.time.as_deref(), Some("2026-01-02T03:04:05Z"));
        assert_eq!(e.payload, r#"{"account_number":"A-1"}"#);
    }

    #[test]
    fn golden_eventbridge() {
        let e = ok(
            r#"{"version":"0","id":"eb-1","detail-type":"account.created-v1","source":"kraken","account":"1","time":"2026-01-02T03:04:05Z","region":"eu-west-1","resources":[],"detail":{"account_number":"A-1"}}"#,
        );
        assert_eq!(e.kind, EnvelopeKind::EventBridge);
        assert_eq!(e.name, "account.created-v1");
        assert_eq!(e.id.as_deref(), Some("eb-1"));
        assert_eq!(e.payload, r#"{"account_number":"A-1"}"#);
    }

    #[test]
    fn golden_native_and_bare() {
        let e = ok(
            r#"{"event":"account.occupied-v1","id":"n-1","time":"t","payload":{"account_number":"A"}}"#,
        );
        assert_eq!(e.kind, EnvelopeKind::Native);
        assert_eq!(e.name, "account.occupied-v1");
        let b = open(br#" {"account_number":"A"} "#, Some("account.occupied-v1")).expect("bare");
        assert_eq!(b.kind, EnvelopeKind::Bare);
        assert_eq!(b.payload, r#"{"account_number":"A"}"#);
        assert_eq!(
            bad(r#"{"account_number":"A"}"#).error.code,
            ErrorCode::NoEventName
        );
    }

    #[test]
    fn a_native_name_without_its_payload_is_no_payload_with_the_name_kept() {
        let m = bad(r#"{"event": "account.created-v1"}"#);
        assert_eq!(
            (m.error.code, m.error.path.as_str()),
            (ErrorCode::NoPayload, "payload")
        );
        assert_eq!(m.kind, Some(EnvelopeKind::Native));
        assert_eq!(m.name.as_deref(), Some("account.created-v1"));
        assert!(
            m.error.message.contains("its payload is not"),
            "{}",
            m.error.message
        );
        let m = bad(r#"{"payload": {"account_number": "A"}}"#);
        assert_eq!(
            (m.error.code, m.error.path.as_str()),
            (ErrorCode::NoEventName, "event")
        );
        // Named from outside (header or subject), a message with only one of the two is a
        // bare payload of that event, as before.
        let b = open(br#"{"event":"x"}"#, Some("account.occupied-v1")).expect("bare");
        assert_eq!(
            (b.kind, b.name.as_ref()),
            (EnvelopeKind::Bare, "account.occupied-v1")
        );
    }

    #[test]
    fn not_json_says_so_plainly_without_quoting_the_input() {
        let m = bad("not json at all");
        assert_eq!(m.error.code, ErrorCode::NotJson);
        assert!(m
            .error
            .message
            .starts_with("not JSON: an unquoted word at line 1, column 1"));
        assert!(!m.error.message.contains("ident"), "{}", m.error.message);
    }

    #[test]
    fn golden_malformed() {
        assert_eq!(bad("not json").error.code, ErrorCode::NotJson);
        assert_eq!(bad("").error.code, ErrorCode::NotJson);
        assert_eq!(bad("[1,2]").error.code, ErrorCode::NotAnObject);
        assert_eq!(bad("\"x\"").error.code, ErrorCode::NotAnObject);
        let m = bad(r#"{"specversion":"1.0","type":"account.created-v1","id":"x"}"#);
        assert_eq!(
            (m.error.code, m.error.path.as_str()),
            (ErrorCode::NoPayload, "data")
        );
        assert_eq!(m.name.as_deref(), Some("account.created-v1"));
        let m = bad(r#"{"detail-type":"a-v1","detail":[1]}"#);
        assert_eq!(
            (m.error.code, m.error.path.as_str()),
            (ErrorCode::NoPayload, "detail")
        );
        let m = bad(r#"{"detail-type":7,"detail":{}}"#);
        assert_eq!(
            (m.error.code, m.error.path.as_str()),
            (ErrorCode::NoEventName, "detail-type")
        );
        let m = bad(r#"{"specversion":"0.3","type":"a-v1","data":{}}"#);
        assert_eq!(m.error.code, ErrorCode::InvalidEnvelope);
        let m = bad(r#"{"specversion":"1.0","type":"a-v1","data":null}"#);
        assert_eq!(m.error.code, ErrorCode::NoPayload);
        let m = bad(r#"{"detail-type":"a-v1","detail-type":"b-v1","detail":{}}"#);
        assert_eq!(m.error.code, ErrorCode::InvalidEnvelope);
        assert_eq!(bad("{\"a\":").error.code, ErrorCode::NotJson);
    }

    #[test]
    fn escaped_strings_are_unescaped() {
        let e =
            ok(r#"{"specversion":"1.0","type":"account.created\u002dv1","id":"a\"b","data":{}}"#);
        assert_eq!(e.name, "account.created-v1");
        assert_eq!(e.id.as_deref(), Some("a\"b"));
    }
}
