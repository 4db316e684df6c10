//! Property tests: no input makes `verdict::decode` panic, and every verdict keeps the status
//! invariants (invalid ⇒ reasons, decoded ⇒ none, malformed ⇒ exactly one, unknown ⇒ none).

use std::collections::BTreeSet;

use event_audit::decode::catalogue::{EVENTS, SHAPES};
use event_audit::decode::verdict::{decode, Status, Verdict};
use event_audit::test_support::dev::sample;
use proptest::prelude::*;
use proptest::sample::Index;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{Map, Value};

/// The invariants every verdict must keep, whatever the input.
fn check(v: &Verdict<'_>) -> Result<(), TestCaseError> {
    match v.status {
        Status::Decoded => {
            prop_assert!(v.errors.is_empty(), "decoded with errors {:?}", v.errors);
            prop_assert!(v.event.is_some() && v.catalogue_index.is_some());
        }
        Status::Invalid => {
            prop_assert!(!v.errors.is_empty(), "invalid without a reason");
            for e in &v.errors {
                prop_assert!(!e.code.as_str().is_empty() && !e.message.is_empty());
                // The payload is an object: every reason names a field.
                prop_assert!(!e.path.is_empty(), "invalid with an empty path: {e:?}");
            }
            prop_assert!(v.event.is_none() && v.catalogue_index.is_some());
        }
        Status::UnknownVersion | Status::UnknownType => {
            prop_assert!(
                v.errors.is_empty(),
                "{} with errors {:?}",
                v.status,
                v.errors
            );
            prop_assert!(v.name.is_some() && v.catalogue_index.is_none());
        }
        Status::Malformed => {
            prop_assert_eq!(v.errors.len(), 1, "malformed needs exactly one reason");
            prop_assert!(!v.errors[0].message.is_empty());
            prop_assert!(v.event.is_none() && v.unknown_fields.is_empty());
        }
    }
    Ok(())
}

/// Every field name the catalogue knows, so random objects often hit real fields.
fn field_names() -> Vec<&'static str> {
    let all = EVENTS
        .iter()
        .flat_map(|e| e.fields.iter())
        .chain(SHAPES.iter().flat_map(|s| s.fields.iter()))
        .map(|f| f.name);
    all.collect::<BTreeSet<_>>().into_iter().collect()
}

fn event_names() -> Vec<&'static str> {
    EVENTS.iter().map(|e| e.name).collect()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(field_names()).prop_map(str::to_owned),
        1 => "\\PC{0,8}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        Just(Value::from(1.5)),
        "\\PC{0,12}".prop_map(Value::String),
        "[A-Z]-[0-9A-F]{8}".prop_map(Value::String),
    ]
}

/// Arbitrary JSON, nested a few levels, with keys that are mostly catalogue field names.
fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An event name: mostly catalogue names, sometimes another version or anything at all.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(event_names()).prop_map(str::to_owned),
        1 => prop::sample::select(event_names()).prop_map(|n| format!("{n}-v7")),
        1 => "\\PC{0,30}",
    ]
}

fn envelope(kind: u8, name: &str, payload: &Value) -> Vec<u8> {
    let (id, time) = ("id-1", "2026-01-05T00:00:00Z");
    match kind % 3 {
        0 => sample::cloudevents(name, id, time, payload),
        1 => sample::eventbridge(name, id, time, payload),
        _ => sample::native(name, id, time, payload),
    }
}

/// One edit of a payload, applied to the object at `at` among all objects in the payload.
#[derive(Debug, Clone)]
enum Edit {
    Drop {
        at: Index,
        key: Index,
    },
    Replace {
        at: Index,
        key: Index,
        value: Value,
    },
    Insert {
        at: Index,
        key: String,
        value: Value,
    },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(at, key)| Edit::Drop { at, key }),
        (any::<Index>(), any::<Index>(), json()).prop_map(|(at, key, value)| Edit::Replace {
            at,
            key,
            value
        }),
        (any::<Index>(), key(), json()).prop_map(|(at, key, value)| Edit::Insert {
            at,
            key,
            value
        }),
    ]
}

/// JSON pointers of every object inside `v` (itself included).
fn objects(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                objects(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
            out.push(at);
        }
        Value::Array(xs) => {
            for (i, x) in xs.iter().enumerate() {
                objects(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn apply(payload: &mut Value, edit: &Edit) {
    let mut ptrs = Vec::new();
    objects(payload, String::new(), &mut ptrs);
    let at = match edit {
        Edit::Drop { at, .. } | Edit::Replace { at, .. } | Edit::Insert { at, .. } => at,
    };
    let ptr = at.get(&ptrs);
    let Some(Value::Object(obj)) = payload.pointer_mut(ptr) else {
        return;
    };
    let nth = |obj: &Map<String, Value>, i: &Index| -> Option<String> {
        (!obj.is_empty()).then(|| obj.keys().nth(i.index(obj.len())).cloned())?
    };
    match edit {
        Edit::Drop { key, .. } => {
            if let Some(k) = nth(obj, key) {
                obj.remove(&k);
            }
        }
        Edit::Replace { key, value, .. } => {
            if let Some(k) = nth(obj, key) {
                obj.insert(k, value.clone());
            }
        }
        Edit::Insert { key, value, .. } => {
            obj.insert(key.clone(), value.clone());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check(&decode(&bytes, None))?;
        check(&decode(&bytes, Some("account.created-v1")))?;
    }

    #[test]
    fn arbitrary_text_after_an_envelope_head(
        head in 0u8..4,
        tail in prop_oneof![
            "\\PC{0,80}",
            "[\\[\\]{}\",:0-9a-z.eE+\\-\\\\ ]{0,80}",
            // Numbers beyond f64 and \u escapes (lone surrogates) that a skim of the JSON accepts.
            "-?[0-9]{1,3}(\\.[0-9]{1,3})?[eE][+-]?[0-9]{1,4}[}\\]]{0,3}",
            "\"(\\\\u[dD][0-9a-fA-F]{3}|\\\\u[0-9a-fA-F]{4}|[a-z]){0,4}\"[}\\]]{0,3}",
        ],
    ) {
        // Each head has a wrong field before the cut, so a late parse error meets earlier errors.
        let head = [
            r#"{"specversion":"1.0","type":"account.created-v1","data":{"account_number":5,"account_user_emails":"#,
            r#"{"detail-type":"billing.ledger.entry_posted-v1","detail":{"x":1,"ledger":"#,
            r#"{"event":"account_metadata.created-v1","payload":{"account_number":5,"key":"#,
            r#"{"specversion":"1.0","type":"ink.conversation.priority.changed-v1","data":{"conversation_id":"c","new_priority":"#,
        ][usize::from(head)];
        let text = format!("{head}{tail}");
        check(&decode(text.as_bytes(), None))?;
    }

    #[test]
    fn arbitrary_json_payloads(kind in any::<u8>(), name in name(), payload in json()) {
        let bytes = envelope(kind, &name, &payload);
        let v = decode(&bytes, None);
        check(&v)?;
        if !payload.is_object() {
            prop_assert_eq!(v.status, Status::Malformed);
        }
        // Bare payloads named from outside follow the same rules.
        let bare = payload.to_string();
        check(&decode(bare.as_bytes(), Some(&name)))?;
    }

    #[test]
    fn edited_sample_payloads(
        event in any::<Index>(),
        seed in any::<u64>(),
        full in any::<bool>(),
        kind in any::<u8>(),
        edits in prop::collection::vec(edit(), 0..4),
    ) {
        let spec = event.get(&EVENTS);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut payload = sample::payload(spec, full, &mut rng);
        for e in &edits {
            apply(&mut payload, e);
        }
        let bytes = envelope(kind, spec.name, &payload);
        let v = decode(&bytes, None);
        check(&v)?;
        prop_assert!(matches!(v.status, Status::Decoded | Status::Invalid), "{}", v.status);
        if edits.is_empty() {
            prop_assert_eq!(v.status, Status::Decoded);
        }
    }

    #[test]
    fn byte_edits_of_valid_messages(
        event in any::<Index>(),
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let spec = event.get(&EVENTS);
        let mut rng = StdRng::seed_from_u64(seed);
        let payload = sample::payload(spec, true, &mut rng);
        let mut bytes = envelope(u8::from(seed % 2 == 0), spec.name, &payload);
        for (at, byte, op) in &edits {
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = *byte,
                1 => bytes.insert(i, *byte),
                _ => {
                    bytes.remove(i);
                }
            }
        }
        check(&decode(&bytes, None))?;
    }
}

#[test]
fn realistic_mix_keeps_the_invariants() {
    for s in sample::Mix::new(3_000, 99) {
        let v = decode(&s.bytes, None);
        assert_eq!(v.status, s.status);
        check(&v).expect("invariants");
    }
}

/// The typed events as a Rust consumer of the library reads them (the example in
/// docs/decoding.md, "The typed events").
#[test]
fn a_consumer_reads_a_typed_event() {
    use event_audit::decode::catalogue::Event;
    use event_audit::decode::verdict::decode;
    let msg = br#"{"specversion":"1.0","type":"account.created-v1","source":"/s","id":"1",
        "data":{"account_number":"A-1","account_user_emails":["jo@example.com"],"is_imported":true}}"#;
    let v = decode(msg, None);
    let Some(Event::AccountCreatedV1(e)) = v.event else {
        panic!("not a typed account.created-v1: {v:?}")
    };
    assert_eq!(e.account_number, "A-1");
    assert_eq!(e.is_imported, Some(true));
}
