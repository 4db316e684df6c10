//! Catalogue evolution at design time: a catalogue directory read at run time (the build
//! script's own model, shared by `#[path]`), its fingerprint, and the compatibility of two
//! catalogues or two versions of one event type (`diff`).

pub(crate) mod diff;

#[allow(dead_code)] // the build script's model: the generator needs fields this room does not
#[path = "../../build/model.rs"]
mod model;

#[allow(dead_code)]
#[path = "../../build/fingerprint.rs"]
mod fingerprint;

use std::path::Path;

// `model` names the event-name rules as `super::names`, like in the build script.
use crate::decode::catalogue::names;
use crate::decode::catalogue::rt::dynamic::DynCatalogue;
use crate::decode::catalogue::{EventSpec, FieldSpec, ShapeSpec, TypeSpec, EVENTS, SHAPES};

pub use model::{Catalogue, Event, Field, Shape, Ty};

/// Why a catalogue directory cannot be read: names the file, the line and the problem.
#[derive(Debug, thiserror::Error)]
#[error("catalogue {dir}: {problem}")]
pub struct LoadError {
    pub(crate) dir: String,
    pub(crate) problem: String,
}

/// Reads and checks a catalogue directory (`shapes.toml`, `field_sets.toml`, `events.toml`).
pub fn load(dir: &Path) -> Result<Catalogue, LoadError> {
    model::load(dir).map_err(|problem| LoadError {
        dir: dir.display().to_string(),
        problem,
    })
}

/// The fingerprint of a catalogue read at run time (the same function the build uses).
pub(crate) fn fingerprint_of(cat: &Catalogue) -> String {
    fingerprint::fingerprint(cat)
}

fn ty_of(t: &TypeSpec) -> Ty {
    match t {
        TypeSpec::String => Ty::String,
        TypeSpec::Integer => Ty::Integer,
        TypeSpec::Number => Ty::Number,
        TypeSpec::Boolean => Ty::Boolean,
        TypeSpec::Object => Ty::Object,
        TypeSpec::Array(inner) => Ty::Array(Box::new(ty_of(inner))),
        TypeSpec::Shape(name) => Ty::Shape((*name).to_owned()),
    }
}

fn fields_of(fields: &[FieldSpec]) -> Vec<Field> {
    fields
        .iter()
        .map(|f| Field {
            name: f.name.to_owned(),
            ty: ty_of(&f.ty),
            required: f.required,
            from: f.from.to_owned(),
        })
        .collect()
}

/// The catalogue built into this binary, as the run-time model.
pub(crate) fn builtin() -> Catalogue {
    Catalogue {
        shapes: SHAPES
            .iter()
            .map(|s| Shape {
                name: s.name.to_owned(),
                source: s.source.to_owned(),
                inline: s.inline,
                note: s.note.map(str::to_owned),
                fields: fields_of(s.fields),
            })
            .collect(),
        events: EVENTS
            .iter()
            .map(|e| Event {
                name: e.name.to_owned(),
                event_type: e.event_type.to_owned(),
                version: e.version.to_owned(),
                section: e.section.to_owned(),
                source: e.source.to_owned(),
                open: e.open,
                note: e.note.map(str::to_owned),
                fields: fields_of(e.fields),
            })
            .collect(),
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn spec_of(t: &Ty) -> TypeSpec {
    match t {
        Ty::String => TypeSpec::String,
        Ty::Integer => TypeSpec::Integer,
        Ty::Number => TypeSpec::Number,
        Ty::Boolean => TypeSpec::Boolean,
        Ty::Object => TypeSpec::Object,
        Ty::Array(inner) => TypeSpec::Array(Box::leak(Box::new(spec_of(inner)))),
        Ty::Shape(name) => TypeSpec::Shape(leak(name)),
    }
}

fn specs_of(fields: &[Field]) -> &'static [FieldSpec] {
    let v: Vec<FieldSpec> = fields
        .iter()
        .map(|f| FieldSpec {
            name: leak(&f.name),
            ty: spec_of(&f.ty),
            required: f.required,
            from: leak(&f.from),
        })
        .collect();
    Box::leak(v.into_boxed_slice())
}

/// A loaded catalogue for the run-time interpreter (`verdict::decode_with`). Its names are
/// leaked: call it once per process (a command loads one catalogue).
pub fn dynamic(cat: &Catalogue) -> DynCatalogue {
    let events: Vec<EventSpec> = cat
        .events
        .iter()
        .map(|e| EventSpec {
            name: leak(&e.name),
            event_type: leak(&e.event_type),
            version: leak(&e.version),
            section: leak(&e.section),
            source: leak(&e.source),
            open: e.open,
            note: e.note.as_deref().map(leak),
            fields: specs_of(&e.fields),
        })
        .collect();
    let shapes: Vec<ShapeSpec> = cat
        .shapes
        .iter()
        .map(|s| ShapeSpec {
            name: leak(&s.name),
            source: leak(&s.source),
            inline: s.inline,
            note: s.note.as_deref().map(leak),
            fields: specs_of(&s.fields),
        })
        .collect();
    DynCatalogue::new(
        fingerprint_of(cat),
        Box::leak(events.into_boxed_slice()),
        Box::leak(shapes.into_boxed_slice()),
    )
}

/// Edit distance between two names (insertions, deletions, substitutions).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Up to three candidates close to `name` (a third of its length in edits, at least 2), the
/// closest first; a candidate that starts with `name` counts as close.
pub(crate) fn close_names<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|c| {
            let d = distance(name, c);
            (d <= limit || c.starts_with(name)).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_owned())
        .collect()
}

impl Ty {
    /// The type as the catalogue writes it (`string`, `[integer]`, a shape name).
    pub fn text(&self) -> String {
        match self {
            Ty::String => "string".into(),
            Ty::Integer => "integer".into(),
            Ty::Number => "number".into(),
            Ty::Boolean => "boolean".into(),
            Ty::Object => "object".into(),
            Ty::Array(inner) => format!("[{}]", inner.text()),
            Ty::Shape(name) => name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalogue read at run time judges a name without payload as the generated decoders
    /// do: malformed, `no_payload`, its name kept.
    #[test]
    fn a_name_without_payload_is_no_payload_with_the_dynamic_catalogue_too() {
        use crate::decode::catalogue::rt::ErrorCode;
        use crate::decode::verdict::{decode_with, Status};
        let c = dynamic(&builtin());
        let v = decode_with(br#"{"event": "account.created-v1"}"#, None, &c);
        assert_eq!(v.status, Status::Malformed);
        assert_eq!(v.type_and_version(), (Some("account.created"), Some("v1")));
        assert_eq!(v.errors.len(), 1);
        assert_eq!(v.errors[0].code, ErrorCode::NoPayload);
    }

    fn copy_catalogue() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
        for f in ["shapes.toml", "field_sets.toml", "events.toml"] {
            std::fs::copy(src.join(f), dir.path().join(f)).expect("copy");
        }
        dir
    }

    fn edit(dir: &Path, file: &str, f: impl FnOnce(String) -> String) {
        let p = dir.join(file);
        let text = std::fs::read_to_string(&p).expect("read");
        std::fs::write(&p, f(text)).expect("write");
    }

    fn fp(dir: &Path) -> String {
        fingerprint_of(&load(dir).expect("loads"))
    }

    #[test]
    fn fingerprint_of_the_directory_is_the_built_in_one() {
        let dir = copy_catalogue();
        assert_eq!(fp(dir.path()), crate::decode::catalogue::FINGERPRINT);
        assert_eq!(
            fingerprint_of(&builtin()),
            crate::decode::catalogue::FINGERPRINT
        );
    }

    #[test]
    fn fingerprint_ignores_comments_quotes_and_notes() {
        let dir = copy_catalogue();
        let before = fp(dir.path());
        edit(dir.path(), "events.toml", |t| {
            format!(
                "# a new comment\n{}",
                t.replace("\n[[event]]\n", "\n# here\n[[event]]\n")
            )
        });
        // Another quoting of the same string, and a changed transcription (`source`).
        edit(dir.path(), "events.toml", |t| {
            t.replacen(
                "name = \"account.occupied-v1\"",
                "name = 'account.occupied-v1'",
                1,
            )
            .replacen(
                "source = \"account.occupied-v1: account_number*s\"",
                "source = \"account.occupied-v1:  account_number*s (retyped)\"",
                1,
            )
        });
        assert_eq!(fp(dir.path()), before);
    }

    #[test]
    fn fingerprint_changes_with_the_data() {
        let base = fp(copy_catalogue().path());
        let cases: [(&str, &str, &str); 4] = [
            // requiredness
            (
                "{ name = \"is_imported\", type = \"boolean\" }",
                "{ name = \"is_imported\", type = \"boolean\", required = true }",
                "requiredness",
            ),
            // a type
            (
                "{ name = \"is_imported\", type = \"boolean\" }",
                "{ name = \"is_imported\", type = \"string\" }",
                "type",
            ),
            // a new optional field
            (
                "{ name = \"is_imported\", type = \"boolean\" }",
                "{ name = \"is_imported\", type = \"boolean\" },\n  { name = \"extra\", type = \"integer\" }",
                "new field",
            ),
            // openness
            (
                "name = \"account.occupied-v1\"\n",
                "name = \"account.occupied-v1\"\nopen = true\n",
                "open",
            ),
        ];
        for (from, to, what) in cases {
            let dir = copy_catalogue();
            edit(dir.path(), "events.toml", |t| {
                assert!(t.contains(from), "{what}: fixture text not found");
                t.replacen(from, to, 1)
            });
            assert_ne!(fp(dir.path()), base, "{what} must change the fingerprint");
        }
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        let dir = copy_catalogue();
        edit(dir.path(), "events.toml", |t| {
            t.replacen("[[event]]", "[[event]\n", 1)
        });
        let err = load(dir.path()).err().expect("refused").to_string();
        assert!(err.contains("events.toml"), "{err}");
        assert!(err.contains("line"), "{err}");
    }
}
