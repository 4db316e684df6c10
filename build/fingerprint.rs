//! The catalogue's fingerprint: SHA-256 over a canonical text of its data (event names,
//! openness, fields with their types and requiredness, shapes), so it changes when, and only
//! when, what the decoder checks changes — never for a quote, a note or a comment.

use sha2::{Digest, Sha256};

use super::model::{Catalogue, Field, Ty};

fn ty(t: &Ty) -> String {
    match t {
        Ty::String => "s".into(),
        Ty::Integer => "i".into(),
        Ty::Number => "n".into(),
        Ty::Boolean => "b".into(),
        Ty::Object => "o".into(),
        Ty::Array(inner) => format!("[{}]", ty(inner)),
        Ty::Shape(name) => format!("@{name}"),
    }
}

fn fields(out: &mut String, fields: &[Field]) {
    let mut sorted: Vec<&Field> = fields.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for f in sorted {
        out.push_str(&format!(
            "  {} {} {}\n",
            f.name,
            ty(&f.ty),
            if f.required { "required" } else { "optional" }
        ));
    }
}

/// The canonical text the fingerprint hashes.
pub(super) fn canonical(cat: &Catalogue) -> String {
    let mut out = String::from("event-audit catalogue v1\n");
    let mut shapes: Vec<_> = cat.shapes.iter().collect();
    shapes.sort_by(|a, b| a.name.cmp(&b.name));
    for s in shapes {
        out.push_str(&format!("shape {}\n", s.name));
        fields(&mut out, &s.fields);
    }
    let mut events: Vec<_> = cat.events.iter().collect();
    events.sort_by(|a, b| a.name.cmp(&b.name));
    for e in events {
        out.push_str(&format!(
            "event {}{}\n",
            e.name,
            if e.open { " open" } else { "" }
        ));
        fields(&mut out, &e.fields);
    }
    out
}

/// The first 16 hex digits of the SHA-256 of [`canonical`].
pub(super) fn fingerprint(cat: &Catalogue) -> String {
    let digest = Sha256::digest(canonical(cat).as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
