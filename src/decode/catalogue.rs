//! The event catalogue: types generated from `catalogue/`, their metadata, the event-name rules,
//! and constant-time dispatch from a full event name to its decoder. Pure: no I/O.

pub mod kind;
pub(crate) mod names;
pub mod rt;
mod scalars;

#[allow(clippy::all, clippy::pedantic, missing_docs, unused_qualifications)]
mod generated {
    use super::rt;
    use super::{EventSpec, FieldSpec, ShapeSpec, TypeSpec};
    include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));
}

pub use generated::{events, fields, shapes, Event, EVENTS, IDENTIFIER_PATHS, SHAPES};

/// The fingerprint of the catalogue built into this binary: the first 16 hex digits of a
/// SHA-256 over its data (names, fields, types, requiredness; not quotes or notes). Every
/// audit row records the fingerprint its verdict came from.
pub const FINGERPRINT: &str = env!("EVENT_AUDIT_CATALOGUE_FINGERPRINT");
pub use names::split_name;
pub use scalars::JsonObject;

/// A field type as the catalogue states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSpec {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array(&'static TypeSpec),
    Shape(&'static str),
}

impl std::fmt::Display for TypeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeSpec::String => f.write_str("string"),
            TypeSpec::Integer => f.write_str("integer"),
            TypeSpec::Number => f.write_str("number"),
            TypeSpec::Boolean => f.write_str("boolean"),
            TypeSpec::Object => f.write_str("object"),
            TypeSpec::Array(inner) => write!(f, "[{inner}]"),
            TypeSpec::Shape(name) => f.write_str(name),
        }
    }
}

/// One field of an event version or shape.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    pub name: &'static str,
    pub ty: TypeSpec,
    pub required: bool,
    /// "" when the entry lists the field itself, else the field set or event it comes from.
    pub from: &'static str,
}

/// One event version of the catalogue.
#[derive(Debug)]
pub struct EventSpec {
    pub name: &'static str,
    pub event_type: &'static str,
    pub version: &'static str,
    pub section: &'static str,
    /// The document's line that defines this event, verbatim.
    pub source: &'static str,
    /// The document says some fields are "not shown": unlisted fields are expected.
    pub open: bool,
    pub note: Option<&'static str>,
    pub fields: &'static [FieldSpec],
}

impl EventSpec {
    pub fn required_count(&self) -> usize {
        self.fields.iter().filter(|f| f.required).count()
    }
    pub fn optional_count(&self) -> usize {
        self.fields.len() - self.required_count()
    }
}

/// One shared shape of the catalogue.
#[derive(Debug)]
pub struct ShapeSpec {
    pub name: &'static str,
    pub source: &'static str,
    pub inline: bool,
    pub note: Option<&'static str>,
    pub fields: &'static [FieldSpec],
}

/// How a full event name relates to the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A known event version: its index into [`EVENTS`].
    Known(u16),
    /// The type is in the catalogue, this version is not.
    UnknownVersion,
    /// The type is not in the catalogue.
    UnknownType,
}

/// Constant-time lookup of a full event name (perfect hash).
pub fn lookup(name: &str) -> Lookup {
    if let Some(&idx) = generated::BY_NAME.get(name) {
        return Lookup::Known(idx);
    }
    let event_type = split_name(name).map_or(name, |(t, _)| t);
    if generated::TYPES.contains(event_type) {
        Lookup::UnknownVersion
    } else {
        Lookup::UnknownType
    }
}

/// The spec of a known event version by index.
pub fn spec(idx: u16) -> &'static EventSpec {
    &EVENTS[usize::from(idx)]
}

/// The spec of an event version by full name.
pub(crate) fn find_event(name: &str) -> Option<&'static EventSpec> {
    generated::BY_NAME.get(name).map(|&i| spec(i))
}

/// The spec of a shape by full name.
pub fn find_shape(name: &str) -> Option<&'static ShapeSpec> {
    SHAPES.iter().find(|s| s.name == name)
}

/// Decodes a payload (the text of one JSON object) as catalogue event `idx`, collecting every
/// error in `cx`. `Err` only when the text is not JSON.
pub(crate) fn decode_payload(
    idx: u16,
    json: &str,
    cx: &mut rt::Ctx,
) -> Result<rt::Decoded<Event>, serde_json::Error> {
    generated::decode_index(idx, json, cx)
}
