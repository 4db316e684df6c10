//! One row of `audit.events` as one line of an archive file (JSON Lines): written from a
//! [`RowView`] and read back into an owned [`ArchivedRow`] that gives the same view again, for
//! rehashing. The fields are every column by name, in column order after `leaf_index`,
//! generated from `columns::events_row!` like the row view itself. Pure.
//!
//! Encoding: text a JSON string, integers numbers, timestamps RFC 3339 UTC strings with six
//! fractional digits (`2026-11-26T03:00:00.123456Z`; a year outside 0000–9999 with its sign, as
//! ISO 8601's expanded years), jsonb the JSON value itself with its text kept, bytea lowercase
//! hex, NULL `null`. A jsonb column holding the JSON value `null` therefore reads back as SQL
//! NULL; this system never stores one (headers are an object, errors and unknown fields arrays,
//! a payload an object).

use std::fmt;
use std::io::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::error::Category;
use serde_json::value::RawValue;

use crate::row::columns::{col_ty, events_row, AsView};
use crate::row::hex;
use crate::row::view::RowView;

mod time;
use time::{parse_time, time};

/// The first field of a line: the row's leaf index in the witnessed log.
pub(crate) const LEAF_INDEX: &str = "leaf_index";

/// Why a line is not an archived row. Never quotes a value (payloads are personal data); an
/// unknown field is named only when its name is a short plain identifier.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LineError {
    #[error("an archive line is not UTF-8 text")]
    NotUtf8,
    #[error("an archive line holds a line break before its end")]
    LineBreak,
    #[error("an archive line ends inside its JSON object (truncated)")]
    Truncated,
    #[error("an archive line is not valid JSON (at character {column})")]
    Syntax { column: usize },
    #[error("an archive line is not one JSON object")]
    NotObject,
    #[error("an archive line has an unknown field {}", shown(.name))]
    Unknown { name: Option<String> },
    #[error("an archive line has the field `{0}` twice")]
    Duplicate(&'static str),
    #[error("an archive line has no field `{0}`")]
    Missing(&'static str),
    #[error("an archive line's field `{field}` {why}")]
    Value {
        field: &'static str,
        why: &'static str,
    },
}

fn shown(name: &Option<String>) -> String {
    match name {
        Some(n) => format!("`{n}`"),
        None => "(its name is not shown: not a short plain identifier)".to_owned(),
    }
}

/// An unknown field's name, when it is safe to show in an error.
fn plain(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    ok.then(|| name.to_owned())
}

/// A column type's value: its writer and its reader of one non-null JSON value.
macro_rules! codec {
    (Text) => {
        (string, read_text)
    };
    (Jsonb) => {
        (json, read_json)
    };
    (Int8) => {
        (number::<i64>, read_int::<i64>)
    };
    (Int4) => {
        (number::<i32>, read_int::<i32>)
    };
    (Timestamptz) => {
        (time, read_time)
    };
    (Bytea) => {
        (bytes, read_bytes)
    };
}

macro_rules! write_value {
    ($out:ident, $x:expr, $t:ident req) => {
        (codec!($t).0)($out, $x)
    };
    ($out:ident, $x:expr, $t:ident opt) => {
        nullable($out, $x, codec!($t).0)
    };
}

macro_rules! read_value {
    ($raw:ident, $f:ident, $t:ident req) => {
        match not_null($raw) {
            Some(r) => (codec!($t).1)(r, $f),
            None => Err(LineError::Value {
                field: $f,
                why: "is null in a NOT NULL column",
            }),
        }
    };
    ($raw:ident, $f:ident, $t:ident opt) => {
        not_null($raw).map(|r| (codec!($t).1)(r, $f)).transpose()
    };
}

macro_rules! archive_line {
    ($($v:ident $c:ident $t:ident $n:ident),* $(,)?) => {
        /// One archived row, owned: its leaf index and every column of `audit.events` (jsonb as
        /// the text of its JSON value, times as Unix microseconds).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct ArchivedRow {
            leaf_index: u64,
            $($v: col_ty!((String, Vec<u8>, i64) $t $n),)*
        }

        impl ArchivedRow {
            /// The row's leaf index in the witnessed log.
            pub fn leaf_index(&self) -> u64 {
                self.leaf_index
            }

            /// The row as the view `verify` checks and rehashes.
            pub fn view(&self) -> RowView<'_> {
                RowView {
                    $($v: AsView::as_view(&self.$v),)*
                }
            }

            fn from_fields(fields: Vec<(Key, &RawValue)>) -> Result<ArchivedRow, LineError> {
                let mut leaf_index: Option<u64> = None;
                $(let mut $v: Option<col_ty!((String, Vec<u8>, i64) $t $n)> = None;)*
                for (key, raw) in fields {
                    let field = match key {
                        Key::Known(f) => f,
                        Key::Unknown(name) => return Err(LineError::Unknown { name }),
                    };
                    match field {
                        LEAF_INDEX => set(&mut leaf_index, field, read_int::<u64>(raw, field)?)?,
                        $(stringify!($c) => set(&mut $v, field, read_value!(raw, field, $t $n)?)?,)*
                        _ => return Err(LineError::Unknown { name: plain(field) }),
                    }
                }
                Ok(ArchivedRow {
                    leaf_index: leaf_index.ok_or(LineError::Missing(LEAF_INDEX))?,
                    $($v: $v.ok_or(LineError::Missing(stringify!($c)))?,)*
                })
            }
        }

        /// The field a name is, if it is one.
        fn known(name: &str) -> Option<&'static str> {
            match name {
                LEAF_INDEX => Some(LEAF_INDEX),
                $(stringify!($c) => Some(stringify!($c)),)*
                _ => None,
            }
        }

        /// Appends `row` as one line: a JSON object with `leaf_index`, then every column by name
        /// in column order, then `\n`.
        pub fn write_line(row: &RowView<'_>, leaf_index: u64, out: &mut Vec<u8>) {
            out.extend_from_slice(b"{\"");
            out.extend_from_slice(LEAF_INDEX.as_bytes());
            out.extend_from_slice(b"\":");
            number(out, leaf_index);
            $(
                out.extend_from_slice(concat!(",\"", stringify!($c), "\":").as_bytes());
                write_value!(out, row.$v, $t $n);
            )*
            out.extend_from_slice(b"}\n");
        }
    };
}

events_row!(archive_line);

/// Reads one line (its `\n`, or `\r\n`, optional): exactly the fields [`write_line`] writes, in
/// any order, each once.
pub fn parse_line(line: &[u8]) -> Result<ArchivedRow, LineError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A line break inside would split the line for every JSON Lines reader; refusing it also
    // keeps a jsonb value's text free of them, so writing it back is exact.
    if line.iter().any(|&b| b == b'\n' || b == b'\r') {
        return Err(LineError::LineBreak);
    }
    let text = std::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;
    let fields: Fields<'_> = serde_json::from_str(text).map_err(|e| match e.classify() {
        Category::Eof => LineError::Truncated,
        Category::Data => LineError::NotObject,
        Category::Syntax | Category::Io => LineError::Syntax { column: e.column() },
    })?;
    ArchivedRow::from_fields(fields.0)
}

/// A field's name as read: one of the line's fields, or another (shown only when plain).
enum Key {
    Known(&'static str),
    Unknown(Option<String>),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(known(v).map_or_else(|| Key::Unknown(plain(v)), Key::Known))
            }
        }
        d.deserialize_str(V)
    }
}

/// A line's fields in order, each value's JSON text borrowed; duplicates kept, so that they are
/// refused rather than one silently winning.
struct Fields<'a>(Vec<(Key, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut out = Vec::with_capacity(crate::row::columns::EVENTS.len() + 1);
                while let Some(entry) = map.next_entry::<Key, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn set<T>(slot: &mut Option<T>, field: &'static str, v: T) -> Result<(), LineError> {
    if slot.is_some() {
        return Err(LineError::Duplicate(field));
    }
    *slot = Some(v);
    Ok(())
}

fn not_null(raw: &RawValue) -> Option<&RawValue> {
    (raw.get() != "null").then_some(raw)
}

fn read_text(raw: &RawValue, field: &'static str) -> Result<String, LineError> {
    serde_json::from_str::<String>(raw.get()).map_err(|_| LineError::Value {
        field,
        why: "is not a string",
    })
}

fn read_json(raw: &RawValue, _: &'static str) -> Result<String, LineError> {
    Ok(raw.get().to_owned())
}

fn read_int<T: serde::de::DeserializeOwned>(
    raw: &RawValue,
    field: &'static str,
) -> Result<T, LineError> {
    serde_json::from_str::<T>(raw.get()).map_err(|_| LineError::Value {
        field,
        why: "is not an integer in its column's range",
    })
}

fn read_time(raw: &RawValue, field: &'static str) -> Result<i64, LineError> {
    parse_time(&read_text(raw, field)?).ok_or(LineError::Value {
        field,
        why: "is not a UTC time written YYYY-MM-DDTHH:MM:SS.ffffffZ",
    })
}

fn read_bytes(raw: &RawValue, field: &'static str) -> Result<Vec<u8>, LineError> {
    unhex(&read_text(raw, field)?).ok_or(LineError::Value {
        field,
        why: "is not lowercase hex of whole bytes",
    })
}

fn nullable<T>(out: &mut Vec<u8>, v: Option<T>, write: fn(&mut Vec<u8>, T)) {
    match v {
        Some(x) => write(out, x),
        None => out.extend_from_slice(b"null"),
    }
}

fn number<T: fmt::Display>(out: &mut Vec<u8>, n: T) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{n}");
}

/// A JSON string: `"` and `\` escaped, and every control character.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A jsonb column's text, embedded as the JSON value it is. PostgreSQL's text of a jsonb value
/// is already one compact line, so it goes in verbatim; a text with whitespace around it or a
/// line break between tokens goes in as the same value without them (a raw line break can only
/// be whitespace in valid JSON). A text that is not JSON cannot come from a jsonb column; it is
/// kept as a JSON string rather than written as a broken line.
fn json(out: &mut Vec<u8>, text: &str) {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(v) if v.get().len() == text.len() && !text.contains(['\n', '\r']) => {
            out.extend_from_slice(text.as_bytes());
        }
        Ok(v) => out.extend(v.get().bytes().map(|b| match b {
            b'\n' | b'\r' => b' ',
            b => b,
        })),
        Err(_) => string(out, text),
    }
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(hex(b).as_bytes());
    out.push(b'"');
}

/// Lowercase hex back to bytes, strictly (as the archive writes it): `None` for anything else.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let b = s.as_bytes();
    if b.len() % 2 != 0 {
        return None;
    }
    b.chunks_exact(2)
        .map(|p| Some((nibble(p[0])? << 4) | nibble(p[1])?))
        .collect()
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests;
