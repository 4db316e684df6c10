//! The structure's invariants, checked over the source text: no module imports a module that
//! imports it back (between top-level rooms, and between the rooms of one folder, `super::super`
//! paths included), imports point down the layers, `decode` and `audit` do no I/O, SQL lives only
//! in the database rooms, production code never imports `dev`, every file says what it is for,
//! hand-written files and functions stay small; a fixture crate shows the checks find breaks.

use std::collections::BTreeSet;
use std::path::PathBuf;

#[path = "architecture/scan.rs"]
mod scan;
use scan::{cycles, graph_at, io_in, layer_breaks, long_functions, rust_files, MAX_FN_LINES};

/// Hand-written files stay under about 500 lines.
const MAX_LINES: usize = 520;

/// The rooms that may hold SQL.
const SQL_ROOMS: &[&str] = &[
    "db",
    "ingest::sink",
    "verify::store",
    "witnessed::tree",
    "verify::reverdicts",
    "verify::findings",
    "reconcile::store",
    "witnessed::signer::store",
    "evolution::drift::store",
    "evolution::reprocess::store",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The source files, their modules and the modules each refers to.
fn graph() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    graph_at(&repo())
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let (found, checked) = cycles(&graph());
    assert!(found.is_empty(), "{found:#?}");
    assert!(
        checked > 20,
        "only {checked} rooms with imports: the scan is broken"
    );
}

/// The top-level rooms in layers, top to bottom, as ARCHITECTURE.md's code map states them: a
/// room uses only rooms of the layers below its own.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["dev"],
    &["evidence", "app"],
    &["verify"],
    &["witnessed"],
    &["server"],
    &["ingest", "reconcile", "evolution"],
    &["db", "bus", "telemetry", "files"],
    &["row", "tlog"],
    &["decode", "config"],
];

#[test]
fn imports_point_down_the_layers() {
    let breaks = layer_breaks(&graph(), LAYERS);
    assert!(breaks.is_empty(), "{breaks:#?}");
}

#[test]
fn decode_audit_and_the_row_do_no_io() {
    let found = io_in(&graph(), &["decode", "row", "tlog", "evidence::bundle"]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn functions_stay_short() {
    let long = long_functions(&repo());
    assert!(long.is_empty(), "{long:#?}");
}

/// The checks above on a small crate made for them: a reversed arrow, a cycle through
/// `super::super`, I/O in `audit` and an oversized function are each found, and the same crate
/// without them passes.
#[test]
fn the_checks_find_what_they_are_for() {
    let root = std::env::temp_dir().join(format!("ea-arch-fixture-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    let _ = std::fs::remove_dir_all(&root);
    write(
        "src/lib.rs",
        "//! lib\npub mod top;\npub mod low;\npub mod audit;\n",
    );
    write(
        "src/top/mod.rs",
        "//! top\npub mod a;\npub mod b;\nuse crate::low::x;\n",
    );
    write("src/top/a/mod.rs", "//! a\npub mod deep;\n");
    write("src/top/a/deep.rs", "//! deep\nuse super::super::b::f;\n");
    write("src/top/b.rs", "//! b\nuse super::a::deep::g;\n");
    write("src/low.rs", "//! low\npub fn x() {}\n");
    write("src/audit.rs", "//! audit\npub fn h() {}\n");
    let layers: &[&[&str]] = &[&["top"], &["low", "audit"]];
    let g = graph_at(&root);
    let (found, _) = cycles(&g);
    assert!(
        found
            .iter()
            .any(|c| c.contains("top::a") && c.contains("top::b")),
        "the cycle through super::super is missed: {found:?}"
    );
    assert!(
        layer_breaks(&g, layers).is_empty(),
        "{:?}",
        layer_breaks(&g, layers)
    );
    assert!(io_in(&g, &["audit"]).is_empty());
    assert!(long_functions(&root).is_empty());

    // A reversed arrow, I/O in audit, an oversized function.
    write("src/low.rs", "//! low\npub fn x() { crate::top::y() }\n");
    let body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
    write(
        "src/audit.rs",
        &format!("//! audit\npub fn h() {{\n    let _ = std::fs::read(\"x\");\n{body}}}\n"),
    );
    let g = graph_at(&root);
    let breaks = layer_breaks(&g, layers);
    assert!(
        breaks.iter().any(|b| b.contains("uses `top`")),
        "the reversed arrow is missed: {breaks:?}"
    );
    assert!(!io_in(&g, &["audit"]).is_empty(), "I/O in audit is missed");
    let long = long_functions(&root);
    assert!(
        long.iter().any(|l| l.contains("src/audit.rs::h")),
        "the long function is missed: {long:?}"
    );
    std::fs::remove_dir_all(&root).expect("remove the fixture");
}

#[test]
fn sql_lives_only_in_the_database_rooms() {
    for (file, m, _) in graph() {
        let text = std::fs::read_to_string(&file).expect("read");
        let code: String = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
        let sql = ["sqlx::query", "copy_in_raw", "query_as(", "query_scalar("]
            .iter()
            .any(|n| code.contains(n));
        if sql {
            assert!(
                SQL_ROOMS
                    .iter()
                    .any(|r| m == *r || m.starts_with(&format!("{r}::"))),
                "{} ({m}) holds SQL; SQL lives only in {SQL_ROOMS:?}",
                file.display()
            );
        }
    }
}

#[test]
fn production_code_never_imports_dev() {
    for (file, m, refs) in graph() {
        let allowed = m.starts_with("dev") || m == "cli::dev" || m == "cli" || m.is_empty();
        if !allowed {
            assert!(
                !refs.iter().any(|r| r == "dev" || r.starts_with("dev::")),
                "{} ({m}) imports dev tooling",
                file.display()
            );
        }
    }
}

#[test]
fn every_file_says_what_it_is_for_and_stays_small() {
    let mut files = Vec::new();
    for dir in ["src", "build", "tests", "benches"] {
        rust_files(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 50, "{}", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        assert!(
            text.starts_with("//!"),
            "{} does not start with a `//!` line saying what it is for",
            f.display()
        );
        let lines = text.lines().count();
        assert!(
            lines <= MAX_LINES,
            "{} has {lines} lines (hand-written files stay under ~500)",
            f.display()
        );
    }
}

#[test]
fn rows_are_read_by_column_name() {
    for (file, _, _) in graph() {
        let text = std::fs::read_to_string(&file).expect("read");
        for (n, line) in text.lines().enumerate() {
            let positional = [".get(", ".try_get(", ">("].iter().any(|open| {
                line.match_indices(open).any(|(i, _)| {
                    let rest = &line[i + open.len()..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    !digits.is_empty()
                        && rest[digits.len()..].starts_with(')')
                        && (open.starts_with('.') || line[..i].contains(".get::<"))
                })
            });
            assert!(
                !positional,
                "{}:{}: a row read by position; read columns by name",
                file.display(),
                n + 1
            );
        }
    }
}
