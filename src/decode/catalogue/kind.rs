//! The JSON kind of a value the catalogue does not declare (string, integer, number, boolean,
//! object, array, null), read while the value is skipped: nothing is kept of it but its kind.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Serialize;

/// The kind of one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
    Null,
}

impl JsonKind {
    pub(crate) const ALL: [JsonKind; 7] = [
        JsonKind::String,
        JsonKind::Integer,
        JsonKind::Number,
        JsonKind::Boolean,
        JsonKind::Object,
        JsonKind::Array,
        JsonKind::Null,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JsonKind::String => "string",
            JsonKind::Integer => "integer",
            JsonKind::Number => "number",
            JsonKind::Boolean => "boolean",
            JsonKind::Object => "object",
            JsonKind::Array => "array",
            JsonKind::Null => "null",
        }
    }

    pub fn parse(s: &str) -> Option<JsonKind> {
        JsonKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind named in a type-mismatch message (`... found number with a fraction ...`).
    pub(crate) fn of_found(found: &str) -> Option<JsonKind> {
        let word = found.split_whitespace().next()?;
        JsonKind::parse(word)
    }
}

impl fmt::Display for JsonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for JsonKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<JsonKind, E> {
                Ok(JsonKind::Boolean)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<JsonKind, E> {
                Ok(JsonKind::Integer)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<JsonKind, E> {
                Ok(JsonKind::Integer)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<JsonKind, E> {
                Ok(JsonKind::Number)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<JsonKind, E> {
                Ok(JsonKind::String)
            }
            fn visit_unit<E: de::Error>(self) -> Result<JsonKind, E> {
                Ok(JsonKind::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<JsonKind, E> {
                Ok(JsonKind::Null)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonKind, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(JsonKind::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsonKind, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(JsonKind::Array)
            }
        }
        d.deserialize_any(V)
    }
}

/// A field path with array indexes folded to `*` (`supply_points.*.extra`): the path drift
/// aggregates on, bounded whatever the arrays' lengths.
pub(crate) fn fold_indexes(path: &str) -> String {
    path.split('.')
        .map(|seg| {
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_values() {
        for (json, kind) in [
            (r#""x""#, JsonKind::String),
            ("12", JsonKind::Integer),
            ("-12", JsonKind::Integer),
            ("1.5", JsonKind::Number),
            ("1e3", JsonKind::Number),
            ("true", JsonKind::Boolean),
            (r#"{"a":[1,{"b":null}]}"#, JsonKind::Object),
            ("[1,2]", JsonKind::Array),
            ("null", JsonKind::Null),
        ] {
            assert_eq!(
                serde_json::from_str::<JsonKind>(json).ok(),
                Some(kind),
                "{json}"
            );
        }
        assert_eq!(
            JsonKind::of_found("number with a fraction or exponent"),
            Some(JsonKind::Number)
        );
        assert_eq!(
            JsonKind::of_found("integer out of range"),
            Some(JsonKind::Integer)
        );
        assert_eq!(fold_indexes("a.0.b.12.c"), "a.*.b.*.c");
    }
}
