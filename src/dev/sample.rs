//! Sample payloads and envelopes generated from the catalogue specs (tests, benchmarks, `publish`).
//!
//! Everything here is pure and deterministic for a given RNG: no I/O, no clock. Payloads are
//! built from [`EventSpec`] metadata (shapes expanded), so they follow the catalogue as it is.

use chrono::{DateTime, SecondsFormat};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};

use crate::decode::catalogue::{find_event, find_shape, EventSpec, FieldSpec, TypeSpec, EVENTS};
use crate::decode::verdict::Status;

/// Shapes nest a few levels at most; this only guards against a cyclic catalogue.
const MAX_DEPTH: usize = 8;

/// Plausible event types of the real platform that the catalogue does not describe.
pub(crate) const UNKNOWN_TYPES: &[&str] = &[
    "tech.kraken.workflow.created.v1-v1",
    "comms.sms.sent-v1",
    "comms.email.delivered-v1",
    "payments.direct_debit.mandate_created-v1",
    "meterpoint.electricity.registration.started-v1",
    "account.note.created-v1",
    "smart.meter_reading.received-v2",
    "billing.statement.issued-v1",
];

/// A valid payload for `spec`: required fields only, or every field when `full`.
pub fn payload(spec: &EventSpec, full: bool, rng: &mut impl Rng) -> Value {
    object(spec.fields, full, rng, 0)
}

/// [`payload`] by full event name; `None` when the name is not a catalogue event version.
pub fn payload_for(name: &str, full: bool, rng: &mut impl Rng) -> Option<Value> {
    find_event(name).map(|spec| payload(spec, full, rng))
}

fn object(fields: &[FieldSpec], full: bool, rng: &mut impl Rng, depth: usize) -> Value {
    let mut map = Map::new();
    for f in fields.iter().filter(|f| full || f.required) {
        map.insert(f.name.to_owned(), value(f.name, &f.ty, full, rng, depth));
    }
    Value::Object(map)
}

/// A valid value of type `ty` for a field called `name`.
fn value(name: &str, ty: &TypeSpec, full: bool, rng: &mut impl Rng, depth: usize) -> Value {
    match ty {
        TypeSpec::String => Value::String(string_for(name, rng)),
        TypeSpec::Integer => Value::from(integer_for(name, rng)),
        TypeSpec::Number => {
            if rng.gen_bool(0.5) {
                Value::from(rng.gen_range(0..100_i64))
            } else {
                Value::from(f64::from(rng.gen_range(1..100_000_u32)) / 100.0)
            }
        }
        TypeSpec::Boolean => Value::Bool(rng.gen()),
        TypeSpec::Object => small_object(name, rng),
        TypeSpec::Array(inner) => {
            let n = rng.gen_range(1..=2);
            Value::Array(
                (0..n)
                    .map(|_| value(name, inner, full, rng, depth + 1))
                    .collect(),
            )
        }
        TypeSpec::Shape(shape) => match find_shape(shape) {
            Some(s) if depth < MAX_DEPTH => object(s.fields, full, rng, depth + 1),
            _ => Value::Object(Map::new()),
        },
    }
}

fn hex(rng: &mut impl Rng, digits: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    (0..digits)
        .map(|_| char::from(HEX[rng.gen_range(0..16)]))
        .collect()
}

fn pick<'a>(rng: &mut impl Rng, options: &[&'a str]) -> &'a str {
    options.choose(rng).copied().unwrap_or_default()
}

/// An RFC 3339 UTC time `secs` after 2026-01-05T00:00:00Z, with milliseconds.
pub(crate) fn rfc3339(secs: i64, millis: u32) -> String {
    const BASE: i64 = 1_767_571_200; // 2026-01-05T00:00:00Z
    DateTime::from_timestamp(BASE.saturating_add(secs), millis.min(999) * 1_000_000).map_or_else(
        || "2026-01-05T00:00:00.000Z".to_owned(),
        |t| t.to_rfc3339_opts(SecondsFormat::Millis, true),
    )
}

/// A UUID-v4-looking id (lower-case hex) drawn from `rng`.
pub(crate) fn uuid(rng: &mut impl Rng) -> String {
    let a: u128 = rng.gen();
    let h = format!("{a:032x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// How many accounts the mix's account numbers are drawn from (0: a new one each time), for the
/// process (`publish --accounts`).
static ACCOUNTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Draws account numbers from `n` accounts from now on (0: a new one each time).
pub(crate) fn draw_accounts_from(n: u64) {
    ACCOUNTS.store(n, std::sync::atomic::Ordering::Relaxed);
}

fn string_for(name: &str, rng: &mut impl Rng) -> String {
    match name {
        "account_number" => {
            return match ACCOUNTS.load(std::sync::atomic::Ordering::Relaxed) {
                0 => format!("A-{}", hex(rng, 8)),
                n => format!("A-{:08x}", rng.gen_range(0..n)),
            }
        }
        "mprn" => return rng.gen_range(1_000_000_000_u64..10_000_000_000).to_string(),
        "postcode" => return pick(rng, &["SW1A 1AA", "M1 1AE", "EH1 2NG", "BS1 4DJ"]).into(),
        "market_name" => return pick(rng, &["ELECTRICITY", "GAS"]).into(),
        "fuel" | "utility" | "industry" => return pick(rng, &["electricity", "gas"]).into(),
        "channel" => return pick(rng, &["EMAIL", "SMS", "LIVE_CHAT", "PHONE"]).into(),
        "market_identifier" | "external_identifier" => {
            // An account's external number is the same in each of its events.
            return match ACCOUNTS.load(std::sync::atomic::Ordering::Relaxed) {
                0 => rng.gen_range(1_000_000_000_000_u64..10_000_000_000_000),
                n => 1_000_000_000_000 + rng.gen_range(0..n),
            }
            .to_string();
        }
        _ => {}
    }
    if name.ends_with("_at") || name == "snoozed_to" {
        return rfc3339(rng.gen_range(-3_000_000..3_000_000), rng.gen_range(0..1000));
    }
    if name.contains("date") || name.ends_with("_from") || name.ends_with("_to") {
        return format!(
            "2026-{:02}-{:02}",
            rng.gen_range(1..=12),
            rng.gen_range(1..=28)
        );
    }
    if name.contains("email") || name.contains("address") {
        return format!("user{}@example.com", rng.gen_range(100..100_000));
    }
    if name.ends_with("_number") || name == "number" {
        return format!("{}-{}", pick(rng, &["A", "U", "L", "P"]), hex(rng, 8));
    }
    if name.ends_with("id") || name.ends_with("_key") || name.ends_with("identifier") {
        return hex(rng, 12).to_lowercase();
    }
    pick(
        rng,
        &[
            "standard",
            "pending",
            "completed",
            "manual",
            "customer-request",
            "direct-debit",
        ],
    )
    .into()
}

fn integer_for(name: &str, rng: &mut impl Rng) -> i64 {
    if name.contains("amount") {
        rng.gen_range(100..50_000)
    } else if name.ends_with("count") || name.ends_with("digits") {
        rng.gen_range(0..10)
    } else {
        rng.gen_range(1..10_000_000)
    }
}

fn small_object(name: &str, rng: &mut impl Rng) -> Value {
    let mut map = Map::new();
    if name == "changes" {
        let key = pick(rng, &["status", "billing_name", "payment_day", "email"]);
        let before = Value::String(string_for(key, rng));
        let after = Value::String(string_for(key, rng));
        map.insert(key.to_owned(), Value::Array(vec![before, after]));
    } else {
        map.insert("kind".to_owned(), Value::String(string_for("kind", rng)));
        map.insert("count".to_owned(), Value::from(rng.gen_range(0..5_i64)));
    }
    Value::Object(map)
}

/// JSON string literal of `s` (Display of a `Value` never fails).
fn lit(s: &str) -> String {
    Value::from(s).to_string()
}

/// A CloudEvents 1.0 structured-mode envelope.
pub fn cloudevents(name: &str, id: &str, time: &str, payload: &Value) -> Vec<u8> {
    format!(
        r#"{{"specversion":"1.0","type":{},"source":"/kraken/events","id":{},"time":{},"datacontenttype":"application/json","data":{payload}}}"#,
        lit(name),
        lit(id),
        lit(time)
    )
    .into_bytes()
}

/// An AWS EventBridge envelope.
pub fn eventbridge(name: &str, id: &str, time: &str, payload: &Value) -> Vec<u8> {
    format!(
        r#"{{"version":"0","id":{},"detail-type":{},"source":"kraken","account":"123456789012","time":{},"region":"eu-west-2","resources":[],"detail":{payload}}}"#,
        lit(id),
        lit(name),
        lit(time)
    )
    .into_bytes()
}

/// event-audit's native envelope.
pub fn native(name: &str, id: &str, time: &str, payload: &Value) -> Vec<u8> {
    format!(
        r#"{{"event":{},"id":{},"time":{},"payload":{payload}}}"#,
        lit(name),
        lit(id),
        lit(time)
    )
    .into_bytes()
}

/// A JSON value of a JSON type that `ty` does not accept (never null, never an object for a shape).
pub(crate) fn wrong_type(ty: &TypeSpec) -> Value {
    match ty {
        TypeSpec::String => Value::from(42),
        TypeSpec::Integer | TypeSpec::Number => Value::from("42"),
        TypeSpec::Boolean => Value::from("true"),
        TypeSpec::Object | TypeSpec::Array(_) => Value::from("x"),
        TypeSpec::Shape(_) => Value::Array(vec![Value::from(1)]),
    }
}

/// One generated message and the status `verdict::decode` must give it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub bytes: Vec<u8>,
    pub status: Status,
}

/// A deterministic stream of realistic messages: every catalogue event version at least once
/// (when `n >= 190`), about half CloudEvents and half EventBridge, about 2% not decodable
/// (1% invalid, 0.4% unknown version, 0.4% unknown type, 0.2% malformed).
#[derive(Debug)]
pub struct Mix {
    rng: StdRng,
    /// Event index per message; `true` marks the one guaranteed valid occurrence of an event.
    order: Vec<(usize, bool)>,
    pos: usize,
    /// Stamp envelopes with the current time (load generation) instead of a seeded one.
    live: bool,
}

impl Mix {
    pub fn new(n: usize, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut order: Vec<(usize, bool)> = if n >= EVENTS.len() {
            (0..EVENTS.len()).map(|i| (i, true)).collect()
        } else {
            Vec::new()
        };
        while order.len() < n {
            order.push((rng.gen_range(0..EVENTS.len()), false));
        }
        order.shuffle(&mut rng);
        Mix {
            rng,
            order,
            pos: 0,
            live: false,
        }
    }

    /// Envelope times are the wall-clock time each message is generated (for `publish`, so the
    /// daemon's lag metric means something); everything else stays seeded.
    pub(crate) fn live(mut self) -> Self {
        self.live = true;
        self
    }

    fn make(&mut self, idx: usize, protected: bool) -> Sample {
        let rng = &mut self.rng;
        let spec = &EVENTS[idx];
        let full = rng.gen_bool(0.5);
        let mut body = payload(spec, full, rng);
        let id = uuid(rng);
        let millis = rng.gen_range(0..1000);
        let time = if self.live {
            chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
        } else {
            rfc3339(i64::try_from(self.pos).unwrap_or(i64::MAX), millis)
        };
        let mut name = spec.name.to_owned();
        let mut status = Status::Decoded;
        let roll = if protected {
            1000
        } else {
            rng.gen_range(0..1000)
        };
        match roll {
            0..=9 => {
                status = Status::Invalid;
                break_payload(spec, &mut body, rng);
            }
            10..=13 => {
                status = Status::UnknownVersion;
                name = format!("{}-v99", spec.event_type);
            }
            14..=17 => {
                status = Status::UnknownType;
                name = pick(rng, UNKNOWN_TYPES).to_owned();
            }
            18..=19 => return malformed(&name, &id, &time, &body, rng),
            // The platform may add fields the catalogue does not list: still decoded.
            20..=29 => {
                if let Value::Object(map) = &mut body {
                    map.insert("platform_added_field".into(), Value::from(true));
                }
            }
            _ => {}
        }
        let bytes = if rng.gen_bool(0.5) {
            cloudevents(&name, &id, &time, &body)
        } else {
            eventbridge(&name, &id, &time, &body)
        };
        Sample { bytes, status }
    }
}

/// Makes a valid payload invalid: drops a required field or gives a present field a wrong type.
fn break_payload(spec: &EventSpec, body: &mut Value, rng: &mut impl Rng) {
    let Value::Object(map) = body else { return };
    let present: Vec<&FieldSpec> = spec
        .fields
        .iter()
        .filter(|f| map.contains_key(f.name))
        .collect();
    let Some(field) = present.choose(rng) else {
        return;
    };
    if field.required && rng.gen_bool(0.5) {
        map.remove(field.name);
    } else {
        map.insert(field.name.to_owned(), wrong_type(&field.ty));
    }
}

fn malformed(name: &str, id: &str, time: &str, body: &Value, rng: &mut impl Rng) -> Sample {
    let bytes = match rng.gen_range(0..5) {
        0 => {
            let mut b = cloudevents(name, id, time, body);
            b.truncate(b.len() / 2);
            b
        }
        1 => cloudevents(name, id, time, &Value::Null),
        2 => eventbridge(name, id, time, &Value::from("{}")),
        3 => {
            let b = cloudevents(name, id, time, body);
            let text = String::from_utf8_lossy(&b).replacen("\"1.0\"", "\"0.3\"", 1);
            text.into_bytes()
        }
        _ => b"<html><body>502 Bad Gateway</body></html>".to_vec(),
    };
    Sample {
        bytes,
        status: Status::Malformed,
    }
}

impl Iterator for Mix {
    type Item = Sample;
    fn next(&mut self) -> Option<Sample> {
        let &(idx, protected) = self.order.get(self.pos)?;
        let sample = self.make(idx, protected);
        self.pos += 1;
        Some(sample)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.order.len() - self.pos;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Mix {}

/// `n` realistic messages (see [`Mix`]), bytes only.
pub fn realistic_mix(n: usize, seed: u64) -> Vec<Vec<u8>> {
    Mix::new(n, seed).map(|s| s.bytes).collect()
}

#[cfg(test)]
mod tests;
