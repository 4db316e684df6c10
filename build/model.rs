//! The catalogue's data model as read from `catalogue/*.toml`, and its resolution into flat,
//! checked event and shape definitions (extends/include expanded, shape references resolved).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FieldDef {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub required: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapeDef {
    name: String,
    source: String,
    #[serde(default)]
    inline: bool,
    note: Option<String>,
    fields: Vec<FieldDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetDef {
    name: String,
    #[allow(dead_code)] // transcribed for auditors; not needed to generate code
    source: String,
    #[serde(default)]
    include: Vec<String>,
    fields: Vec<FieldDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventDef {
    name: String,
    section: String,
    source: String,
    extends: Option<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    fields: Vec<FieldDef>,
    #[serde(default)]
    open: bool,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapesFile {
    shape: Vec<ShapeDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetsFile {
    field_set: Vec<SetDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    event: Vec<EventDef>,
}

/// A field type after resolution.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array(Box<Ty>),
    Shape(String),
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    pub required: bool,
    /// Where the field came from: "" for the entry itself, else a field set or extended event.
    pub from: String,
}

pub struct Shape {
    pub name: String,
    pub source: String,
    pub inline: bool,
    pub note: Option<String>,
    pub fields: Vec<Field>,
}

pub struct Event {
    pub name: String,
    pub event_type: String,
    pub version: String,
    pub section: String,
    pub source: String,
    pub open: bool,
    pub note: Option<String>,
    pub fields: Vec<Field>,
}

pub struct Catalogue {
    pub shapes: Vec<Shape>,
    pub events: Vec<Event>,
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_ty(s: &str, shapes: &HashSet<String>, at: &str) -> Result<Ty, String> {
    Ok(match s {
        "string" => Ty::String,
        "integer" => Ty::Integer,
        "number" => Ty::Number,
        "boolean" => Ty::Boolean,
        "object" => Ty::Object,
        _ if s.starts_with('[') && s.ends_with(']') => {
            Ty::Array(Box::new(parse_ty(&s[1..s.len() - 1], shapes, at)?))
        }
        _ if shapes.contains(s) => Ty::Shape(s.to_owned()),
        _ => return Err(format!("{at}: unknown type `{s}`")),
    })
}

fn own_fields(
    defs: &[FieldDef],
    shapes: &HashSet<String>,
    at: &str,
    from: &str,
) -> Result<Vec<Field>, String> {
    defs.iter()
        .map(|f| {
            if f.name.is_empty()
                || !f
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(format!("{at}: field name `{}` is not snake_case", f.name));
            }
            Ok(Field {
                name: f.name.clone(),
                ty: parse_ty(&f.ty, shapes, &format!("{at}.{}", f.name))?,
                required: f.required,
                from: from.to_owned(),
            })
        })
        .collect()
}

fn push_unique(out: &mut Vec<Field>, more: Vec<Field>, at: &str) -> Result<(), String> {
    for f in more {
        if out.iter().any(|g| g.name == f.name) {
            return Err(format!("{at}: field `{}` defined twice", f.name));
        }
        out.push(f);
    }
    Ok(())
}

fn set_fields(
    name: &str,
    sets: &HashMap<String, &SetDef>,
    shapes: &HashSet<String>,
    depth: usize,
) -> Result<Vec<Field>, String> {
    if depth > 8 {
        return Err(format!("field set `{name}`: include cycle"));
    }
    let set = sets
        .get(name)
        .ok_or_else(|| format!("unknown field set `{name}`"))?;
    let mut out = Vec::new();
    for inc in &set.include {
        let inner = set_fields(inc, sets, shapes, depth + 1)?;
        push_unique(&mut out, inner, name)?;
    }
    push_unique(&mut out, own_fields(&set.fields, shapes, name, name)?, name)?;
    Ok(out)
}

fn event_fields(
    name: &str,
    events: &HashMap<String, &EventDef>,
    sets: &HashMap<String, &SetDef>,
    shapes: &HashSet<String>,
    depth: usize,
) -> Result<Vec<Field>, String> {
    if depth > 8 {
        return Err(format!("event `{name}`: extends cycle"));
    }
    let ev = events
        .get(name)
        .ok_or_else(|| format!("unknown event `{name}`"))?;
    let mut out = Vec::new();
    if let Some(parent) = &ev.extends {
        let mut inherited = event_fields(parent, events, sets, shapes, depth + 1)?;
        for f in &mut inherited {
            if f.from.is_empty() {
                f.from = parent.clone();
            }
        }
        push_unique(&mut out, inherited, name)?;
    }
    for inc in &ev.include {
        push_unique(&mut out, set_fields(inc, sets, shapes, 0)?, name)?;
    }
    push_unique(&mut out, own_fields(&ev.fields, shapes, name, "")?, name)?;
    Ok(out)
}

pub(super) fn load(dir: &Path) -> Result<Catalogue, String> {
    let shapes_file: ShapesFile = read(&dir.join("shapes.toml"))?;
    let sets_file: SetsFile = read(&dir.join("field_sets.toml"))?;
    let events_file: EventsFile = read(&dir.join("events.toml"))?;

    let shape_names: HashSet<String> = shapes_file.shape.iter().map(|s| s.name.clone()).collect();
    if shape_names.len() != shapes_file.shape.len() {
        return Err("shapes.toml: a shape name appears twice".into());
    }
    let mut shapes = Vec::new();
    for s in &shapes_file.shape {
        let mut fields = Vec::new();
        push_unique(
            &mut fields,
            own_fields(&s.fields, &shape_names, &s.name, "")?,
            &s.name,
        )?;
        if fields.len() > 64 {
            return Err(format!("{}: more than 64 fields", s.name));
        }
        shapes.push(Shape {
            name: s.name.clone(),
            source: s.source.clone(),
            inline: s.inline,
            note: s.note.clone(),
            fields,
        });
    }

    let sets: HashMap<String, &SetDef> = sets_file
        .field_set
        .iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    let by_name: HashMap<String, &EventDef> = events_file
        .event
        .iter()
        .map(|e| (e.name.clone(), e))
        .collect();
    if by_name.len() != events_file.event.len() {
        let mut seen = HashSet::new();
        let dup = events_file
            .event
            .iter()
            .find(|e| !seen.insert(&e.name))
            .map(|e| e.name.clone());
        return Err(format!("events.toml: event `{dup:?}` appears twice"));
    }

    let mut events = Vec::new();
    for e in &events_file.event {
        let (ty, version) = super::names::split_name(&e.name)
            .ok_or_else(|| format!("event `{}`: name has no version suffix", e.name))?;
        let fields = event_fields(&e.name, &by_name, &sets, &shape_names, 0)?;
        if fields.len() > 64 {
            return Err(format!("{}: more than 64 fields", e.name));
        }
        events.push(Event {
            name: e.name.clone(),
            event_type: ty.to_owned(),
            version: version.to_owned(),
            section: e.section.clone(),
            source: e.source.clone(),
            open: e.open,
            note: e.note.clone(),
            fields,
        });
    }
    // Every field set must be used: an unused one is a transcription slip.
    let mut used: BTreeMap<&str, bool> = sets.keys().map(|k| (k.as_str(), false)).collect();
    for e in &events_file.event {
        for inc in &e.include {
            used.insert(inc, true);
        }
    }
    for s in &sets_file.field_set {
        for inc in &s.include {
            used.insert(inc, true);
        }
    }
    if let Some((unused, _)) = used.iter().find(|(_, u)| !**u) {
        return Err(format!("field set `{unused}` is never used"));
    }
    Ok(Catalogue { shapes, events })
}
