//! The decoded columns a bundle shows beside each leaf, as evidence: what a parsed leaf says
//! each column holds (one rule, by which `prove` writes them and the verifier checks them), the
//! time format, and the comparison that names the first column a bundle relabels. Pure.
//!
//! Representation (README, "Checking an evidence bundle"): texts as JSON strings; integers as
//! JSON numbers; the JSON columns (`headers`, `errors`, `unknown_fields`) and the `payload` as
//! the JSON values themselves, compared as JSON (numbers by value, objects as maps); times as
//! `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC), compared as microseconds; `payload_place` as
//! `[start, end]`, byte offsets into `raw`; NULL as `null`.

use chrono::{DateTime, Datelike, NaiveDate};

use super::json::{self, Json, Keys};
use crate::canon::Canon;

/// Every key `columns` may hold: `stream` and `stream_seq` (also at the entry's top level),
/// then the columns `prove` writes, in its order.
pub const COLUMNS: [&str; 20] = [
    "stream",
    "stream_seq",
    "published_at",
    "received_at",
    "subject",
    "delivery_count",
    "headers",
    "envelope",
    "event_id",
    "event_type",
    "event_version",
    "status",
    "errors",
    "unknown_fields",
    "account_number",
    "occurred_at",
    "payload_place",
    "payload",
    "payload_error",
    "catalogue",
];

/// The columns only a version 2 leaf covers.
const V2_ONLY: [&str; 4] = ["payload_place", "payload", "payload_error", "catalogue"];

/// The columns a version 3 leaf covers only through its commitment: shown when the entry opens
/// it, and absent (never shown, never null) once the row is erased.
pub const PERSONAL: [&str; 6] = [
    "headers",
    "event_id",
    "errors",
    "account_number",
    "payload_place",
    "payload",
];

/// Whether a parsed leaf is a version 3 row whose opening is not given (erased).
fn erased(c: &Canon<'_>) -> bool {
    c.commitment.is_some() && c.salt.is_none()
}

/// The keys `columns` must hold, no more and no fewer: in `event-audit-bundle/2`, every column
/// the entry's leaf covers (for a version 1 leaf, none of `V2_ONLY`); in
/// `event-audit-bundle/1`, the nineteen columns its `prove` wrote (with `stream` and
/// `stream_seq`, without `payload_place`), whatever the leaf. `None` for a leaf version no
/// format defines. A later format may let an entry mark a column as withheld (an erased row's
/// payload): that will be a marker of its own, named here, never a key left out.
pub fn defined(format: &str, leaf_version: u8, erased: bool) -> Option<Vec<&'static str>> {
    let keys = COLUMNS.iter().copied();
    match (format, leaf_version) {
        (super::FORMAT_V1, 1 | 2) => Some(keys.filter(|k| *k != "payload_place").collect()),
        (super::FORMAT_V1, _) => None,
        (f, 3) if f == super::FORMAT || f == super::FORMAT_V4 => Some(
            keys.skip(2)
                .filter(|k| !erased || !PERSONAL.contains(k))
                .collect(),
        ),
        (_, 2) => Some(keys.skip(2).collect()),
        (_, 1) => Some(keys.skip(2).filter(|k| !V2_ONLY.contains(k)).collect()),
        _ => None,
    }
}

/// What a leaf says a column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// This value, compared as JSON.
    Value(Json),
    /// A time in microseconds since the Unix epoch, or NULL.
    Time(Option<i64>),
    /// Nothing the bundle can show: the leaf's value is not JSON (why).
    Unreadable(&'static str),
}

/// A column the bundle shows other than the leaf says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldFault {
    #[error("field {field}: the bundle says {shown}, the leaf says {leaf}")]
    Differs {
        field: String,
        shown: String,
        leaf: String,
    },
    #[error("field {field}: not a field the verifier checks (nothing unchecked may be shown as evidence)")]
    Unknown { field: String },
    #[error("field {field}: the bundle says {shown}, but {why}")]
    Unreadable {
        field: String,
        shown: String,
        why: &'static str,
    },
}

/// The time text `prove` writes; `None` outside the years 0000 to 9999.
pub fn time_text(us: i64) -> Option<String> {
    let t = DateTime::from_timestamp_micros(us)?;
    (0..=9999)
        .contains(&t.year())
        .then(|| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
}

/// A time text as microseconds: `YYYY-MM-DDTHH:MM:SS[.f]Z`, UTC, one to nine fraction digits;
/// `None` when malformed, not a real date and time, or finer than a microsecond.
pub fn time_us(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let d = b.get(r)?;
        d.iter().all(u8::is_ascii_digit).then_some(())?;
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if b.len() < 20 || seps.iter().any(|&(i, c)| b[i] != c) || b[b.len() - 1] != b'Z' {
        return None;
    }
    let nanos = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', f @ ..] if (1..=9).contains(&f.len()) && f.iter().all(u8::is_ascii_digit) => {
            let f = std::str::from_utf8(f).ok()?;
            format!("{f:0<9}").parse::<u32>().ok()?
        }
        _ => return None,
    };
    if nanos % 1000 != 0 {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(digits(0..4)? as i32, digits(5..7)?, digits(8..10)?)?;
    let t = date.and_hms_micro_opt(
        digits(11..13)?,
        digits(14..16)?,
        digits(17..19)?,
        nanos / 1000,
    )?;
    Some(t.and_utc().timestamp_micros())
}

fn text(t: Option<&str>) -> Json {
    t.map_or(Json::Null, |s| Json::Str(s.to_owned()))
}

fn int(n: impl ToString) -> Json {
    Json::Num(n.to_string())
}

/// A JSON column of the leaf (canonical JSON text, or NULL).
fn json_column(t: Option<&str>, why: &'static str) -> Want {
    match t.map(|t| json::parse(t, Keys::LastWins)) {
        None => Want::Value(Json::Null),
        Some(Ok(v)) => Want::Value(v),
        Some(Err(_)) => Want::Unreadable(why),
    }
}

/// What the leaf `c` says column `key` holds; `None` for a key no bundle may show.
pub fn want(key: &str, c: &Canon<'_>) -> Option<Want> {
    if erased(c) && PERSONAL.contains(&key) {
        return None;
    }
    let v2 = c.catalogue.is_some();
    if !v2 && V2_ONLY.contains(&key) {
        return Some(Want::Value(Json::Null));
    }
    let v = match key {
        "stream" => Json::Str(c.stream.to_owned()),
        "stream_seq" => int(c.stream_seq),
        "published_at" => return Some(Want::Time(Some(c.published_at_us))),
        "received_at" => return Some(Want::Time(Some(c.received_at_us))),
        "occurred_at" => return Some(Want::Time(c.occurred_at_us)),
        "subject" => Json::Str(c.subject.to_owned()),
        "delivery_count" => int(c.delivery_count),
        "headers" => return Some(json_column(c.headers, "the leaf's headers are not JSON")),
        "errors" => return Some(json_column(c.errors, "the leaf's errors are not JSON")),
        "unknown_fields" => {
            return Some(json_column(
                c.unknown_fields,
                "the leaf's unknown fields are not JSON",
            ))
        }
        "envelope" => text(c.envelope),
        "event_id" => text(c.event_id),
        "event_type" => text(c.event_type),
        "event_version" => text(c.event_version),
        "status" => Json::Str(c.status.to_owned()),
        "account_number" => text(c.account_number),
        "payload_error" => text(c.payload_error),
        "catalogue" => text(c.catalogue),
        "payload_place" => c
            .payload
            .map_or(Json::Null, |(a, z)| Json::Arr(vec![int(a), int(z)])),
        "payload" => {
            let Some((a, z)) = c.payload else {
                return Some(Want::Value(Json::Null));
            };
            let place = usize::try_from(a).ok().zip(usize::try_from(z).ok());
            let slice = place.and_then(|(a, z)| c.raw.get(a..z));
            let text = slice.and_then(|s| std::str::from_utf8(s).ok());
            return Some(match text.map(|t| json::parse(t, Keys::LastWins)) {
                Some(Ok(v)) => Want::Value(v),
                _ => Want::Unreadable("the leaf's payload place does not hold JSON"),
            });
        }
        _ => return None,
    };
    Some(Want::Value(v))
}

/// Checks the value a bundle shows for `key` (named `field` in messages) against the leaf.
pub fn check(field: &str, key: &str, shown: &Json, c: &Canon<'_>) -> Result<(), FieldFault> {
    let differs = |leaf: String| FieldFault::Differs {
        field: field.to_owned(),
        shown: json::shown(shown),
        leaf,
    };
    match want(key, c) {
        None => Err(FieldFault::Unknown {
            field: field.to_owned(),
        }),
        Some(Want::Value(v)) if json::same(shown, &v) => Ok(()),
        Some(Want::Value(v)) => Err(differs(json::shown(&v))),
        Some(Want::Time(t)) => {
            let ok = match (shown, t) {
                (Json::Null, None) => true,
                (Json::Str(s), Some(us)) => time_us(s) == Some(us),
                _ => false,
            };
            match t {
                _ if ok => Ok(()),
                None => Err(differs("null".into())),
                Some(us) => Err(differs(time_text(us).map_or_else(
                    || format!("{us} microseconds since 1970"),
                    |t| json::shown(&Json::Str(t)),
                ))),
            }
        }
        Some(Want::Unreadable(why)) => Err(FieldFault::Unreadable {
            field: field.to_owned(),
            shown: json::shown(shown),
            why,
        }),
    }
}

/// The columns `prove` shows for a leaf: every column it covers (for a version 1 leaf, none of
/// the payload's, the payload error or the catalogue), in `COLUMNS` order after `stream` and
/// `stream_seq` (which the entry carries itself). `Err` names a column whose value the leaf
/// holds but no bundle can show (not JSON, a time outside the years 0000 to 9999): a bundle
/// shows every column, so there is then no bundle for that row.
pub fn columns(c: &Canon<'_>) -> Result<Json, &'static str> {
    let v2 = c.catalogue.is_some();
    let mut out = Vec::new();
    for key in &COLUMNS[2..] {
        if (!v2 && V2_ONLY.contains(key)) || (erased(c) && PERSONAL.contains(key)) {
            continue;
        }
        let v = match want(key, c) {
            Some(Want::Value(v)) => v,
            Some(Want::Time(None)) => Json::Null,
            Some(Want::Time(Some(us))) => Json::Str(time_text(us).ok_or(*key)?),
            _ => return Err(*key),
        };
        out.push(((*key).to_owned(), v));
    }
    Ok(Json::Obj(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_at_the_microsecond() {
        for us in [
            0,
            1,
            -1,
            1_700_000_000_123_456,
            -62_167_219_200_000_000,
            253_402_300_799_999_999,
        ] {
            let t = time_text(us).expect("in range");
            assert_eq!(time_us(&t), Some(us), "{t}");
        }
        assert_eq!(time_text(0).as_deref(), Some("1970-01-01T00:00:00.000000Z"));
        assert_eq!(time_text(-62_167_219_200_000_001), None);
        assert_eq!(time_us("2024-02-29T23:59:59Z"), Some(1_709_251_199_000_000));
        assert_eq!(
            time_us("2024-02-29T23:59:59.5Z"),
            Some(1_709_251_199_500_000)
        );
        assert_eq!(
            time_us("2024-02-29T23:59:59.123456000Z"),
            time_us("2024-02-29T23:59:59.123456Z")
        );
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T23:59:60Z",
            "2024-01-01T00:00:00.1234567Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00.0000000000Z",
            "2024-01-01T00:00:00+00:00",
            "2024-01-01 00:00:00Z",
            "2024-01-01t00:00:00z",
            "+2024-01-01T00:00:00Z",
            "2024-1-01T00:00:00Z",
            "2024-01-01T00:00:00Z\n",
        ] {
            assert_eq!(time_us(bad), None, "{bad}");
        }
    }
}
