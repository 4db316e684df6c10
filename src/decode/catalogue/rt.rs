//! Decoding runtime for the generated catalogue types: walks a payload once with serde, collects
//! every failing field with its path, and never builds a `serde_json::Value`.
//!
//! Generated structs implement `Struct` (a field table plus `put`/`finish`); everything else,
//! scalars, arrays, objects and the struct walk itself, lives here.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Serialize;

use super::kind::JsonKind;

/// A stable error code: what an auditor filters on. The message says the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A required field is absent.
    MissingField,
    /// A required field (or an array element) is JSON `null`.
    NullValue,
    /// The value has the wrong JSON type (an integer field with a fraction included).
    InvalidType,
    /// An integer that does not fit in i64.
    OutOfRange,
    /// The same key twice in one object.
    DuplicateField,
    /// Envelope level: the input is not JSON.
    NotJson,
    /// Envelope level: the input is JSON but not an object.
    NotAnObject,
    /// Envelope level: no event name could be found.
    NoEventName,
    /// Envelope level: the envelope carries no payload object.
    NoPayload,
    /// Envelope level: an envelope field has the wrong type or value.
    InvalidEnvelope,
    /// Bus level: the message's NATS header block cannot be parsed (the message was fetched
    /// by its stream sequence and recorded with the raw block).
    InvalidHeaders,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MissingField => "missing_field",
            ErrorCode::NullValue => "null_value",
            ErrorCode::InvalidType => "invalid_type",
            ErrorCode::OutOfRange => "out_of_range",
            ErrorCode::DuplicateField => "duplicate_field",
            ErrorCode::NotJson => "not_json",
            ErrorCode::NotAnObject => "not_an_object",
            ErrorCode::NoEventName => "no_event_name",
            ErrorCode::NoPayload => "no_payload",
            ErrorCode::InvalidEnvelope => "invalid_envelope",
            ErrorCode::InvalidHeaders => "invalid_headers",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failing field. `path` is dot-delimited with zero-based array indexes
/// (`supply_points.0.market_name`), like the REST spec's `attr`. Messages never quote values:
/// payloads carry personal data. Read back (`verify`, `reprocess`) with no key it does not know:
/// a key added to a stored errors object cannot vanish in the re-canonicalisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldError {
    pub path: String,
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, Copy)]
enum Seg {
    Field(&'static str),
    Index(usize),
}

/// What one decode collects besides the value: errors, unknown fields, the account number.
#[derive(Debug, Default)]
pub struct Ctx {
    path: Vec<Seg>,
    pub errors: Vec<FieldError>,
    pub unknown_fields: Vec<String>,
    /// The JSON kind of each of `unknown_fields`, same order.
    pub unknown_kinds: Vec<JsonKind>,
    /// Which declared top-level fields the payload has (bit = catalogue order).
    pub declared_seen: u64,
    /// A top-level string field `account_number`, captured even when the payload is invalid.
    pub account_number: Option<String>,
}

impl Ctx {
    pub fn new() -> Self {
        Self::default()
    }

    fn path_with(&self, last: Option<&str>) -> String {
        let mut out = String::new();
        for seg in &self.path {
            if !out.is_empty() {
                out.push('.');
            }
            match seg {
                Seg::Field(name) => out.push_str(name),
                Seg::Index(i) => out.push_str(&i.to_string()),
            }
        }
        if let Some(last) = last {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(last);
        }
        out
    }

    fn error(&mut self, last: Option<&str>, code: ErrorCode, message: String) {
        let path = self.path_with(last);
        self.errors.push(FieldError {
            path,
            code,
            message,
        });
    }

    pub(super) fn mismatch<T>(&mut self, expected: &str, found: &str) -> Decoded<T> {
        let code = if found == "integer out of range" {
            ErrorCode::OutOfRange
        } else {
            ErrorCode::InvalidType
        };
        let at = self.path_with(None);
        let message = format!("{at}: expected {expected}, found {found}");
        self.error(None, code, message);
        Decoded::Bad
    }
}

/// The outcome of decoding one value. `Bad` means the errors are already in the [`Ctx`].
#[derive(Debug)]
pub enum Decoded<T> {
    Ok(T),
    Null,
    Bad,
}

impl<T> Decoded<T> {
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Decoded<U> {
        match self {
            Decoded::Ok(v) => Decoded::Ok(f(v)),
            Decoded::Null => Decoded::Null,
            Decoded::Bad => Decoded::Bad,
        }
    }
}

/// A type the catalogue can name: decodes itself, recording what is wrong instead of stopping.
pub(crate) trait Decode: Sized {
    /// How the type is named in error messages ("string", "integer", "object", ...).
    const EXPECTED: &'static str;
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error>;
    /// Only strings can be an account number.
    fn as_account_number(&self) -> Option<&str> {
        None
    }
}

/// Implemented by every generated struct.
pub(crate) trait Struct: Sized {
    type Slots: Default;
    /// Field names in catalogue order.
    const NAMES: &'static [&'static str];
    fn index(key: &str) -> Option<usize>;
    fn put<'de, A: MapAccess<'de>>(
        slots: &mut Self::Slots,
        idx: usize,
        map: &mut A,
        cx: &mut Ctx,
    ) -> Result<(), A::Error>;
    fn finish(slots: Self::Slots, cx: &mut Ctx) -> Option<Self>;
}

/// One field's state while its object is walked.
#[derive(Debug, Default)]
pub(crate) enum Slot<T> {
    #[default]
    Absent,
    Null,
    Bad,
    Val(T),
}

struct Seed<'c, T>(&'c mut Ctx, PhantomData<T>);

impl<'de, T: Decode> DeserializeSeed<'de> for Seed<'_, T> {
    type Value = Decoded<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        T::decode(d, self.0)
    }
}

/// Decodes the value of field `name` into `slot`.
pub(crate) fn put<'de, A: MapAccess<'de>, T: Decode>(
    slot: &mut Slot<T>,
    map: &mut A,
    cx: &mut Ctx,
    name: &'static str,
    required: bool,
) -> Result<(), A::Error> {
    cx.path.push(Seg::Field(name));
    let decoded = map.next_value_seed(Seed::<T>(cx, PhantomData));
    let decoded = match decoded {
        Ok(d) => d,
        Err(e) => {
            cx.path.pop();
            return Err(e);
        }
    };
    *slot = match decoded {
        Decoded::Ok(v) => {
            if cx.path.len() == 1 && name == "account_number" {
                cx.account_number = v.as_account_number().map(str::to_owned);
            }
            Slot::Val(v)
        }
        Decoded::Null => {
            if required {
                let at = cx.path_with(None);
                cx.error(
                    None,
                    ErrorCode::NullValue,
                    format!("{at}: required field is null"),
                );
            }
            Slot::Null
        }
        Decoded::Bad => Slot::Bad,
    };
    cx.path.pop();
    Ok(())
}

/// Final value of a required field; records `missing_field` when absent.
pub(crate) fn required<T>(slot: Slot<T>, cx: &mut Ctx, name: &'static str) -> Option<T> {
    match slot {
        Slot::Val(v) => Some(v),
        Slot::Absent => {
            let at = cx.path_with(Some(name));
            cx.error(
                Some(name),
                ErrorCode::MissingField,
                format!("{at}: required field is missing"),
            );
            None
        }
        Slot::Null | Slot::Bad => None,
    }
}

/// Final value of an optional field: `None` inside when absent or null, `None` outside when bad.
pub(crate) fn optional<T>(slot: Slot<T>) -> Option<Option<T>> {
    match slot {
        Slot::Val(v) => Some(Some(v)),
        Slot::Absent | Slot::Null => Some(None),
        Slot::Bad => None,
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Generates the `visit_*` methods that report "expected X, found Y" for kinds a visitor rejects.
macro_rules! reject {
    (scalars) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(self.cx.mismatch(Self::EXPECTED, "boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(self.cx.mismatch(Self::EXPECTED, "integer"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(self.cx.mismatch(Self::EXPECTED, "integer"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(self.cx.mismatch(Self::EXPECTED, "number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(self.cx.mismatch(Self::EXPECTED, "string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Decoded::Null)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Decoded::Null)
        }
    };
    (map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(self.cx.mismatch(Self::EXPECTED, "object"))
        }
    };
    (seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(self.cx.mismatch(Self::EXPECTED, "array"))
        }
    };
}

impl<T: Decode> Decode for Vec<T> {
    const EXPECTED: &'static str = "array";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        struct V<'c, T> {
            cx: &'c mut Ctx,
            _t: PhantomData<T>,
        }
        impl<T> V<'_, T> {
            const EXPECTED: &'static str = "array";
        }
        impl<'de, T: Decode> Visitor<'de> for V<'_, T> {
            type Value = Decoded<Vec<T>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            reject!(scalars);
            reject!(map);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let cx = self.cx;
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                let mut bad = false;
                let mut i = 0usize;
                loop {
                    cx.path.push(Seg::Index(i));
                    let next = seq.next_element_seed(Seed::<T>(cx, PhantomData));
                    let next = match next {
                        Ok(n) => n,
                        Err(e) => {
                            cx.path.pop();
                            return Err(e);
                        }
                    };
                    match next {
                        None => {
                            cx.path.pop();
                            break;
                        }
                        Some(Decoded::Ok(v)) => out.push(v),
                        Some(Decoded::Null) => {
                            let at = cx.path_with(None);
                            cx.error(
                                None,
                                ErrorCode::NullValue,
                                format!("{at}: array element is null, expected {}", T::EXPECTED),
                            );
                            bad = true;
                        }
                        Some(Decoded::Bad) => bad = true,
                    }
                    cx.path.pop();
                    i += 1;
                }
                Ok(if bad { Decoded::Bad } else { Decoded::Ok(out) })
            }
        }
        d.deserialize_any(V::<T> {
            cx,
            _t: PhantomData,
        })
    }
}

/// Walks one JSON object into the generated struct `T`: every field decoded, every error kept,
/// unknown keys listed with their full path, duplicate keys rejected.
pub(crate) fn decode_struct<'de, T: Struct, D: Deserializer<'de>>(
    d: D,
    cx: &mut Ctx,
) -> Result<Decoded<T>, D::Error> {
    struct V<'c, T> {
        cx: &'c mut Ctx,
        _t: PhantomData<T>,
    }
    impl<T> V<'_, T> {
        const EXPECTED: &'static str = "object";
    }
    impl<'de, T: Struct> Visitor<'de> for V<'_, T> {
        type Value = Decoded<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        reject!(scalars);
        reject!(seq);
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let cx = self.cx;
            let mut slots = T::Slots::default();
            let mut seen: u64 = 0;
            let mut bad = false;
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                match T::index(&key) {
                    Some(idx) => {
                        let bit = 1u64 << idx;
                        if seen & bit != 0 {
                            let name = T::NAMES[idx];
                            let at = cx.path_with(Some(name));
                            cx.error(
                                Some(name),
                                ErrorCode::DuplicateField,
                                format!("{at}: field appears more than once"),
                            );
                            map.next_value::<IgnoredAny>()?;
                            bad = true;
                        } else {
                            seen |= bit;
                            T::put(&mut slots, idx, &mut map, cx)?;
                        }
                    }
                    None => {
                        let path = cx.path_with(Some(&key));
                        cx.unknown_fields.push(path);
                        cx.unknown_kinds.push(map.next_value::<JsonKind>()?);
                    }
                }
            }
            if cx.path.is_empty() {
                cx.declared_seen = seen;
            }
            let done = T::finish(slots, cx);
            Ok(match done {
                Some(v) if !bad => Decoded::Ok(v),
                _ => Decoded::Bad,
            })
        }
    }
    d.deserialize_any(V::<T> {
        cx,
        _t: PhantomData,
    })
}

#[cfg(test)]
mod tests;

pub(crate) mod dynamic;
