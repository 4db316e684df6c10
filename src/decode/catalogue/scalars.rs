//! The catalogue's scalar types (`s`, `i`, `n`, `b`, `o`) for the decoding runtime: one visitor
//! sees any JSON kind and each type accepts its own, reporting "expected X, found Y" otherwise.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::rt::{Ctx, Decode, Decoded};

/// One visitor for the scalar kinds: it accepts every JSON kind and reports what it saw.
enum Scalar<'de> {
    Str(Cow<'de, str>),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Null,
    Other(&'static str),
}

impl Scalar<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Scalar::Str(_) => "string",
            Scalar::I64(_) | Scalar::U64(_) => "integer",
            Scalar::F64(v) if v.fract() == 0.0 && !(-9.2e18..9.2e18).contains(v) => {
                "integer out of range"
            }
            Scalar::F64(_) => "number with a fraction or exponent",
            Scalar::Bool(_) => "boolean",
            Scalar::Null => "null",
            Scalar::Other(k) => k,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::I64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::U64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::F64(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("object"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("array"))
    }
}

fn scalar<'de, D: Deserializer<'de>, T>(
    d: D,
    cx: &mut Ctx,
    expected: &'static str,
    accept: impl FnOnce(Scalar<'de>) -> Result<T, &'static str>,
) -> Result<Decoded<T>, D::Error> {
    let s = d.deserialize_any(ScalarVisitor)?;
    if let Scalar::Null = s {
        return Ok(Decoded::Null);
    }
    Ok(match accept(s) {
        Ok(v) => Decoded::Ok(v),
        Err(found) => cx.mismatch(expected, found),
    })
}

impl Decode for String {
    const EXPECTED: &'static str = "string";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        scalar(d, cx, Self::EXPECTED, |s| match s {
            Scalar::Str(v) => Ok(v.into_owned()),
            other => Err(other.kind()),
        })
    }
    fn as_account_number(&self) -> Option<&str> {
        Some(self)
    }
}

impl Decode for i64 {
    const EXPECTED: &'static str = "integer";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        scalar(d, cx, Self::EXPECTED, |s| match s {
            Scalar::I64(v) => Ok(v),
            Scalar::U64(v) => i64::try_from(v).map_err(|_| "integer out of range"),
            other => Err(other.kind()),
        })
    }
}

impl Decode for bool {
    const EXPECTED: &'static str = "boolean";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        scalar(d, cx, Self::EXPECTED, |s| match s {
            Scalar::Bool(v) => Ok(v),
            other => Err(other.kind()),
        })
    }
}

impl Decode for serde_json::Number {
    const EXPECTED: &'static str = "number";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        scalar(d, cx, Self::EXPECTED, |s| match s {
            Scalar::I64(v) => Ok(v.into()),
            Scalar::U64(v) => Ok(v.into()),
            Scalar::F64(v) => serde_json::Number::from_f64(v).ok_or("non-finite number"),
            other => Err(other.kind()),
        })
    }
}

/// `o` in the catalogue: any JSON object, kept as its exact text (no `Value` is built).
#[derive(Debug, Clone)]
pub struct JsonObject(pub Box<RawValue>);

impl JsonObject {
    pub(crate) fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for JsonObject {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Decode for JsonObject {
    const EXPECTED: &'static str = "object";
    fn decode<'de, D: Deserializer<'de>>(d: D, cx: &mut Ctx) -> Result<Decoded<Self>, D::Error> {
        let raw: Box<RawValue> = serde::Deserialize::deserialize(d)?;
        let found = match raw.get().as_bytes().first() {
            Some(b'{') => return Ok(Decoded::Ok(JsonObject(raw))),
            Some(b'n') => return Ok(Decoded::Null),
            Some(b'"') => "string",
            Some(b'[') => "array",
            Some(b't' | b'f') => "boolean",
            _ => "number",
        };
        Ok(cx.mismatch(Self::EXPECTED, found))
    }
}
