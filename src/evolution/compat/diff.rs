//! Compatibility of two catalogues (or two versions of one event type), in the sense schema
//! registries use: **backward** — a consumer with the new catalogue reads events produced under
//! the old one; **forward** — a consumer with the old catalogue reads events produced under the
//! new one. Pure: works on loaded catalogues.
//!
//! Fields are compared by path, shapes expanded (`supply_points.*.market_name`); a field whose
//! type is a shape compares as `object` (or `[object]`) and its fields compare one by one, so a
//! renamed shape with the same fields is no change. Unknown fields are recorded, not refused, by
//! the decoder: a field the reader does not list never makes an event unreadable.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Catalogue, Event, Field, Ty};

/// Shapes nest at most this deep when fields are flattened (the catalogue has no cycles; this
/// only bounds a malformed one).
const MAX_DEPTH: usize = 8;

/// One difference between the old and the new definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub(crate) enum Change {
    EventAdded,
    EventRemoved,
    FieldAdded {
        path: String,
        ty: String,
        required: bool,
    },
    FieldRemoved {
        path: String,
        ty: String,
        required: bool,
    },
    MadeRequired {
        path: String,
    },
    MadeOptional {
        path: String,
    },
    TypeChanged {
        path: String,
        from: String,
        to: String,
    },
    OpenChanged {
        open: bool,
    },
}

/// A change with its classification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Classified {
    /// The event version (for `--between`, `OLD → NEW`).
    pub(crate) event: String,
    #[serde(flatten)]
    pub(crate) change: Change,
    /// New reader, old data.
    pub(crate) backward: bool,
    /// Old reader, new data.
    pub(crate) forward: bool,
}

/// `(backward, forward)` compatibility of one change.
pub(crate) fn classify(c: &Change) -> (bool, bool) {
    match c {
        // Old data has no events of a new version; an old reader calls them unknown.
        Change::EventAdded => (true, false),
        // Stored events of a removed version become unknown to the new reader.
        Change::EventRemoved => (false, true),
        // Old data lacks the field: fine if optional. An old reader records it as unknown.
        Change::FieldAdded { required, .. } => (!required, true),
        // The new reader records it as unknown; an old reader misses it if it required it.
        Change::FieldRemoved { required, .. } => (true, !required),
        Change::MadeRequired { .. } => (false, true),
        Change::MadeOptional { .. } => (true, false),
        // Widening integer → number reads old data; nothing else reads across a type change.
        Change::TypeChanged { from, to, .. } => (from == "integer" && to == "number", false),
        // Openness says whether unknown fields are expected: it changes no verdict.
        Change::OpenChanged { .. } => (true, true),
    }
}

/// A field flattened to its path: type text (shapes as `object`) and requiredness.
type Flat = BTreeMap<String, (String, bool)>;

fn ty_text(t: &Ty) -> String {
    match t {
        Ty::Shape(_) => "object".into(),
        Ty::Array(inner) => format!("[{}]", ty_text(inner)),
        other => other.text(),
    }
}

fn shape_of(t: &Ty) -> Option<(&str, bool)> {
    match t {
        Ty::Shape(s) => Some((s, false)),
        Ty::Array(inner) => shape_of(inner).map(|(s, _)| (s, true)),
        _ => None,
    }
}

fn flatten(cat: &Catalogue, fields: &[Field], prefix: &str, depth: usize, out: &mut Flat) {
    for f in fields {
        let path = format!("{prefix}{}", f.name);
        out.insert(path.clone(), (ty_text(&f.ty), f.required));
        if depth >= MAX_DEPTH {
            continue;
        }
        if let Some((shape, array)) = shape_of(&f.ty) {
            if let Some(s) = cat.shapes.iter().find(|s| s.name == shape) {
                let inner = if array {
                    format!("{path}.*.")
                } else {
                    format!("{path}.")
                };
                flatten(cat, &s.fields, &inner, depth + 1, out);
            }
        }
    }
}

fn flat(cat: &Catalogue, e: &Event) -> Flat {
    let mut out = Flat::new();
    flatten(cat, &e.fields, "", 0, &mut out);
    out
}

/// The changes from `old` (in catalogue `oc`) to `new` (in catalogue `nc`), path order.
pub(crate) fn event_changes(
    oc: &Catalogue,
    old: &Event,
    nc: &Catalogue,
    new: &Event,
) -> Vec<Change> {
    let (a, b) = (flat(oc, old), flat(nc, new));
    let mut out = Vec::new();
    if old.open != new.open {
        out.push(Change::OpenChanged { open: new.open });
    }
    for (path, (ty, req)) in &a {
        match b.get(path) {
            None => out.push(Change::FieldRemoved {
                path: path.clone(),
                ty: ty.clone(),
                required: *req,
            }),
            Some((nty, nreq)) => {
                if ty != nty {
                    out.push(Change::TypeChanged {
                        path: path.clone(),
                        from: ty.clone(),
                        to: nty.clone(),
                    });
                }
                match (req, nreq) {
                    (false, true) => out.push(Change::MadeRequired { path: path.clone() }),
                    (true, false) => out.push(Change::MadeOptional { path: path.clone() }),
                    _ => {}
                }
            }
        }
    }
    for (path, (ty, req)) in &b {
        if !a.contains_key(path) {
            out.push(Change::FieldAdded {
                path: path.clone(),
                ty: ty.clone(),
                required: *req,
            });
        }
    }
    out
}

fn classified(event: &str, changes: Vec<Change>) -> impl Iterator<Item = Classified> + '_ {
    changes.into_iter().map(move |change| {
        let (backward, forward) = classify(&change);
        Classified {
            event: event.to_owned(),
            change,
            backward,
            forward,
        }
    })
}

/// Every change from catalogue `old` to catalogue `new`, by event version name.
pub(crate) fn catalogues(old: &Catalogue, new: &Catalogue) -> Vec<Classified> {
    let olds: BTreeMap<&str, &Event> = old.events.iter().map(|e| (e.name.as_str(), e)).collect();
    let news: BTreeMap<&str, &Event> = new.events.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut names: Vec<&str> = olds.keys().chain(news.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let changes = match (olds.get(name), news.get(name)) {
            (Some(_), None) => vec![Change::EventRemoved],
            (None, Some(_)) => vec![Change::EventAdded],
            (Some(o), Some(n)) => event_changes(old, o, new, n),
            (None, None) => Vec::new(),
        };
        out.extend(classified(name, changes));
    }
    out
}

/// The changes between two event versions of one catalogue (`a` → `b`).
pub(crate) fn between(cat: &Catalogue, a: &str, b: &str) -> Result<Vec<Classified>, String> {
    let find = |n: &str| {
        cat.events
            .iter()
            .find(|e| e.name == n)
            .ok_or_else(|| format!("`{n}` is not an event version of the catalogue"))
    };
    let (ea, eb) = (find(a)?, find(b)?);
    let label = format!("{a} → {b}");
    Ok(classified(&label, event_changes(cat, ea, cat, eb)).collect())
}

/// One change in words (`field added: x (string, optional)`).
pub(crate) fn describe(c: &Change) -> String {
    let req = |r: &bool| if *r { "required" } else { "optional" };
    match c {
        Change::EventAdded => "event added".into(),
        Change::EventRemoved => "event removed".into(),
        Change::FieldAdded { path, ty, required } => {
            format!("field added: {path} ({ty}, {})", req(required))
        }
        Change::FieldRemoved { path, ty, required } => {
            format!("field removed: {path} ({ty}, {})", req(required))
        }
        Change::MadeRequired { path } => format!("made required: {path}"),
        Change::MadeOptional { path } => format!("made optional: {path}"),
        Change::TypeChanged { path, from, to } => format!("type changed: {path} {from} → {to}"),
        Change::OpenChanged { open } => format!("open: {open}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evolution::compat::model::Field;
    use proptest::prelude::*;

    const TYPES: [Ty; 5] = [Ty::String, Ty::Integer, Ty::Number, Ty::Boolean, Ty::Object];

    fn event(fields: Vec<Field>) -> Event {
        Event {
            name: "t.e-v1".into(),
            event_type: "t.e".into(),
            version: "v1".into(),
            section: String::new(),
            source: String::new(),
            open: false,
            note: None,
            fields,
        }
    }

    fn cat(e: Event) -> Catalogue {
        Catalogue {
            shapes: Vec::new(),
            events: vec![e],
        }
    }

    fn fields() -> impl Strategy<Value = Vec<Field>> {
        prop::collection::btree_map("[a-h]{1,3}", (0..TYPES.len(), any::<bool>()), 1..8).prop_map(
            |m| {
                m.into_iter()
                    .map(|(name, (t, required))| Field {
                        name,
                        ty: TYPES[t].clone(),
                        required,
                        from: String::new(),
                    })
                    .collect()
            },
        )
    }

    fn diff(old: Vec<Field>, new: Vec<Field>) -> Vec<Classified> {
        catalogues(&cat(event(old)), &cat(event(new)))
    }

    proptest! {
        #[test]
        fn optional_field_added_is_backward_compatible(old in fields(), t in 0..TYPES.len()) {
            let mut new = old.clone();
            new.push(Field { name: "zz_new".into(), ty: TYPES[t].clone(), required: false, from: String::new() });
            let d = diff(old, new);
            prop_assert_eq!(d.len(), 1);
            prop_assert!(d.iter().all(|c| c.backward && c.forward));
        }

        #[test]
        fn field_made_required_is_not_backward_compatible(old in fields(), i in any::<prop::sample::Index>()) {
            let mut old = old;
            let i = i.index(old.len());
            old[i].required = false;
            let mut new = old.clone();
            new[i].required = true;
            let d = diff(old, new);
            prop_assert_eq!(d.len(), 1);
            prop_assert!(!d[0].backward);
            prop_assert!(d[0].forward);
        }

        #[test]
        fn required_field_added_is_not_backward_compatible(old in fields(), t in 0..TYPES.len()) {
            let mut new = old.clone();
            new.push(Field { name: "zz_new".into(), ty: TYPES[t].clone(), required: true, from: String::new() });
            prop_assert!(diff(old, new).iter().any(|c| !c.backward));
        }

        #[test]
        fn type_changed_is_not_compatible(old in fields(), i in any::<prop::sample::Index>(), step in 1..TYPES.len()) {
            let i = i.index(old.len());
            let from = TYPES.iter().position(|t| *t == old[i].ty).unwrap_or(0);
            let mut to = (from + step) % TYPES.len();
            if TYPES[from] == Ty::Integer && TYPES[to] == Ty::Number {
                to = (to + 1) % TYPES.len();
            }
            let mut new = old.clone();
            new[i].ty = TYPES[to].clone();
            let d = diff(old, new);
            let typed = d.iter().any(|c| matches!(c.change, Change::TypeChanged { .. }) && !c.backward && !c.forward);
            prop_assert!(typed, "{:?}", d);
        }

        #[test]
        fn same_catalogue_has_no_changes(old in fields()) {
            prop_assert!(diff(old.clone(), old).is_empty());
        }
    }

    #[test]
    fn shapes_compare_by_their_fields() {
        let diffs = between(
            &crate::evolution::compat::builtin(),
            "account.created-v1",
            "account.updated-v1",
        );
        let d = diffs.expect("both events exist");
        assert!(d.iter().any(|c| c.change
            == Change::FieldAdded {
                path: "changes".into(),
                ty: "object".into(),
                required: true
            }
            && !c.backward));
    }
}
