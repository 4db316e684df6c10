//! Emits the Rust source generated from the resolved catalogue: a struct per shape and per event
//! version, the `Event` enum, the metadata tables, and the perfect-hash dispatch maps.

use std::fmt::Write;

use crate::model::{Catalogue, Field, Ty};

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// `billing.ledger.entry_posted-v2` → `BillingLedgerEntryPostedV2`.
pub fn camel(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'N');
    }
    out
}

fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_owned()
    }
}

fn rust_ty(ty: &Ty) -> String {
    match ty {
        Ty::String => "String".into(),
        Ty::Integer => "i64".into(),
        Ty::Number => "serde_json::Number".into(),
        Ty::Boolean => "bool".into(),
        Ty::Object => "crate::decode::catalogue::JsonObject".into(),
        Ty::Array(inner) => format!("Vec<{}>", rust_ty(inner)),
        Ty::Shape(name) => format!("crate::decode::catalogue::shapes::{}", camel(name)),
    }
}

fn spec_ty(ty: &Ty) -> String {
    match ty {
        Ty::String => "TypeSpec::String".into(),
        Ty::Integer => "TypeSpec::Integer".into(),
        Ty::Number => "TypeSpec::Number".into(),
        Ty::Boolean => "TypeSpec::Boolean".into(),
        Ty::Object => "TypeSpec::Object".into(),
        Ty::Array(inner) => format!("TypeSpec::Array(&{})", spec_ty(inner)),
        Ty::Shape(name) => format!("TypeSpec::Shape({name:?})"),
    }
}

fn field_specs(fields: &[Field]) -> String {
    let mut s = String::from("&[");
    for f in fields {
        let _ = write!(
            s,
            "FieldSpec {{ name: {:?}, ty: {}, required: {}, from: {:?} }}, ",
            f.name,
            spec_ty(&f.ty),
            f.required,
            f.from
        );
    }
    s.push(']');
    s
}

/// A struct with its `Decode` and `Struct` impls.
fn emit_struct(out: &mut String, rust_name: &str, doc: &str, fields: &[Field]) {
    let _ = writeln!(out, "/// `{doc}`");
    let _ = writeln!(out, "#[derive(Debug, Clone, PartialEq)]");
    let _ = writeln!(out, "pub struct {rust_name} {{");
    for f in fields {
        let ty = rust_ty(&f.ty);
        let ty = if f.required {
            ty
        } else {
            format!("Option<{ty}>")
        };
        let _ = writeln!(out, "    pub {}: {ty},", ident(&f.name));
    }
    let _ = writeln!(out, "}}\n");
    let _ = writeln!(out, "#[derive(Default)]\npub struct {rust_name}Slots {{");
    for (i, f) in fields.iter().enumerate() {
        let _ = writeln!(out, "    f{i}: rt::Slot<{}>,", rust_ty(&f.ty));
    }
    let _ = writeln!(out, "}}\n");
    let _ = writeln!(
        out,
        "impl rt::Decode for {rust_name} {{\n    const EXPECTED: &'static str = \"object\";\n    \
         fn decode<'de, D: serde::Deserializer<'de>>(d: D, cx: &mut rt::Ctx) -> Result<rt::Decoded<Self>, D::Error> {{\n        \
         rt::decode_struct::<Self, D>(d, cx)\n    }}\n}}\n"
    );
    let names: Vec<String> = fields.iter().map(|f| format!("{:?}", f.name)).collect();
    let _ = writeln!(out, "impl rt::Struct for {rust_name} {{");
    let _ = writeln!(out, "    type Slots = {rust_name}Slots;");
    let _ = writeln!(
        out,
        "    const NAMES: &'static [&'static str] = &[{}];",
        names.join(", ")
    );
    let _ = writeln!(
        out,
        "    fn index(key: &str) -> Option<usize> {{\n        match key {{"
    );
    for (i, f) in fields.iter().enumerate() {
        let _ = writeln!(out, "            {:?} => Some({i}),", f.name);
    }
    let _ = writeln!(out, "            _ => None,\n        }}\n    }}");
    let _ = writeln!(
        out,
        "    #[allow(unused_variables)]\n    fn put<'de, A: serde::de::MapAccess<'de>>(s: &mut Self::Slots, idx: usize, map: &mut A, cx: &mut rt::Ctx) -> Result<(), A::Error> {{\n        match idx {{"
    );
    for (i, f) in fields.iter().enumerate() {
        let _ = writeln!(
            out,
            "            {i} => rt::put(&mut s.f{i}, map, cx, {:?}, {}),",
            f.name, f.required
        );
    }
    let _ = writeln!(out, "            _ => Ok(()),\n        }}\n    }}");
    let _ = writeln!(
        out,
        "    #[allow(unused_variables)]\n    fn finish(s: Self::Slots, cx: &mut rt::Ctx) -> Option<Self> {{"
    );
    for (i, f) in fields.iter().enumerate() {
        let call = if f.required {
            format!("rt::required(s.f{i}, cx, {:?})", f.name)
        } else {
            format!("rt::optional(s.f{i})")
        };
        let _ = writeln!(out, "        let v{i} = {call};");
    }
    let _ = write!(out, "        Some(Self {{");
    for (i, f) in fields.iter().enumerate() {
        let _ = write!(out, " {}: v{i}?,", ident(&f.name));
    }
    let _ = writeln!(out, " }})\n    }}\n}}\n");
}

pub fn emit(cat: &Catalogue) -> String {
    let mut out = String::new();
    out.push_str(
        "// @generated by build/ from catalogue/*.toml. DO NOT EDIT: change catalogue/ instead.\n\n",
    );

    out.push_str("/// One struct per shared shape of the catalogue.\npub mod shapes {\n    use crate::decode::catalogue::rt;\n\n");
    for s in &cat.shapes {
        emit_struct(&mut out, &camel(&s.name), &s.source, &s.fields);
    }
    out.push_str("}\n\n");

    out.push_str("/// One struct per event version of the catalogue.\npub mod events {\n    use crate::decode::catalogue::rt;\n\n");
    for e in &cat.events {
        emit_struct(&mut out, &camel(&e.name), &e.source, &e.fields);
    }
    out.push_str("}\n\n");

    emit_field_names(&mut out, cat);

    out.push_str("/// A decoded catalogue event: one variant per event version.\n#[allow(clippy::large_enum_variant)]\n#[derive(Debug, Clone, PartialEq)]\npub enum Event {\n");
    for e in &cat.events {
        let _ = writeln!(
            out,
            "    /// `{}`\n    {}(events::{}),",
            e.name,
            camel(&e.name),
            camel(&e.name)
        );
    }
    out.push_str("}\n\nimpl Event {\n    /// The full event name, `<type>-<version>`.\n    pub fn name(&self) -> &'static str {\n        match self {\n");
    for e in &cat.events {
        let _ = writeln!(
            out,
            "            Event::{}(_) => {:?},",
            camel(&e.name),
            e.name
        );
    }
    out.push_str("        }\n    }\n}\n\n");

    // Dispatch: a perfect-hash map from full name to index, then a match on the index (a jump table).
    let _ = writeln!(
        out,
        "/// Decodes the payload text of catalogue event number `idx`.\npub(crate) fn decode_index(idx: u16, json: &str, cx: &mut rt::Ctx) -> Result<rt::Decoded<Event>, serde_json::Error> {{\n    let mut de = serde_json::Deserializer::from_str(json);\n    let out = match idx {{"
    );
    for (i, e) in cat.events.iter().enumerate() {
        let c = camel(&e.name);
        let _ = writeln!(
            out,
            "        {i} => <events::{c} as rt::Decode>::decode(&mut de, cx)?.map(Event::{c}),"
        );
    }
    out.push_str("        _ => rt::Decoded::Bad,\n    };\n    de.end()?;\n    Ok(out)\n}\n\n");

    let mut by_name = phf_codegen::Map::new();
    for (i, e) in cat.events.iter().enumerate() {
        by_name.entry(e.name.as_str(), &format!("{i}u16"));
    }
    let _ = writeln!(
        out,
        "/// Full event name → index into [`EVENTS`].\npub(crate) static BY_NAME: phf::Map<&'static str, u16> = {};\n",
        by_name.build()
    );
    let mut types = phf_codegen::Set::new();
    let mut seen = std::collections::HashSet::new();
    for e in &cat.events {
        if seen.insert(e.event_type.as_str()) {
            types.entry(e.event_type.as_str());
        }
    }
    let _ = writeln!(
        out,
        "/// Every event type of the catalogue (any version).\npub(crate) static TYPES: phf::Set<&'static str> = {};\n",
        types.build()
    );

    let _ = writeln!(
        out,
        "/// Every event version of the catalogue, in document order.\npub static EVENTS: [EventSpec; {}] = [",
        cat.events.len()
    );
    for e in &cat.events {
        let _ = writeln!(
            out,
            "    EventSpec {{ name: {:?}, event_type: {:?}, version: {:?}, section: {:?}, source: {:?}, open: {}, note: {:?}, fields: {} }},",
            e.name, e.event_type, e.version, e.section, e.source, e.open, e.note, field_specs(&e.fields)
        );
    }
    out.push_str("];\n\n");
    let _ = writeln!(
        out,
        "/// Every shared shape of the catalogue, in document order.\npub static SHAPES: [ShapeSpec; {}] = [",
        cat.shapes.len()
    );
    for s in &cat.shapes {
        let _ = writeln!(
            out,
            "    ShapeSpec {{ name: {:?}, source: {:?}, inline: {}, note: {:?}, fields: {} }},",
            s.name,
            s.source,
            s.inline,
            s.note,
            field_specs(&s.fields)
        );
    }
    out.push_str("];\n");
    out
}

/// `lifecycle.join-supplier.requested-v1` → `lifecycle_join_supplier_requested_v1` (runs of
/// other characters become one `_`).
fn snake(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        if !part.is_empty() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push_str(&part.to_ascii_lowercase());
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'n');
    }
    ident(&out)
}

/// A module of field-name constants per event version and per shape (`EXTERNAL_IDENTIFIER:
/// "external_identifier"`): SQL that reads a payload field by name takes it from here, so that
/// renaming the field in `catalogue/` breaks the build instead of silently matching nothing.
fn emit_field_names(out: &mut String, cat: &Catalogue) {
    out.push_str(
        "/// The field names of each event version and shape, as constants.\npub mod fields {\n",
    );
    let module = |out: &mut String, name: &str, fields: &[Field]| {
        let _ = writeln!(out, "    /// `{name}`\n    pub mod {} {{", snake(name));
        let mut seen = std::collections::HashSet::new();
        for f in fields {
            let c = snake(&f.name).trim_start_matches("r#").to_ascii_uppercase();
            if seen.insert(c.clone()) {
                let _ = writeln!(out, "        pub const {c}: &str = {:?};", f.name);
            }
        }
        out.push_str("    }\n");
    };
    for e in &cat.events {
        module(out, &e.name, &e.fields);
    }
    out.push_str("    /// The shared shapes' field names.\n    pub mod shapes {\n");
    let mut inner = String::new();
    for s in &cat.shapes {
        module(&mut inner, &s.name, &s.fields);
    }
    for line in inner.lines() {
        let _ = writeln!(out, "    {line}");
    }
    out.push_str("    }\n}\n\n");
}
