//! The columns of `audit.events`, written once: the writer's COPY, `verify`'s SELECT and the
//! typed row it reads all follow this list (the migration is the only other place).

/// A column's PostgreSQL type, as far as reading and writing it differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Text,
    Int4,
    Int8,
    Timestamptz,
    Jsonb,
    Bytea,
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub(crate) ty: Ty,
}

const fn col(name: &'static str, ty: Ty) -> Column {
    Column { name, ty }
}

/// Whether a row of `audit.events` (aliased `e`) claims its envelope id: it has an id, an event
/// name and a payload text (stored as jsonb, or refused with a reason), which is when its record
/// had an `id_digest`. Ingest's lookup of an id's first occurrence and `verify`'s recomputed
/// findings both select with it.
pub(crate) const CLAIMS_ITS_ID: &str = "(e.event_id IS NOT NULL AND e.event_type IS NOT NULL \
     AND (e.payload IS NOT NULL OR e.payload_error IS NOT NULL))";

/// The columns of `audit.events`, in COPY order, written once. Each entry: the field of
/// [`crate::row::view::RowView`], the column, its type, and `req` (NOT NULL) or `opt`. The macro
/// hands the list to `$m!`, which generates from it: [`EVENTS`] here; in `row::view` the row
/// view, its binary COPY writer and its parser; in `log::read` the row read by name; in
/// `archive::line` the archived row and its line. Each shape's field types come from the one
/// table [`col_ty`], owned values become the view through [`AsView`]. Adding
/// a column is a line here and a migration (and the places that give it a value: a record's
/// view, the canonical encoding, if the hash is to cover it).
macro_rules! events_row {
    ($m:ident) => {
        $m! {
            stream stream Text req,
            stream_seq stream_seq Int8 req,
            published_at_us published_at Timestamptz req,
            received_at_us received_at Timestamptz req,
            subject subject Text req,
            delivery_count delivery_count Int4 req,
            headers headers Jsonb opt,
            envelope envelope Text opt,
            event_id event_id Text opt,
            event_type event_type Text opt,
            event_version event_version Text opt,
            status status Text req,
            errors errors Jsonb opt,
            unknown_fields unknown_fields Jsonb opt,
            payload payload Jsonb opt,
            account_number account_number Text opt,
            occurred_at_us occurred_at Timestamptz opt,
            payload_error payload_error Text opt,
            catalogue catalogue Text opt,
            raw raw Bytea req,
            salt salt Bytea opt,
            commitment commitment Bytea opt,
            batch_id batch_id Int8 req,
            row_hash row_hash Bytea req,
        }
    };
}
pub(crate) use events_row;

/// A column's Rust type in one of the row's shapes, given that shape's types of text (and jsonb
/// text), bytes and times: `(&'a str, &'a [u8], i64)` for the row view, `(String, Vec<u8>, i64)`
/// for an archived row, `(String, Vec<u8>, DateTime<Utc>)` for a row read by name. The one table
/// of the columns' types, from which every shape's fields are generated.
macro_rules! col_ty {
    (($s:ty, $b:ty, $t:ty) Text req) => { $s };
    (($s:ty, $b:ty, $t:ty) Text opt) => { Option<$s> };
    (($s:ty, $b:ty, $t:ty) Jsonb req) => { $s };
    (($s:ty, $b:ty, $t:ty) Jsonb opt) => { Option<$s> };
    (($s:ty, $b:ty, $t:ty) Int8 req) => { i64 };
    (($s:ty, $b:ty, $t:ty) Int4 req) => { i32 };
    (($s:ty, $b:ty, $t:ty) Timestamptz req) => { $t };
    (($s:ty, $b:ty, $t:ty) Timestamptz opt) => { Option<$t> };
    (($s:ty, $b:ty, $t:ty) Bytea req) => { $b };
    (($s:ty, $b:ty, $t:ty) Bytea opt) => { Option<$b> };
}
pub(crate) use col_ty;

/// An owned column value as the row view has it (text borrowed, times as Unix microseconds): by
/// its type alone, so one set of impls serves every owned shape of the row.
pub(crate) trait AsView<'a> {
    type View;
    fn as_view(&'a self) -> Self::View;
}

impl<'a> AsView<'a> for String {
    type View = &'a str;
    fn as_view(&'a self) -> &'a str {
        self
    }
}

impl<'a> AsView<'a> for Vec<u8> {
    type View = &'a [u8];
    fn as_view(&'a self) -> &'a [u8] {
        self
    }
}

impl AsView<'_> for i64 {
    type View = i64;
    fn as_view(&self) -> i64 {
        *self
    }
}

impl AsView<'_> for i32 {
    type View = i32;
    fn as_view(&self) -> i32 {
        *self
    }
}

impl AsView<'_> for chrono::DateTime<chrono::Utc> {
    type View = i64;
    fn as_view(&self) -> i64 {
        self.timestamp_micros()
    }
}

impl<'a, T: AsView<'a>> AsView<'a> for Option<T> {
    type View = Option<T::View>;
    fn as_view(&'a self) -> Option<T::View> {
        self.as_ref().map(T::as_view)
    }
}

macro_rules! column_list {
    ($($v:ident $c:ident $t:ident $n:ident),* $(,)?) => {
        &[$(col(stringify!($c), Ty::$t)),*]
    };
}

/// `audit.events`, in COPY order.
pub const EVENTS: &[Column] = events_row!(column_list);

/// `stream, stream_seq, ...` for `COPY audit.events (...)`.
pub fn copy_list() -> String {
    EVENTS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}

/// The SELECT list reading every column by name, jsonb as its text.
pub fn select_list(alias: &str) -> String {
    EVENTS
        .iter()
        .map(|c| match c.ty {
            Ty::Jsonb => format!("{alias}.{0}::text AS {0}", c.name),
            _ => format!("{alias}.{}", c.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number of columns, as a COPY tuple header states it.
pub(crate) fn count() -> i16 {
    i16::try_from(EVENTS.len()).unwrap_or(i16::MAX)
}

/// Whether a repeat of an envelope id is a duplicate of its first occurrence (else a
/// conflict): the same event name and version, and the same message byte for byte or payload
/// texts that are the same JSON value ([`payload_digest`]; two texts that do not parse count as
/// the same). Ingest decides a finding's kind by this rule, and `verify` recomputes it.
pub(crate) fn same_event(
    same_name: bool,
    same_raw: bool,
    payloads: (Option<[u8; 32]>, Option<[u8; 32]>),
) -> bool {
    same_name && (same_raw || matches!(payloads, (Some(a), Some(b)) if a == b))
}

/// A digest of the JSON value a payload text holds, equal for two texts exactly when they parse
/// to equal `serde_json` values (object keys in any order; numbers compared as `serde_json`
/// compares them: an integer is not a float, -0.0 equals 0.0); one fixed digest for every text
/// that does not parse.
pub(crate) fn payload_digest(text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => canonical(&v, &mut h),
        Err(_) => h.update([0xff]),
    }
    h.finalize().into()
}

fn canonical(v: &serde_json::Value, h: &mut sha2::Sha256) {
    use serde_json::Value;
    use sha2::Digest;
    match v {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.update(b"u");
                h.update(u.to_be_bytes());
            } else if let Some(i) = n.as_i64() {
                h.update(b"i");
                h.update(i.to_be_bytes());
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                h.update(b"d");
                h.update((if f == 0.0 { 0.0f64 } else { f }).to_be_bytes());
            }
        }
        Value::String(s) => {
            h.update(b"s");
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        }
        Value::Array(a) => {
            h.update(b"a");
            h.update((a.len() as u64).to_be_bytes());
            for x in a {
                canonical(x, h);
            }
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            h.update(b"o");
            h.update((keys.len() as u64).to_be_bytes());
            for k in keys {
                h.update((k.len() as u64).to_be_bytes());
                h.update(k.as_bytes());
                canonical(&o[k], h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_digests_follow_json_value_equality() {
        let d = payload_digest;
        assert_eq!(
            d(r#"{"a":1,"b":[true,null]}"#),
            d(r#"{ "b": [true, null], "a": 1 }"#)
        );
        assert_ne!(
            d(r#"{"a":1}"#),
            d(r#"{"a":1.0}"#),
            "an integer is not a float"
        );
        assert_ne!(d(r#"{"a":100}"#), d(r#"{"a":1e2}"#));
        assert_eq!(d(r#"{"a":-0.0}"#), d(r#"{"a":0.0}"#));
        assert_eq!(d(r#"{"a":"\u0041"}"#), d(r#"{"a":"A"}"#));
        assert_ne!(d(r#"["ab"]"#), d(r#"["a","b"]"#));
        assert_eq!(
            d("{"),
            d("not json"),
            "texts that do not parse count as the same"
        );
        assert_ne!(d("{"), d("null"));
        // The rule: a different name is always a conflict; the same raw message a duplicate.
        let p = Some(d("{}"));
        assert!(same_event(true, false, (p, p)));
        assert!(!same_event(false, true, (p, p)));
        assert!(same_event(true, true, (None, None)));
        assert!(!same_event(true, false, (p, None)));
        // The same as comparing serde_json values directly.
        let pairs = [
            ("1", "1"),
            ("1", "1.0"),
            ("[1,2]", "[2,1]"),
            (r#"{"x":{"y":1}}"#, r#"{"x":{"y":1}}"#),
        ];
        for (a, b) in pairs {
            let values = serde_json::from_str::<serde_json::Value>(a).ok()
                == serde_json::from_str::<serde_json::Value>(b).ok();
            assert_eq!(d(a) == d(b), values, "{a} {b}");
        }
    }
}
