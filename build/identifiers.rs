//! The identifying fields of `catalogue/identifiers.toml` expanded to JSON paths per event
//! version (through shapes at any depth; arrays are unwrapped by SQL/JSON's lax mode), emitted
//! as `IDENTIFIER_PATHS` for erasure's search.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

use serde::Deserialize;

use crate::model::{Catalogue, Field, Ty};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    field: String,
    shape: Option<String>,
    events: Option<String>,
    #[serde(default)]
    links: bool,
    #[allow(dead_code)] // for readers of the file
    reading: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    identifier: Vec<Rule>,
}

/// One path: the event version, the JSON path of the field and whether it links identifiers.
pub struct IdPath {
    pub event_type: String,
    pub version: String,
    pub path: String,
    pub links: bool,
}

/// Whether `rule` names field `f` of the shape `shape` (`None`: an event's own field) of the
/// event `event`, at depth `top` (the event's own fields).
fn names(rule: &Rule, f: &Field, shape: Option<&str>, event: &str, top: bool) -> bool {
    if rule.field != f.name {
        return false;
    }
    match (&rule.shape, &rule.events) {
        (Some(s), _) => shape == Some(s.as_str()),
        (None, Some(prefix)) => top && shape.is_none() && event.starts_with(prefix.as_str()),
        (None, None) => true,
    }
}

fn shape_of(ty: &Ty) -> Option<&str> {
    match ty {
        Ty::Shape(s) => Some(s),
        Ty::Array(inner) => shape_of(inner),
        _ => None,
    }
}

/// JSON path segment of a field name (quoted: names may hold characters paths reserve).
fn seg(name: &str) -> String {
    let escaped: String = name
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!(".\"{escaped}\"")
}

#[allow(clippy::too_many_arguments)]
fn walk(
    rules: &[Rule],
    used: &mut [bool],
    shapes: &HashMap<&str, &[Field]>,
    fields: &[Field],
    shape: Option<&str>,
    event: &str,
    prefix: &str,
    depth: usize,
    out: &mut BTreeSet<(String, bool)>,
) {
    if depth > 8 {
        return;
    }
    for f in fields {
        let path = format!("{prefix}{}", seg(&f.name));
        for (i, r) in rules.iter().enumerate() {
            if names(r, f, shape, event, depth == 0) {
                used[i] = true;
                out.insert((path.clone(), r.links));
            }
        }
        if let Some(s) = shape_of(&f.ty) {
            if let Some(inner) = shapes.get(s) {
                walk(
                    rules,
                    used,
                    shapes,
                    inner,
                    Some(s),
                    event,
                    &path,
                    depth + 1,
                    out,
                );
            }
        }
    }
}

/// Reads the rules and expands them; every rule must reach a field.
pub fn expand(dir: &Path, cat: &Catalogue) -> Result<Vec<IdPath>, String> {
    let path = dir.join("identifiers.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: File = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let shapes: HashMap<&str, &[Field]> = cat
        .shapes
        .iter()
        .map(|s| (s.name.as_str(), s.fields.as_slice()))
        .collect();
    // A shape's rule holds when the shape has the field, whether or not an event reaches it
    // yet (the catalogue defines shapes no event version uses).
    let mut used: Vec<bool> = file
        .identifier
        .iter()
        .map(|r| {
            r.shape.as_deref().is_some_and(|s| {
                shapes
                    .get(s)
                    .is_some_and(|fs| fs.iter().any(|f| f.name == r.field))
            })
        })
        .collect();
    let mut out = Vec::new();
    for e in &cat.events {
        let mut found = BTreeSet::new();
        walk(
            &file.identifier,
            &mut used,
            &shapes,
            &e.fields,
            None,
            &e.name,
            "$",
            0,
            &mut found,
        );
        for (path, links) in found {
            out.push(IdPath {
                event_type: e.event_type.clone(),
                version: e.version.clone(),
                path,
                links,
            });
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        let r = &file.identifier[i];
        return Err(format!(
            "identifiers.toml: the rule for field `{}`{} names no field of the catalogue",
            r.field,
            r.shape
                .as_deref()
                .map(|s| format!(" of shape `{s}`"))
                .unwrap_or_default()
        ));
    }
    Ok(out)
}

/// The generated table.
pub fn emit(out: &mut String, paths: &[IdPath]) {
    out.push_str(
        "/// Every catalogue path that holds a person's identifier (`catalogue/identifiers.toml`):\n\
         /// event type, version, SQL/JSON path (lax), and whether it links identifiers.\n\
         pub static IDENTIFIER_PATHS: &[(&str, &str, &str, bool)] = &[\n",
    );
    for p in paths {
        let _ = writeln!(
            out,
            "    ({:?}, {:?}, {:?}, {}),",
            p.event_type, p.version, p.path, p.links
        );
    }
    out.push_str("];\n");
}
