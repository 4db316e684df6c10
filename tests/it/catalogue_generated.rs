//! Tests generated from the catalogue itself: every event version, every field (nested shapes and
//! arrays of shapes included), through `verdict::decode` in CloudEvents and EventBridge envelopes.
//! Nothing here is written per event: the cases come from `catalogue::EVENTS` at run time.

use std::collections::HashSet;

use event_audit::decode::catalogue::rt::ErrorCode;
use event_audit::decode::catalogue::{
    find_shape, lookup, spec, split_name, EventSpec, FieldSpec, Lookup, TypeSpec, EVENTS,
};
use event_audit::decode::verdict::{decode, Status};
use event_audit::test_support::dev::sample;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};

/// Collects every mismatch so one run reports all broken events, not just the first.
#[derive(Default)]
struct Report {
    failures: Vec<String>,
    checks: usize,
}

impl Report {
    /// Decodes `payload` as `name` in both envelopes and compares status, errors, unknown fields.
    fn check(
        &mut self,
        case: &str,
        name: &str,
        payload: &Value,
        status: Status,
        errors: &[(&str, ErrorCode)],
        unknown: &[&str],
    ) {
        let mut want: Vec<(String, &str)> = errors
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_str()))
            .collect();
        want.sort();
        let mut want_unknown: Vec<&str> = unknown.to_vec();
        want_unknown.sort_unstable();
        let time = "2026-01-05T00:00:00Z";
        for (env, bytes) in [
            (
                "cloudevents",
                sample::cloudevents(name, "id-1", time, payload),
            ),
            (
                "eventbridge",
                sample::eventbridge(name, "id-1", time, payload),
            ),
        ] {
            self.checks += 1;
            let v = decode(&bytes, None);
            let mut got: Vec<(String, &str)> = v
                .errors
                .iter()
                .map(|e| (e.path.clone(), e.code.as_str()))
                .collect();
            got.sort();
            let mut got_unknown: Vec<&str> = v.unknown_fields.iter().map(String::as_str).collect();
            got_unknown.sort_unstable();
            if v.status != status || got != want || got_unknown != want_unknown {
                self.failures.push(format!(
                    "{name} [{env}] {case}: want {status} {want:?} unknown {want_unknown:?}, \
                     got {} {got:?} unknown {got_unknown:?}; payload {payload}",
                    v.status
                ));
            }
            if v.errors.iter().any(|e| e.message.is_empty()) {
                self.failures
                    .push(format!("{name} [{env}] {case}: empty message"));
            }
        }
    }

    fn finish(self, min_checks: usize) {
        let shown: Vec<&String> = self.failures.iter().take(40).collect();
        assert!(
            self.failures.is_empty(),
            "{} of {} checks failed:\n{}",
            self.failures.len(),
            self.checks,
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(self.checks >= min_checks, "only {} checks ran", self.checks);
    }
}

fn rng() -> StdRng {
    StdRng::seed_from_u64(0x00ca_7a10)
}

/// One field somewhere in an event's payload: its path segments (`["supply_points", "0",
/// "market_name"]`; arrays are entered at element 0) and its spec.
struct Slot {
    path: Vec<String>,
    field: &'static FieldSpec,
}

impl Slot {
    fn dotted(&self) -> String {
        self.path.join(".")
    }
    fn pointer(&self) -> String {
        format!("/{}", self.path.join("/"))
    }
}

fn slots(fields: &'static [FieldSpec], prefix: &[String], out: &mut Vec<Slot>) {
    for field in fields {
        let mut path = prefix.to_vec();
        path.push(field.name.to_owned());
        descend(&field.ty, &path, out);
        out.push(Slot { path, field });
    }
}

fn descend(ty: &TypeSpec, path: &[String], out: &mut Vec<Slot>) {
    match ty {
        TypeSpec::Shape(name) => {
            let shape = find_shape(name).unwrap_or_else(|| panic!("shape {name} is not defined"));
            slots(shape.fields, path, out);
        }
        TypeSpec::Array(inner) => {
            let mut p = path.to_vec();
            p.push("0".to_owned());
            descend(inner, &p, out);
        }
        _ => {}
    }
}

fn all_slots(e: &'static EventSpec) -> Vec<Slot> {
    let mut out = Vec::new();
    slots(e.fields, &[], &mut out);
    out
}

/// The (JSON) parent of a slot and the key of the slot in it.
fn parent<'v>(
    payload: &'v mut Value,
    slot: &Slot,
) -> (&'v mut serde_json::Map<String, Value>, String) {
    let (last, up) = slot.path.split_last().expect("non-empty path");
    let pointer = format!("/{}", up.join("/"));
    let obj = if up.is_empty() {
        payload
    } else {
        payload.pointer_mut(&pointer).expect("parent present")
    };
    (
        obj.as_object_mut().expect("parent is an object"),
        last.clone(),
    )
}

fn set(payload: &Value, slot: &Slot, value: Value) -> Value {
    let mut p = payload.clone();
    let (obj, key) = parent(&mut p, slot);
    obj.insert(key, value);
    p
}

fn removed(payload: &Value, slot: &Slot) -> Value {
    let mut p = payload.clone();
    let (obj, key) = parent(&mut p, slot);
    assert!(obj.remove(&key).is_some(), "{} present", slot.dotted());
    p
}

/// Values of every JSON kind (null aside) that `ty` rejects.
fn wrong_values(ty: &TypeSpec) -> Vec<Value> {
    let kinds = [
        ("string", json!("x")),
        ("integer", json!(7)),
        ("fraction", json!(1.5)),
        ("boolean", json!(true)),
        ("object", json!({"k": 1})),
        ("array", json!(["x"])),
    ];
    let ok: &[&str] = match ty {
        TypeSpec::String => &["string"],
        TypeSpec::Integer => &["integer"],
        TypeSpec::Number => &["integer", "fraction"],
        TypeSpec::Boolean => &["boolean"],
        TypeSpec::Object | TypeSpec::Shape(_) => &["object"],
        TypeSpec::Array(_) => &["array"],
    };
    kinds
        .into_iter()
        .filter(|(k, _)| !ok.contains(k))
        .map(|(_, v)| v)
        .collect()
}

#[test]
fn minimal_and_full_payloads_decode() {
    let mut r = Report::default();
    let mut rng = rng();
    for e in EVENTS.iter() {
        let min = sample::payload(e, false, &mut rng);
        assert_eq!(min.as_object().map(|m| m.len()), Some(e.required_count()));
        r.check("minimal", e.name, &min, Status::Decoded, &[], &[]);
        let full = sample::payload(e, true, &mut rng);
        assert_eq!(full.as_object().map(|m| m.len()), Some(e.fields.len()));
        r.check("full", e.name, &full, Status::Decoded, &[], &[]);
    }
    r.finish(EVENTS.len() * 4);
}

#[test]
fn unlisted_fields_are_reported_not_rejected() {
    let mut r = Report::default();
    let mut rng = rng();
    let mut nested = 0;
    for e in EVENTS.iter() {
        let full = sample::payload(e, true, &mut rng);
        let mut extra = full.clone();
        extra["zz_unlisted"] = json!({"anything": [1, "two"]});
        r.check(
            "extra field",
            e.name,
            &extra,
            Status::Decoded,
            &[],
            &["zz_unlisted"],
        );
        // The same inside every nested object of a shape.
        for slot in all_slots(e) {
            if let TypeSpec::Shape(_) = slot.field.ty {
                let mut p = full.clone();
                let obj = p.pointer_mut(&slot.pointer()).expect("present");
                obj["zz_unlisted"] = json!(null);
                let at = format!("{}.zz_unlisted", slot.dotted());
                r.check(
                    "nested extra field",
                    e.name,
                    &p,
                    Status::Decoded,
                    &[],
                    &[&at],
                );
                nested += 1;
            }
        }
    }
    assert!(nested > 20, "only {nested} nested objects");
    r.finish(EVENTS.len() * 2);
}

#[test]
fn every_missing_required_field_is_reported_at_its_path() {
    let mut r = Report::default();
    let mut rng = rng();
    let mut paths = HashSet::new();
    for e in EVENTS.iter() {
        let min = sample::payload(e, false, &mut rng);
        let full = sample::payload(e, true, &mut rng);
        for slot in all_slots(e).iter().filter(|s| s.field.required) {
            let at = slot.dotted();
            let want = [(at.as_str(), ErrorCode::MissingField)];
            if slot.path.len() == 1 {
                let p = removed(&min, slot);
                r.check(
                    "required removed (minimal)",
                    e.name,
                    &p,
                    Status::Invalid,
                    &want,
                    &[],
                );
            }
            let p = removed(&full, slot);
            r.check("required removed", e.name, &p, Status::Invalid, &want, &[]);
            paths.insert(at);
        }
    }
    for nested in ["supply_points.0.market_name", "ledger.account.number"] {
        assert!(paths.contains(nested), "{nested} was not exercised");
    }
    r.finish(EVENTS.len() * 2);
}

#[test]
fn every_field_of_a_wrong_type_is_reported_at_its_path() {
    let mut r = Report::default();
    let mut rng = rng();
    let (mut integers, mut numbers) = (0, 0);
    for e in EVENTS.iter() {
        let full = sample::payload(e, true, &mut rng);
        for slot in all_slots(e) {
            let at = slot.dotted();
            let want = [(at.as_str(), ErrorCode::InvalidType)];
            for wrong in wrong_values(&slot.field.ty) {
                let p = set(&full, &slot, wrong);
                r.check("wrong type", e.name, &p, Status::Invalid, &want, &[]);
            }
            match slot.field.ty {
                TypeSpec::Integer => {
                    integers += 1;
                    let p = set(&full, &slot, json!(9_223_372_036_854_775_808_u64));
                    let want = [(at.as_str(), ErrorCode::OutOfRange)];
                    r.check("integer > i64", e.name, &p, Status::Invalid, &want, &[]);
                    let p = set(&full, &slot, json!(-9_223_372_036_854_775_808_i64));
                    r.check("i64::MIN", e.name, &p, Status::Decoded, &[], &[]);
                }
                TypeSpec::Number => {
                    numbers += 1;
                    for ok in [json!(3), json!(-0.25), json!(1e300)] {
                        let p = set(&full, &slot, ok);
                        r.check("number", e.name, &p, Status::Decoded, &[], &[]);
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        integers > 50 && numbers > 0,
        "{integers} integer, {numbers} number fields"
    );
    r.finish(EVENTS.len() * 8);
}

#[test]
fn nulls_fail_required_fields_only() {
    let mut r = Report::default();
    let mut rng = rng();
    for e in EVENTS.iter() {
        let full = sample::payload(e, true, &mut rng);
        for slot in all_slots(e) {
            let at = slot.dotted();
            let p = set(&full, &slot, Value::Null);
            if slot.field.required {
                let want = [(at.as_str(), ErrorCode::NullValue)];
                r.check("required null", e.name, &p, Status::Invalid, &want, &[]);
            } else {
                r.check("optional null", e.name, &p, Status::Decoded, &[], &[]);
            }
        }
    }
    r.finish(EVENTS.len() * 2);
}

#[test]
fn array_elements_are_checked_one_by_one() {
    let mut r = Report::default();
    let mut rng = rng();
    let (mut arrays, mut shape_arrays) = (0, 0);
    for e in EVENTS.iter() {
        let full = sample::payload(e, true, &mut rng);
        for slot in all_slots(e) {
            let TypeSpec::Array(inner) = slot.field.ty else {
                continue;
            };
            arrays += 1;
            if let TypeSpec::Shape(_) = inner {
                shape_arrays += 1;
            }
            let at0 = format!("{}.0", slot.dotted());
            let at1 = format!("{}.1", slot.dotted());
            let good = full.pointer(&format!("{}/0", slot.pointer())).cloned();
            let good = good.expect("sample arrays have at least one element");
            for wrong in wrong_values(inner) {
                let p = set(&full, &slot, json!([wrong.clone()]));
                let want = [(at0.as_str(), ErrorCode::InvalidType)];
                r.check(
                    "element wrong type",
                    e.name,
                    &p,
                    Status::Invalid,
                    &want,
                    &[],
                );
                let p = set(&full, &slot, json!([good.clone(), wrong]));
                let want = [(at1.as_str(), ErrorCode::InvalidType)];
                r.check(
                    "second element wrong type",
                    e.name,
                    &p,
                    Status::Invalid,
                    &want,
                    &[],
                );
            }
            let p = set(&full, &slot, json!([null]));
            let want = [(at0.as_str(), ErrorCode::NullValue)];
            r.check("element null", e.name, &p, Status::Invalid, &want, &[]);
            let p = set(&full, &slot, json!([]));
            r.check("empty array", e.name, &p, Status::Decoded, &[], &[]);
        }
    }
    assert!(
        arrays > 20 && shape_arrays > 5,
        "{arrays} arrays, {shape_arrays} of shapes"
    );
    r.finish(40);
}

#[test]
fn duplicate_top_level_fields_are_invalid() {
    let mut r = Report::default();
    let mut rng = rng();
    for e in EVENTS.iter() {
        let min = sample::payload(e, false, &mut rng);
        let Some((key, value)) = min.as_object().and_then(|m| m.iter().next()) else {
            panic!("{}: no required field", e.name);
        };
        // JSON text with `key` twice: a Value cannot hold that, so splice the text.
        let text = min.to_string();
        let dup = format!("{{{}:{},{}", json!(key), value, &text[1..]);
        for bytes in [
            format!(
                r#"{{"specversion":"1.0","type":"{}","id":"i","data":{dup}}}"#,
                e.name
            ),
            format!(r#"{{"detail-type":"{}","id":"i","detail":{dup}}}"#, e.name),
        ] {
            r.checks += 1;
            let v = decode(bytes.as_bytes(), None);
            let got: Vec<(&str, ErrorCode)> =
                v.errors.iter().map(|e| (e.path.as_str(), e.code)).collect();
            if v.status != Status::Invalid || got != [(key.as_str(), ErrorCode::DuplicateField)] {
                r.failures
                    .push(format!("{}: duplicate {key}: {} {got:?}", e.name, v.status));
            }
        }
    }
    r.finish(EVENTS.len() * 2);
}

/// Another version of the same type, guaranteed not to be in the catalogue.
fn other_versions(e: &EventSpec) -> Vec<String> {
    let mut out = vec![format!("{}-v99", e.event_type), e.event_type.to_owned()];
    if let Some(n) = e
        .version
        .strip_prefix('v')
        .and_then(|n| n.parse::<u32>().ok())
    {
        out.push(format!("{}-v{}", e.event_type, n + 100));
    } else {
        out.push(format!("{}-9.9.9", e.event_type));
    }
    out
}

#[test]
fn unknown_versions_of_every_type() {
    let mut r = Report::default();
    let mut rng = rng();
    for e in EVENTS.iter() {
        let min = sample::payload(e, false, &mut rng);
        for name in other_versions(e) {
            assert_eq!(lookup(&name), Lookup::UnknownVersion, "{name}");
            r.check(
                "unknown version",
                &name,
                &min,
                Status::UnknownVersion,
                &[],
                &[],
            );
            // Even a payload that would be invalid is not judged against another version.
            r.check(
                "unknown version",
                &name,
                &json!({}),
                Status::UnknownVersion,
                &[],
                &[],
            );
        }
    }
    r.finish(EVENTS.len() * 12);
}

#[test]
fn catalogue_list_facts() {
    assert_eq!(EVENTS.len(), 190, "event versions in the catalogue");
    let mut names = HashSet::new();
    for (i, e) in EVENTS.iter().enumerate() {
        assert!(names.insert(e.name), "{} listed twice", e.name);
        assert_eq!(
            split_name(e.name),
            Some((e.event_type, e.version)),
            "{}",
            e.name
        );
        let idx = u16::try_from(i).expect("fits");
        assert_eq!(lookup(e.name), Lookup::Known(idx));
        assert_eq!(spec(idx).name, e.name);
        assert!(e.required_count() > 0, "{} has no required field", e.name);
        let mut fields = HashSet::new();
        for f in e.fields {
            assert!(fields.insert(f.name), "{}: {} twice", e.name, f.name);
        }
    }
    // `event-audit catalogue list` prints the same facts, one line per event version.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_event-audit"))
        .args(["catalogue", "list"])
        .output()
        .expect("run event-audit");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 190);
    for (line, e) in lines.iter().zip(EVENTS.iter()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols[0], e.name);
        assert_eq!(cols[1], format!("required {}", e.required_count()));
        assert_eq!(cols[2], format!("optional {}", e.optional_count()));
        assert_eq!(cols.get(3) == Some(&"open"), e.open, "{line}");
    }
}
