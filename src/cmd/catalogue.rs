//! `event-audit catalogue list|show`: how an auditor checks catalogue/ against the document.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;

use crate::catalogue::{find_event, find_shape, FieldSpec, TypeSpec, EVENTS};

/// One line per event version: `name<TAB>required N<TAB>optional M`.
pub fn list(out: &mut impl Write) -> anyhow::Result<ExitCode> {
    for e in EVENTS.iter() {
        writeln!(
            out,
            "{}\trequired {}\toptional {}{}",
            e.name,
            e.required_count(),
            e.optional_count(),
            if e.open { "\topen" } else { "" }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn shape_of(ty: &TypeSpec) -> Option<&'static str> {
    match ty {
        TypeSpec::Shape(name) => Some(name),
        TypeSpec::Array(inner) => shape_of(inner),
        _ => None,
    }
}

fn fields(out: &mut impl Write, fields: &[FieldSpec], indent: usize) -> std::io::Result<()> {
    for f in fields {
        let from = if f.from.is_empty() {
            String::new()
        } else {
            format!("\t(from {})", f.from)
        };
        writeln!(
            out,
            "{:indent$}{}\t{}\t{}{from}",
            "",
            f.name,
            f.ty,
            if f.required { "required" } else { "optional" },
        )?;
        if let Some(shape) = shape_of(&f.ty).and_then(find_shape) {
            self::fields(out, shape.fields, indent + 2)?;
        }
    }
    Ok(())
}

/// An event version's (or a shape's) fields, shapes expanded and indented.
pub fn show(out: &mut impl Write, name: &str) -> anyhow::Result<ExitCode> {
    if let Some(e) = find_event(name) {
        writeln!(out, "event\t{}", e.name)?;
        writeln!(out, "type\t{}\nversion\t{}", e.event_type, e.version)?;
        writeln!(out, "section\t{}\nsource\t{}", e.section, e.source)?;
        if e.open {
            writeln!(
                out,
                "open\tyes: fields the catalogue does not list are expected"
            )?;
        }
        if let Some(note) = e.note {
            writeln!(out, "note\t{note}")?;
        }
        writeln!(out, "fields:")?;
        fields(out, e.fields, 2)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(s) = find_shape(name) {
        writeln!(out, "shape\t{}\nsource\t{}", s.name, s.source)?;
        if let Some(note) = s.note {
            writeln!(out, "note\t{note}")?;
        }
        writeln!(out, "fields:")?;
        fields(out, s.fields, 2)?;
        return Ok(ExitCode::SUCCESS);
    }
    bail!("`{name}` is neither an event version nor a shape of the catalogue (see `event-audit catalogue list`)")
}
