//! Tests of the sample generator: payloads follow the catalogue, the mix is deterministic.

use super::*;
use crate::decode::catalogue::{lookup, Lookup};
use crate::decode::verdict::decode;
use std::collections::{BTreeMap, HashSet};

#[test]
fn payloads_decode_for_every_event() {
    let mut rng = StdRng::seed_from_u64(7);
    for spec in EVENTS.iter() {
        for full in [false, true] {
            let body = payload(spec, full, &mut rng);
            for bytes in [
                cloudevents(spec.name, "id-1", "2026-01-05T00:00:00Z", &body),
                eventbridge(spec.name, "id-1", "2026-01-05T00:00:00Z", &body),
                native(spec.name, "id-1", "2026-01-05T00:00:00Z", &body),
            ] {
                let v = decode(&bytes, None);
                assert_eq!(v.status, Status::Decoded, "{} {:?}", spec.name, v.errors);
                assert!(v.unknown_fields.is_empty(), "{}", spec.name);
                assert_eq!(v.name.as_deref(), Some(spec.name));
                assert_eq!(v.id.as_deref(), Some("id-1"));
            }
            let keys = body.as_object().map_or(0, Map::len);
            let want = if full {
                spec.fields.len()
            } else {
                spec.required_count()
            };
            assert_eq!(keys, want, "{}", spec.name);
        }
    }
}

#[test]
fn account_numbers_look_real() {
    let mut rng = StdRng::seed_from_u64(1);
    let body = payload_for("account.occupied-v1", false, &mut rng).expect("known event");
    let a = body["account_number"].as_str().expect("string");
    assert_eq!(a.len(), 10);
    assert!(a.starts_with("A-"));
    assert!(payload_for("no.such-v1", false, &mut rng).is_none());
}

#[test]
fn envelopes_are_what_they_say() {
    let body = serde_json::json!({"account_number": "A-1"});
    let ce: Value = serde_json::from_slice(&cloudevents("x-v1", "i", "t", &body)).expect("json");
    assert_eq!(ce["specversion"], "1.0");
    assert_eq!(ce["source"], "/kraken/events");
    assert_eq!(ce["datacontenttype"], "application/json");
    assert_eq!(ce["data"], body);
    let eb: Value = serde_json::from_slice(&eventbridge("x-v1", "i", "t", &body)).expect("json");
    assert_eq!(eb["detail-type"], "x-v1");
    assert_eq!(eb["account"], "123456789012");
    assert_eq!(eb["region"], "eu-west-2");
    assert_eq!(eb["resources"], serde_json::json!([]));
    let nat: Value = serde_json::from_slice(&native("x-v\"1", "i", "t", &body)).expect("json");
    assert_eq!(nat["event"], "x-v\"1");
    assert_eq!(nat["payload"], body);
}

#[test]
fn unknown_types_are_unknown() {
    for name in UNKNOWN_TYPES {
        assert_eq!(lookup(name), Lookup::UnknownType, "{name}");
    }
}

#[test]
fn mix_is_deterministic_and_statuses_hold() {
    let n = 5_000;
    let a: Vec<Sample> = Mix::new(n, 42).collect();
    let b = realistic_mix(n, 42);
    assert_eq!(a.len(), n);
    assert!(a.iter().zip(&b).all(|(x, y)| &x.bytes == y));
    assert_ne!(realistic_mix(50, 43), realistic_mix(50, 42));

    let mut counts: BTreeMap<Status, usize> = BTreeMap::new();
    let mut decoded_names = HashSet::new();
    let mut ids = HashSet::new();
    let (mut ce, mut eb, mut bytes) = (0, 0, 0);
    for s in &a {
        let v = decode(&s.bytes, None);
        assert_eq!(v.status, s.status, "{}", String::from_utf8_lossy(&s.bytes));
        *counts.entry(v.status).or_default() += 1;
        bytes += s.bytes.len();
        if v.status == Status::Decoded {
            decoded_names.insert(v.name.as_deref().unwrap_or_default().to_owned());
        }
        if let Some(id) = v.id {
            assert!(ids.insert(id.into_owned()), "duplicate id");
        }
        match v.envelope {
            Some(crate::decode::envelope::EnvelopeKind::CloudEvents) => ce += 1,
            Some(crate::decode::envelope::EnvelopeKind::EventBridge) => eb += 1,
            _ => {}
        }
    }
    assert_eq!(decoded_names.len(), EVENTS.len());
    let bad = n - counts[&Status::Decoded];
    assert!((50..=160).contains(&bad), "{counts:?}");
    for st in Status::ALL {
        assert!(
            counts.get(&st).copied().unwrap_or(0) > 0,
            "{st} missing: {counts:?}"
        );
    }
    assert!(ce > n * 2 / 5 && eb > n * 2 / 5, "ce {ce} eb {eb}");
    let mean = bytes / n;
    assert!((250..=700).contains(&mean), "mean size {mean}");
}

#[test]
fn times_are_rfc3339() {
    assert_eq!(rfc3339(0, 0), "2026-01-05T00:00:00.000Z");
    assert_eq!(rfc3339(86_400 + 61, 5), "2026-01-06T00:01:01.005Z");
    let mut rng = StdRng::seed_from_u64(3);
    let id = uuid(&mut rng);
    assert_eq!(id.len(), 36);
    assert_eq!(id.as_bytes()[14], b'4');
}
