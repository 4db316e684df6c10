//! The drift report as text: one section per event version, then unknown versions and types.

use std::fmt::Write;

use super::{Drift, Problem, Seen};

fn when(s: &Seen) -> String {
    format!(
        "{}\t{} … {}",
        s.count,
        s.first_seen.format("%Y-%m-%dT%H:%M:%SZ"),
        s.last_seen.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

fn problems(out: &mut String, title: &str, list: &[Problem]) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "  {title}:");
    for p in list {
        let found = if p.found.is_empty() {
            String::new()
        } else {
            format!(" (found {})", p.found)
        };
        let _ = writeln!(out, "    {}\t{}{found}\t{}", p.path, p.code, when(&p.seen));
    }
}

/// The report as a table for a terminal.
pub(crate) fn table(d: &Drift) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# drift against catalogue {}", d.catalogue);
    for e in &d.events {
        let rows: Vec<String> = e.rows.iter().map(|(s, n)| format!("{s} {n}")).collect();
        let _ = writeln!(out, "{}\t{}", e.event, rows.join(", "));
        if !e.undeclared.is_empty() {
            let _ = writeln!(out, "  undeclared fields:");
            for u in &e.undeclared {
                let kinds: Vec<String> = u.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let _ = writeln!(
                    out,
                    "    {}\t{}\t{}",
                    u.path,
                    kinds.join(", "),
                    when(&u.seen)
                );
            }
        }
        if !e.optional_never_seen.is_empty() {
            let _ = writeln!(
                out,
                "  optional fields never seen: {}",
                e.optional_never_seen.join(", ")
            );
        }
        problems(&mut out, "required fields missing", &e.required_missing);
        problems(&mut out, "type mismatches", &e.type_mismatches);
    }
    for (title, list) in [
        ("unknown versions of known types", &d.unknown_versions),
        ("unknown types", &d.unknown_types),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "{title}:");
            for u in list {
                let _ = writeln!(out, "  {}\t{}", u.event, when(&u.seen));
            }
        }
    }
    if d.events.is_empty() && d.unknown_versions.is_empty() && d.unknown_types.is_empty() {
        let _ = writeln!(out, "no observations in this range");
    }
    out
}
