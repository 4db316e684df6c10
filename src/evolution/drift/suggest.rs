//! `drift --suggest`: a unified diff to `catalogue/` adding each observed undeclared field as
//! optional, with its observed type: a top-level field to its event in `events.toml`, a nested
//! one to the shape that holds it in `shapes.toml` (which declares it for every event using that
//! shape, said in a note). Printed for a person to review, never applied. Arrays (their element
//! type is not observed), fields seen with more than one kind, and fields inside a value that is
//! itself undeclared or declared as a plain `object` are listed as notes instead. Pure: takes
//! the files' text and the catalogue read from them.

use std::collections::BTreeMap;

use super::Drift;
use crate::evolution::compat::{Catalogue, Field, Ty};

/// A patch and what it leaves to a person.
#[derive(Debug, Default)]
pub(crate) struct Suggestion {
    /// Unified diff (empty when there is nothing to add).
    pub(crate) patch: String,
    pub(crate) notes: Vec<String>,
}

/// The catalogue type for a field's observed kinds, or why there is none.
fn type_of(kinds: &BTreeMap<String, u64>) -> Result<&'static str, String> {
    let kinds: Vec<&str> = kinds
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "null")
        .collect();
    match kinds.as_slice() {
        ["string"] => Ok("string"),
        ["integer"] => Ok("integer"),
        ["number"] | ["integer", "number"] => Ok("number"),
        ["boolean"] => Ok("boolean"),
        ["object"] => Ok("object"),
        ["array"] => Err("an array: its element type is not observed".into()),
        [] => Err("only null seen".into()),
        many => Err(format!("seen as {}", many.join(" and "))),
    }
}

/// The shape that would declare nested path `path` of `event`, and the field's name there; or
/// why there is none.
fn holder<'c>(
    cat: &'c Catalogue,
    event: &str,
    path: &'c str,
) -> Result<(&'c str, &'c str), String> {
    let ev = cat
        .events
        .iter()
        .find(|e| e.name == event)
        .ok_or("its event is not in the catalogue")?;
    let segs: Vec<&str> = path.split('.').collect();
    let Some((last, parents)) = segs.split_last() else {
        return Err("an empty path".into());
    };
    let mut fields: &[Field] = &ev.fields;
    let mut ty: Option<&Ty> = None; // None: the event's top level
    let mut at = String::new();
    for seg in parents {
        let t = match (ty, *seg) {
            (Some(Ty::Array(inner)), "*") => inner.as_ref(),
            (None | Some(Ty::Shape(_)), name) => fields
                .iter()
                .find(|f| f.name == name)
                .map(|f| &f.ty)
                .ok_or_else(|| format!("inside `{at}{name}`, itself undeclared"))?,
            _ => return Err(format!("inside `{at}`, which is not an object of a shape")),
        };
        if let Ty::Shape(name) = t {
            fields = &cat
                .shapes
                .iter()
                .find(|s| &s.name == name)
                .ok_or("its shape is not in the catalogue")?
                .fields;
        }
        at.push_str(seg);
        at.push('.');
        ty = Some(t);
    }
    match ty {
        Some(Ty::Shape(name)) => Ok((name.as_str(), *last)),
        Some(Ty::Object) => Err(format!("inside `{at}`, declared as a plain object")),
        _ => Err(format!("inside `{at}`, which is not an object of a shape")),
    }
}

/// Whether `ty` reaches shape `shape` (through arrays and other shapes).
fn reaches(cat: &Catalogue, ty: &Ty, shape: &str, depth: usize) -> bool {
    match ty {
        _ if depth > 16 => false,
        Ty::Array(inner) => reaches(cat, inner, shape, depth + 1),
        Ty::Shape(name) if name == shape => true,
        Ty::Shape(name) => cat.shapes.iter().any(|s| {
            &s.name == name
                && s.fields
                    .iter()
                    .any(|f| reaches(cat, &f.ty, shape, depth + 1))
        }),
        _ => false,
    }
}

/// How many event versions use shape `shape`.
fn users(cat: &Catalogue, shape: &str) -> usize {
    cat.events
        .iter()
        .filter(|e| e.fields.iter().any(|f| reaches(cat, &f.ty, shape, 0)))
        .count()
}

/// Where to insert in `lines` for the `[[header]]` entry `name`: the index before which new
/// field lines go, and whether a `fields = [` … `]` block must be opened.
fn insertion(lines: &[&str], header: &str, name: &str) -> Option<(usize, bool)> {
    let head = lines
        .iter()
        .position(|l| l.trim() == format!("name = \"{name}\""))?;
    let end = lines[head + 1..]
        .iter()
        .position(|l| l.trim() == header)
        .map_or(lines.len(), |i| head + 1 + i);
    let block = &lines[head..end];
    match block
        .iter()
        .position(|l| l.trim_start().starts_with("fields = ["))
    {
        Some(open) => {
            let close = block[open..].iter().position(|l| l.trim() == "]")?;
            Some((head + open + close, false))
        }
        None => {
            // After the entry's last non-blank line.
            let last = block.iter().rposition(|l| !l.trim().is_empty())?;
            Some((head + last + 1, true))
        }
    }
}

/// Inserts `add` (field lines) into the `[[header]]` entry `name` of `lines`.
fn place(
    lines: &[&str],
    header: &str,
    name: &str,
    mut add: Vec<String>,
    inserts: &mut Vec<(usize, Vec<String>)>,
) -> bool {
    match insertion(lines, header, name) {
        Some((at, open)) => {
            if open {
                add.insert(0, "fields = [".into());
                add.push("]".into());
            }
            inserts.push((at, add));
            true
        }
        None => false,
    }
}

fn field_line(name: &str, ty: &str) -> String {
    format!("  {{ name = \"{name}\", type = \"{ty}\" }},")
}

/// The suggestion for the catalogue `cat`, read from `events_toml` and `shapes_toml`.
pub(crate) fn suggest(
    d: &Drift,
    cat: &Catalogue,
    events_toml: &str,
    shapes_toml: &str,
) -> Suggestion {
    let lines: Vec<&str> = events_toml.lines().collect();
    let mut out = Suggestion::default();
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    // shape → field → (kinds seen, the events it was seen on)
    type Seen<'a> = BTreeMap<&'a str, (BTreeMap<String, u64>, Vec<&'a str>)>;
    let mut nested: BTreeMap<&str, Seen> = BTreeMap::new();
    for e in &d.events {
        let mut add = Vec::new();
        for u in &e.undeclared {
            if u.path.contains('.') {
                match holder(cat, &e.event, &u.path) {
                    Ok((shape, field)) => {
                        let (kinds, events) =
                            nested.entry(shape).or_default().entry(field).or_default();
                        for (k, n) in &u.kinds {
                            *kinds.entry(k.clone()).or_default() += n;
                        }
                        events.push(&e.event);
                    }
                    Err(why) => out.notes.push(format!(
                        "{}: {} is nested {why}: not suggested",
                        e.event, u.path
                    )),
                }
                continue;
            }
            match type_of(&u.kinds) {
                Ok(ty) => add.push(field_line(&u.path, ty)),
                Err(why) => out
                    .notes
                    .push(format!("{}: {} is {why}: not suggested", e.event, u.path)),
            }
        }
        if !add.is_empty() && !place(&lines, "[[event]]", &e.event, add, &mut inserts) {
            out.notes
                .push(format!("{}: no such entry in events.toml", e.event));
        }
    }
    inserts.sort_by_key(|(at, _)| *at);
    out.patch = unified("catalogue/events.toml", &lines, &inserts);

    let shape_lines: Vec<&str> = shapes_toml.lines().collect();
    let mut shape_inserts: Vec<(usize, Vec<String>)> = Vec::new();
    for (shape, fields) in &nested {
        let mut add = Vec::new();
        for (field, (kinds, events)) in fields {
            let seen_on = events.join(", ");
            match type_of(kinds) {
                Ok(ty) => {
                    add.push(field_line(field, ty));
                    out.notes.push(format!(
                        "shape {shape} gains {field} ({ty}), seen on {seen_on}: this declares it for every event version using the shape ({})",
                        users(cat, shape)
                    ));
                }
                Err(why) => out.notes.push(format!(
                    "shape {shape}: {field} (seen on {seen_on}) is {why}: not suggested"
                )),
            }
        }
        if !add.is_empty() && !place(&shape_lines, "[[shape]]", shape, add, &mut shape_inserts) {
            out.notes
                .push(format!("shape {shape}: no such entry in shapes.toml"));
        }
    }
    shape_inserts.sort_by_key(|(at, _)| *at);
    out.patch += &unified("catalogue/shapes.toml", &shape_lines, &shape_inserts);
    out
}

/// A unified diff of insertions only (`inserts` sorted; each goes before old line `at`), three
/// lines of context, close insertions sharing a hunk.
fn unified(file: &str, lines: &[&str], inserts: &[(usize, Vec<String>)]) -> String {
    if inserts.is_empty() {
        return String::new();
    }
    let mut out = format!("--- a/{file}\n+++ b/{file}\n");
    let mut groups: Vec<Vec<&(usize, Vec<String>)>> = Vec::new();
    for ins in inserts {
        match groups.last_mut() {
            Some(g) if g.last().is_some_and(|p| ins.0 - p.0 <= 6) => g.push(ins),
            _ => groups.push(vec![ins]),
        }
    }
    let mut added_before = 0usize;
    for g in groups {
        let start = g[0].0.saturating_sub(3);
        let end = (g[g.len() - 1].0 + 3).min(lines.len());
        let added: usize = g.iter().map(|(_, l)| l.len()).sum();
        let mut body = String::new();
        let mut next = g.iter().peekable();
        for (i, line) in lines.iter().enumerate().take(end).skip(start) {
            while let Some((_, new)) = next.next_if(|(at, _)| *at == i) {
                for l in new {
                    body.push_str(&format!("+{l}\n"));
                }
            }
            body.push_str(&format!(" {line}\n"));
        }
        for (_, new) in next {
            for l in new {
                body.push_str(&format!("+{l}\n"));
            }
        }
        let old_len = end - start;
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{} @@\n{body}",
            start + 1,
            start + 1 + added_before,
            old_len + added
        ));
        added_before += added;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evolution::compat::{Event, Shape};
    use crate::evolution::drift::{EventDrift, Seen, Undeclared};

    fn und(path: &str, kinds: &[&str]) -> Undeclared {
        Undeclared {
            path: path.into(),
            kinds: kinds.iter().map(|k| ((*k).to_owned(), 1)).collect(),
            seen: Seen {
                count: 1,
                first_seen: chrono::DateTime::UNIX_EPOCH,
                last_seen: chrono::DateTime::UNIX_EPOCH,
            },
        }
    }

    fn field(name: &str, ty: Ty) -> Field {
        Field {
            name: name.into(),
            ty,
            required: false,
            from: String::new(),
        }
    }

    fn event(name: &str, fields: Vec<Field>) -> Event {
        Event {
            name: name.into(),
            event_type: String::new(),
            version: String::new(),
            section: "S".into(),
            source: String::new(),
            open: false,
            note: None,
            fields,
        }
    }

    fn drift(event: &str, undeclared: Vec<Undeclared>) -> EventDrift {
        EventDrift {
            event: event.into(),
            rows: BTreeMap::new(),
            undeclared,
            optional_never_seen: vec![],
            required_missing: vec![],
            type_mismatches: vec![],
        }
    }

    #[test]
    fn adds_top_level_fields_to_events_and_nested_ones_to_their_shapes() {
        let toml = "[[event]]\nname = \"a.b-v1\"\nsection = \"S\"\nfields = [\n  { name = \"x\", type = \"string\", required = true },\n  { name = \"c\", type = \"[S1]\" },\n]\n\n[[event]]\nname = \"c.d-v1\"\nsection = \"S\"\nextends = \"a.b-v1\"\n";
        let shapes = "[[shape]]\nname = \"S1\"\nsource = \"S1: k s\"\nfields = [\n  { name = \"k\", type = \"string\" },\n]\n";
        let fields = vec![
            field("x", Ty::String),
            field("c", Ty::Array(Box::new(Ty::Shape("S1".into())))),
            field("o", Ty::Object),
        ];
        let cat = Catalogue {
            shapes: vec![Shape {
                name: "S1".into(),
                source: String::new(),
                inline: false,
                note: None,
                fields: vec![field("k", Ty::String)],
            }],
            events: vec![event("a.b-v1", fields.clone()), event("c.d-v1", fields)],
        };
        let d = Drift {
            events: vec![
                drift(
                    "a.b-v1",
                    vec![
                        und("y", &["integer", "null"]),
                        und("z.w", &["string"]),
                        und("v", &["array"]),
                        und("c.*.n", &["integer"]),
                        und("o.p", &["string"]),
                    ],
                ),
                drift(
                    "c.d-v1",
                    vec![und("q", &["boolean"]), und("c.*.n", &["number"])],
                ),
            ],
            ..Drift::default()
        };
        let s = suggest(&d, &cat, toml, shapes);
        assert!(
            s.patch
                .contains("+  { name = \"y\", type = \"integer\" },\n ]\n"),
            "{}",
            s.patch
        );
        assert!(
            s.patch
                .contains("+fields = [\n+  { name = \"q\", type = \"boolean\" },\n+]\n"),
            "{}",
            s.patch
        );
        // The nested field goes to its shape, its kinds merged over both events.
        assert!(
            s.patch.contains(
                "--- a/catalogue/shapes.toml\n+++ b/catalogue/shapes.toml\n@@ -3,4 +3,5 @@\n source = \"S1: k s\"\n fields = [\n   { name = \"k\", type = \"string\" },\n+  { name = \"n\", type = \"number\" },\n ]\n"
            ),
            "{}",
            s.patch
        );
        let notes = s.notes.join("\n");
        assert!(
            notes.contains("z.w is nested inside `z`, itself undeclared"),
            "{notes}"
        );
        assert!(
            notes.contains("o.p is nested inside `o.`, declared as a plain object"),
            "{notes}"
        );
        assert!(notes.contains("v is an array"), "{notes}");
        assert!(
            notes.contains("shape S1 gains n (number), seen on a.b-v1, c.d-v1: this declares it for every event version using the shape (2)"),
            "{notes}"
        );
        assert_eq!(s.notes.len(), 4, "{notes}");
        // The patch applies: every hunk's context is the file's.
        assert!(
            s.patch
                .starts_with("--- a/catalogue/events.toml\n+++ b/catalogue/events.toml\n@@ -4,"),
            "{}",
            s.patch
        );
    }
}
