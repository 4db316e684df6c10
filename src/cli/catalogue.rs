//! `event-audit catalogue list|show|shapes|diff`: how an auditor checks catalogue/ against the
//! document, and how a catalogue change is judged before it ships.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use crate::decode::catalogue::{
    find_event, find_shape, FieldSpec, TypeSpec, EVENTS, FINGERPRINT, SHAPES,
};
use crate::evolution::compat::{self, diff};

/// Output format of the catalogue commands.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ListFormat {
    #[default]
    Table,
    Json,
}

/// `event-audit catalogue ...`.
#[derive(clap::Subcommand, Debug, Clone)]
pub(crate) enum CatalogueAction {
    /// The catalogue's fingerprint, then one line per event version: full name, required and
    /// optional field counts. The JSON also gives every version's fields and every shape's.
    List {
        #[arg(long, value_enum, default_value = "table")]
        format: ListFormat,
    },
    /// One event version's (or shape's) fields, types and requiredness, shapes expanded. A type
    /// without its version lists its versions.
    Show {
        /// Full event name (e.g. account.created-v1), event type, or shape name.
        name: String,
    },
    /// The shared shapes: name, field count, inline or not.
    Shapes {
        #[arg(long, value_enum, default_value = "table")]
        format: ListFormat,
    },
    /// Changes between two catalogue directories (NEW_DIR defaults to the built-in catalogue),
    /// or between two versions of one event type, each classified backward / forward compatible.
    Diff(DiffArgs),
}

/// Options of `event-audit catalogue diff`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DiffArgs {
    /// The old catalogue directory (shapes.toml, field_sets.toml, events.toml).
    #[arg(required_unless_present = "between")]
    pub(crate) old_dir: Option<PathBuf>,
    /// The new catalogue directory [default: the catalogue built into this binary].
    pub(crate) new_dir: Option<PathBuf>,
    /// Two event versions of one catalogue (the built-in one, or OLD_DIR when given):
    /// TYPE-vA TYPE-vB.
    #[arg(long, num_args = 2, value_names = ["OLD_EVENT", "NEW_EVENT"])]
    pub(crate) between: Option<Vec<String>>,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
}

pub(super) fn run(action: CatalogueAction) -> anyhow::Result<ExitCode> {
    let out = &mut std::io::stdout().lock();
    match action {
        CatalogueAction::List { format } => list(out, format),
        CatalogueAction::Show { name } => show(out, &name),
        CatalogueAction::Shapes { format } => shapes(out, format),
        CatalogueAction::Diff(args) => diff_cmd(out, &args),
    }
}

/// A field as JSON: its name, its type as catalogue/ writes it (`string`, `integer`, `number`,
/// `boolean`, `object`, a shape's name, `[T]` for an array of `T`), whether it is required, and
/// the field set or event it comes from ("" when the entry lists it itself).
fn field_json(f: &FieldSpec) -> serde_json::Value {
    serde_json::json!({
        "name": f.name, "type": f.ty.to_string(), "required": f.required, "from": f.from,
    })
}

/// `# catalogue <fingerprint>`, then one line per event version:
/// `name<TAB>required N<TAB>optional M[<TAB>open]`. JSON: `{fingerprint, events: [...],
/// shapes: [...]}`, each event version with its fields (extends and field sets expanded, in the
/// order a message lists them) and each shape with its own; what the fuzz tools make their
/// dictionary and structured inputs from (fuzz/make_dict.py, fuzz/structured_inputs.py).
pub(super) fn list(out: &mut impl Write, format: ListFormat) -> anyhow::Result<ExitCode> {
    if format == ListFormat::Json {
        let events: Vec<_> = EVENTS
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name, "type": e.event_type, "version": e.version,
                    "section": e.section, "required": e.required_count(),
                    "optional": e.optional_count(), "open": e.open,
                    "fields": e.fields.iter().map(field_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        let shapes: Vec<_> = SHAPES
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name, "inline": s.inline,
                    "fields": s.fields.iter().map(field_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "fingerprint": FINGERPRINT, "events": events, "shapes": shapes,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "# catalogue {FINGERPRINT}")?;
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

/// One line per shape: `name<TAB>fields N[<TAB>inline]`.
pub(crate) fn shapes(out: &mut impl Write, format: ListFormat) -> anyhow::Result<ExitCode> {
    if format == ListFormat::Json {
        let shapes: Vec<_> = SHAPES
            .iter()
            .map(|s| serde_json::json!({"name": s.name, "fields": s.fields.len(), "inline": s.inline}))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&shapes)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in SHAPES.iter() {
        let inline = if s.inline { "\tinline" } else { "" };
        writeln!(out, "{}\tfields {}{inline}", s.name, s.fields.len())?;
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

/// An event version's (or a shape's) fields, shapes expanded and indented; a type's versions.
pub(crate) fn show(out: &mut impl Write, name: &str) -> anyhow::Result<ExitCode> {
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
    let versions: Vec<&str> = EVENTS
        .iter()
        .filter(|e| e.event_type == name)
        .map(|e| e.name)
        .collect();
    if !versions.is_empty() {
        writeln!(out, "type\t{name}\nversions:")?;
        for v in versions {
            writeln!(out, "  {v}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let names = EVENTS
        .iter()
        .map(|e| e.name)
        .chain(SHAPES.iter().map(|s| s.name));
    let close = compat::close_names(name, names);
    let hint = if close.is_empty() {
        "see `event-audit catalogue list`".to_owned()
    } else {
        format!("did you mean {}?", close.join(" or "))
    };
    bail!(
        "`{name}` is neither an event version, an event type nor a shape of the catalogue; {hint}"
    )
}

fn diff_cmd(out: &mut impl Write, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let load = |dir: &PathBuf| compat::load(dir);
    let (label, changes) = if let Some(pair) = &args.between {
        let cat = match &args.old_dir {
            Some(dir) => load(dir)?,
            None => compat::builtin(),
        };
        let (a, b) = (&pair[0], &pair[1]);
        (
            format!("{a} → {b}"),
            diff::between(&cat, a, b).map_err(anyhow::Error::msg)?,
        )
    } else {
        let Some(old_dir) = &args.old_dir else {
            bail!("catalogue diff needs OLD_DIR or --between TYPE-vA TYPE-vB");
        };
        let old = load(old_dir)?;
        let new = match &args.new_dir {
            Some(dir) => load(dir)?,
            None => compat::builtin(),
        };
        let label = format!(
            "{} ({}) → {} ({})",
            old_dir.display(),
            compat::fingerprint_of(&old),
            args.new_dir
                .as_ref()
                .map_or_else(|| "built-in".to_owned(), |d| d.display().to_string()),
            compat::fingerprint_of(&new)
        );
        (label, diff::catalogues(&old, &new))
    };
    let backward = changes.iter().all(|c| c.backward);
    let forward = changes.iter().all(|c| c.forward);
    if args.format == ListFormat::Json {
        let doc = serde_json::json!({
            "compared": label, "backward": backward, "forward": forward, "changes": changes,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "# {label}")?;
    writeln!(out, "event\tchange\tbackward\tforward")?;
    let yn = |b: bool| if b { "yes" } else { "NO" };
    for c in &changes {
        writeln!(
            out,
            "{}\t{}\t{}\t{}",
            c.event,
            diff::describe(&c.change),
            yn(c.backward),
            yn(c.forward)
        )?;
    }
    writeln!(
        out,
        "# {} changes; backward compatible: {}; forward compatible: {}",
        changes.len(),
        yn(backward),
        yn(forward)
    )?;
    Ok(ExitCode::SUCCESS)
}
