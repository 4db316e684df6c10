//! A catalogue interpreted at run time (read from a directory, not generated): the same walk as
//! the generated decoders — same errors, paths, unknown fields and account number — with field
//! tables instead of generated structs. Used to re-judge stored events with another catalogue
//! (`reprocess --catalogue-dir`). Its names are `'static` because a loaded catalogue lives for
//! the process (it is leaked once, by the loader).

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::super::kind::JsonKind;
use super::super::names::split_name;
use super::super::{EventSpec, FieldSpec, JsonObject, Lookup, ShapeSpec, TypeSpec};
use super::{Ctx, Decode, Decoded, ErrorCode, Key, Seg, Slot};

/// A catalogue for the interpreter.
pub struct DynCatalogue {
    pub fingerprint: String,
    pub events: &'static [EventSpec],
    pub shapes: &'static [ShapeSpec],
    by_name: HashMap<&'static str, u16>,
    types: HashSet<&'static str>,
    shape_by_name: HashMap<&'static str, &'static ShapeSpec>,
}

impl DynCatalogue {
    pub fn new(
        fingerprint: String,
        events: &'static [EventSpec],
        shapes: &'static [ShapeSpec],
    ) -> DynCatalogue {
        DynCatalogue {
            fingerprint,
            by_name: events
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.name, u16::try_from(i).ok()?)))
                .collect(),
            types: events.iter().map(|e| e.event_type).collect(),
            shape_by_name: shapes.iter().map(|s| (s.name, s)).collect(),
            events,
            shapes,
        }
    }

    /// How a full event name relates to this catalogue.
    pub fn lookup(&self, name: &str) -> Lookup {
        if let Some(&i) = self.by_name.get(name) {
            return Lookup::Known(i);
        }
        let t = split_name(name).map_or(name, |(t, _)| t);
        if self.types.contains(t) {
            Lookup::UnknownVersion
        } else {
            Lookup::UnknownType
        }
    }

    /// Decodes a payload as event `idx`, collecting every error in `cx`.
    pub fn decode(
        &self,
        idx: u16,
        json: &str,
        cx: &mut Ctx,
    ) -> Result<Decoded<()>, serde_json::Error> {
        let Some(e) = self.events.get(usize::from(idx)) else {
            return Ok(Decoded::Bad);
        };
        let mut de = serde_json::Deserializer::from_str(json);
        let out = (&mut de).deserialize_any(StructV {
            fields: e.fields,
            cat: self,
            cx,
        })?;
        de.end()?;
        Ok(out)
    }
}

fn expected(ty: &TypeSpec) -> &'static str {
    match ty {
        TypeSpec::String => "string",
        TypeSpec::Integer => "integer",
        TypeSpec::Number => "number",
        TypeSpec::Boolean => "boolean",
        TypeSpec::Object | TypeSpec::Shape(_) => "object",
        TypeSpec::Array(_) => "array",
    }
}

/// One value of type `ty`; `Ok(Some(s))` carries a string value (the account number).
struct Val<'a, 'c> {
    ty: &'static TypeSpec,
    cat: &'a DynCatalogue,
    cx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for Val<'_, '_> {
    type Value = Decoded<Option<String>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let cx = self.cx;
        Ok(match self.ty {
            TypeSpec::String => String::decode(d, cx)?.map(Some),
            TypeSpec::Integer => i64::decode(d, cx)?.map(|_| None),
            TypeSpec::Number => serde_json::Number::decode(d, cx)?.map(|_| None),
            TypeSpec::Boolean => bool::decode(d, cx)?.map(|_| None),
            TypeSpec::Object => JsonObject::decode(d, cx)?.map(|_| None),
            TypeSpec::Array(inner) => d
                .deserialize_any(ArrV {
                    inner,
                    cat: self.cat,
                    cx,
                })?
                .map(|()| None),
            TypeSpec::Shape(name) => match self.cat.shape_by_name.get(name) {
                Some(s) => d
                    .deserialize_any(StructV {
                        fields: s.fields,
                        cat: self.cat,
                        cx,
                    })?
                    .map(|()| None),
                None => {
                    d.deserialize_any(IgnoredAny)?;
                    cx.mismatch::<()>(name, "a value of a shape the catalogue lacks");
                    Decoded::Bad
                }
            },
        })
    }
}

struct ArrV<'a, 'c> {
    inner: &'static TypeSpec,
    cat: &'a DynCatalogue,
    cx: &'c mut Ctx,
}

impl ArrV<'_, '_> {
    const EXPECTED: &'static str = "array";
}

impl<'de> Visitor<'de> for ArrV<'_, '_> {
    type Value = Decoded<()>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }
    reject!(scalars);
    reject!(map);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let cx = self.cx;
        let mut bad = false;
        let mut i = 0usize;
        loop {
            cx.path.push(Seg::Index(i));
            let seed = Val {
                ty: self.inner,
                cat: self.cat,
                cx: &mut *cx,
            };
            let next = match seq.next_element_seed(seed) {
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
                Some(Decoded::Ok(_)) => {}
                Some(Decoded::Null) => {
                    let at = cx.path_with(None);
                    let exp = expected(self.inner);
                    cx.error(
                        None,
                        ErrorCode::NullValue,
                        format!("{at}: array element is null, expected {exp}"),
                    );
                    bad = true;
                }
                Some(Decoded::Bad) => bad = true,
            }
            cx.path.pop();
            i += 1;
        }
        Ok(if bad { Decoded::Bad } else { Decoded::Ok(()) })
    }
}

struct StructV<'a, 'c> {
    fields: &'static [FieldSpec],
    cat: &'a DynCatalogue,
    cx: &'c mut Ctx,
}

impl StructV<'_, '_> {
    const EXPECTED: &'static str = "object";
}

impl<'de> Visitor<'de> for StructV<'_, '_> {
    type Value = Decoded<()>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    reject!(scalars);
    reject!(seq);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (cx, fields) = (self.cx, self.fields);
        let mut slots: Vec<Slot<()>> = fields.iter().map(|_| Slot::Absent).collect();
        let mut seen: u64 = 0;
        let mut bad = false;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match fields.iter().position(|f| f.name == key) {
                Some(idx) => {
                    let bit = 1u64 << (idx % 64);
                    let f = &fields[idx];
                    if seen & bit != 0 {
                        let at = cx.path_with(Some(f.name));
                        cx.error(
                            Some(f.name),
                            ErrorCode::DuplicateField,
                            format!("{at}: field appears more than once"),
                        );
                        map.next_value::<IgnoredAny>()?;
                        bad = true;
                    } else {
                        seen |= bit;
                        slots[idx] = put(&mut map, cx, self.cat, f)?;
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
        for (slot, f) in slots.into_iter().zip(fields) {
            match slot {
                Slot::Val(()) => {}
                Slot::Absent if f.required => {
                    let at = cx.path_with(Some(f.name));
                    cx.error(
                        Some(f.name),
                        ErrorCode::MissingField,
                        format!("{at}: required field is missing"),
                    );
                    bad = true;
                }
                Slot::Absent | Slot::Null if !f.required => {}
                _ => bad = true,
            }
        }
        Ok(if bad { Decoded::Bad } else { Decoded::Ok(()) })
    }
}

/// Mirrors `rt::put`: decodes field `f`'s value, records a null required field, captures the
/// top-level account number.
fn put<'de, A: MapAccess<'de>>(
    map: &mut A,
    cx: &mut Ctx,
    cat: &DynCatalogue,
    f: &'static FieldSpec,
) -> Result<Slot<()>, A::Error> {
    cx.path.push(Seg::Field(f.name));
    let decoded = match map.next_value_seed(Val {
        ty: &f.ty,
        cat,
        cx: &mut *cx,
    }) {
        Ok(d) => d,
        Err(e) => {
            cx.path.pop();
            return Err(e);
        }
    };
    let slot = match decoded {
        Decoded::Ok(v) => {
            if cx.path.len() == 1 && f.name == "account_number" {
                cx.account_number = v;
            }
            Slot::Val(())
        }
        Decoded::Null => {
            if f.required {
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
    Ok(slot)
}
