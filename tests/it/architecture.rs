//! The structure's invariants, checked over the source text: no module imports a module that
//! imports it back (between top-level rooms, and between the rooms of one folder, `super::super`
//! paths included), imports point down the layers, `decode`, `row`, `evidence::bundle` and the
//! pure crates do no I/O, SQL lives only in the database rooms, production code never imports
//! `dev`, every file says what it is for, hand-written files and functions stay small; the
//! library's public modules are the listed boundary, each note, tile and leaf format constant is
//! defined once, and docs/files.md indexes every file; a fixture crate shows the checks find
//! breaks.

use std::collections::BTreeSet;
use std::path::PathBuf;

#[path = "architecture/boundary.rs"]
mod boundary;
#[path = "architecture/scan.rs"]
mod scan;
use scan::{cycles, graph_at, io_in, layer_breaks, long_functions, rust_files, MAX_FN_LINES};

/// Hand-written files stay under about 500 lines.
const MAX_LINES: usize = 520;

/// The rooms that may hold SQL.
const SQL_ROOMS: &[&str] = &[
    "db",
    "log",
    "ingest::sink",
    "verify::reverdicts",
    "reconcile::store",
    "evolution::drift::store",
    "evolution::reprocess::store",
    "erase",
    "archive::write",
    "archive::prune",
];

/// The log's own tables: only `log` names them in SQL (the rooms that read the rows' contents
/// read the log's view of them, `audit.log_rows`).
const LOG_TABLES: &[&str] = &[
    "audit.events",
    "audit.chain_links",
    "audit.chain_head",
    "audit.tree_nodes",
    "audit.checkpoints",
    "audit.erasures",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's other crates (the daemon is the repository's root package): each is checked
/// as its own crate (cycles, sizes, docs, the file index), and the pure ones do no I/O.
const CRATES: &[&str] = &[
    "crates/tlog",
    "crates/base",
    "crates/proof",
    "crates/witness",
];

/// The crates whose every module is pure (no I/O at all).
const PURE_CRATES: &[&str] = &["crates/tlog"];

/// Every crate's root folder: the daemon's (the repository) first.
fn crate_roots() -> Vec<PathBuf> {
    std::iter::once(repo())
        .chain(CRATES.iter().map(|c| repo().join(c)))
        .collect()
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
    for c in CRATES {
        let (found, _) = cycles(&graph_at(&repo().join(c)));
        assert!(found.is_empty(), "{c}: {found:#?}");
    }
}

/// The top-level rooms in layers, top to bottom, as ARCHITECTURE.md's code map states them: a
/// room uses only rooms of the layers below its own.
const LAYERS: &[&[&str]] = &[
    &["cli", "test_support"],
    &["dev"],
    &["evidence", "app"],
    &["restore"],
    &["verify", "mirror", "retention"],
    &["archive"],
    &["erase"],
    &["witnessed"],
    &["server"],
    &["ingest", "reconcile", "evolution", "index"],
    &["log"],
    &["db", "bus", "telemetry", "files", "blobs"],
    &["row", "tlog", "tls"],
    &["decode", "config"],
];

#[test]
fn imports_point_down_the_layers() {
    let breaks = layer_breaks(&graph(), LAYERS);
    assert!(breaks.is_empty(), "{breaks:#?}");
}

#[test]
fn decode_audit_and_the_row_do_no_io() {
    let found = io_in(&graph(), &["decode", "row"]);
    assert!(found.is_empty(), "{found:#?}");
    let found = io_in(
        &graph_at(&repo().join("crates/proof")),
        &["canon", "bundle"],
    );
    assert!(
        found.is_empty(),
        "the leaf and the bundle are pure: {found:#?}"
    );
    for c in PURE_CRATES {
        let g = graph_at(&repo().join(c));
        let modules: Vec<&str> = g.iter().map(|(_, m, _)| m.as_str()).collect();
        let found = io_in(&g, &modules);
        assert!(found.is_empty(), "{c} is pure: {found:#?}");
    }
}

#[test]
fn functions_stay_short() {
    let long: Vec<String> = crate_roots()
        .iter()
        .flat_map(|root| long_functions(root))
        .collect();
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
        let code = scan::code_of(&file);
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
fn no_room_but_the_log_names_the_logs_tables() {
    let sql_word = [
        "FROM ", "JOIN ", "INTO ", "UPDATE ", "TABLE ", "LIKE ", "regclass",
    ];
    for (file, m, _) in graph() {
        if m == "log" || m.starts_with("log::") {
            continue;
        }
        let code = scan::code_of(&file);
        for t in LOG_TABLES {
            for (at, _) in code.match_indices(t) {
                let mut from = at.saturating_sub(40);
                while !code.is_char_boundary(from) {
                    from -= 1;
                }
                let before = &code[from..at];
                let after = code[at + t.len()..].chars().next().unwrap_or(' ');
                let named = !(after.is_alphanumeric() || after == '_')
                    && sql_word.iter().any(|w| before.contains(w));
                assert!(
                    !named,
                    "{} ({m}) names the log's table {t} in SQL: the log's tables are read and written only in `log`",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn production_code_never_imports_dev() {
    for (file, m, refs) in graph() {
        let allowed = m.starts_with("dev")
            || m == "cli::dev"
            || m == "cli"
            || m == "test_support"
            || m.is_empty();
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
        for root in crate_roots() {
            rust_files(&root.join(dir), &mut files);
        }
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
    for (file, _, _) in crate_roots().iter().flat_map(|r| graph_at(r)) {
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

/// The library's boundary: the modules a user of the crate can reach (`pub mod` chains from
/// `lib.rs`), as `lib.rs` states them. Everything else is crate-private, so the compiler reports
/// what nothing uses; integration tests reach inside only through `test_support`.
const BOUNDARY: &[&str] = &[
    "",
    "app",
    "app::metrics",
    "decode",
    "decode::catalogue",
    "decode::catalogue::kind",
    "decode::catalogue::rt",
    "decode::envelope",
    "decode::verdict",
    "evidence",
    "test_support",
];

/// The public items those modules declare at their top level, at most (132 when the boundary
/// was drawn; the crate's root and `test_support` included; 18 more when the C2SP tlog-tiles
/// format, its builder and its reader joined the public formats; 3 more in `test_support` for
/// the archive line format's fuzz target).
const MAX_PUBLIC_ITEMS: usize = 164;

#[test]
fn the_public_api_is_the_boundary_lib_rs_states() {
    let found = boundary::public_modules(&repo().join("src"));
    let modules: Vec<&str> = found.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        modules, BOUNDARY,
        "a module outside the boundary became public (or one inside stopped being): make it \
         pub(crate), or reach it from tests through test_support"
    );
    let items: usize = found.iter().map(|(_, n)| n).sum();
    assert!(
        items <= MAX_PUBLIC_ITEMS,
        "{items} public items in {found:?}: more than {MAX_PUBLIC_ITEMS}"
    );
}

/// The note, tile and leaf formats' constants and literals, each defined in one file only.
#[test]
fn each_format_constant_is_defined_once() {
    let consts = [
        ("TILE_HEIGHT", "crates/tlog/src/tile.rs"),
        ("TAG_V1", "crates/proof/src/canon.rs"),
        ("TAG_V2", "crates/proof/src/canon.rs"),
        ("DASH", "crates/tlog/src/note.rs"),
        ("ALG_ED25519", "crates/tlog/src/note.rs"),
        ("ALG_COSIGNATURE_V1", "crates/tlog/src/cosign.rs"),
        ("ALG_MLDSA44", "crates/tlog/src/mldsa.rs"),
        ("MAX_SIGNATURES", "crates/tlog/src/note.rs"),
    ];
    for (name, home) in consts {
        assert_eq!(
            defined_anywhere(Some(name), None),
            vec![home.to_owned()],
            "`{name}` is defined outside {home}, or not there"
        );
    }
    let literals = [
        ("event-audit row v1\\0", "crates/proof/src/canon.rs"),
        ("event-audit row v2\\0", "crates/proof/src/canon.rs"),
        ("cosignature/v1\\n", "crates/tlog/src/cosign.rs"),
        ("subtree/v1\\n", "crates/tlog/src/mldsa.rs"),
        ("\\u{2014}", "crates/tlog/src/note.rs"),
    ];
    for (lit, home) in literals {
        assert_eq!(
            defined_anywhere(None, Some(lit)),
            vec![home.to_owned()],
            "the format literal {lit:?} is written outside {home}"
        );
    }
}

/// The files of every crate's `src/` that define `name` or write `lit`, from the repository.
fn defined_anywhere(name: Option<&str>, lit: Option<&str>) -> Vec<String> {
    crate_roots()
        .iter()
        .flat_map(|root| {
            let rel = root.strip_prefix(repo()).unwrap_or(root).join("src");
            boundary::defined_in(&root.join("src"), name, lit)
                .into_iter()
                .map(move |f| rel.join(f).display().to_string())
        })
        .collect()
}

#[test]
fn the_file_index_is_current() {
    let mut want = boundary::file_index(&repo().join("src"));
    for c in CRATES {
        want.push_str(&boundary::crate_index(&repo().join(c), c));
    }
    let path = repo().join("docs/files.md");
    if std::env::var_os("EVENT_AUDIT_WRITE_INDEX").is_some() {
        std::fs::write(&path, &want).expect("write docs/files.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    let stale: Vec<&str> = want
        .lines()
        .filter(|l| !have.lines().any(|h| h == *l))
        .collect();
    assert!(
        have == want,
        "docs/files.md is not the index of src/ (first lines it lacks: {:#?}); write it again with \
         EVENT_AUDIT_WRITE_INDEX=1 cargo test --features dev --test it architecture::the_file_index",
        &stale[..stale.len().min(5)]
    );
}

/// The boundary and single-definition checks on a small crate: a second `TILE_HEIGHT` and a
/// private room made public are each found.
#[test]
fn the_boundary_checks_find_what_they_are_for() {
    let root = std::env::temp_dir().join(format!("ea-arch-boundary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("src/lib.rs", "//! lib\npub mod tlog;\npub(crate) mod db;\n");
    write("src/tlog.rs", "//! t\npub mod tile;\n");
    write(
        "src/tlog/tile.rs",
        "//! t\npub const TILE_HEIGHT: u32 = 8;\n",
    );
    write("src/db.rs", "//! d\npub fn open() {}\n");
    let src = root.join("src");
    let modules = |src: &std::path::Path| -> Vec<String> {
        boundary::public_modules(src)
            .into_iter()
            .map(|(m, _)| m)
            .collect()
    };
    assert_eq!(modules(&src), ["", "tlog", "tlog::tile"]);
    assert_eq!(
        boundary::defined_in(&src, Some("TILE_HEIGHT"), None).len(),
        1
    );
    write(
        "src/db.rs",
        "//! d\nconst TILE_HEIGHT: u32 = 8;\npub fn open() {}\n",
    );
    write("src/lib.rs", "//! lib\npub mod tlog;\npub mod db;\n");
    assert_eq!(
        boundary::defined_in(&src, Some("TILE_HEIGHT"), None).len(),
        2
    );
    assert!(modules(&src).contains(&"db".to_owned()));
    std::fs::remove_dir_all(&root).expect("remove the fixture");
}

/// ARCHITECTURE.md stays the map (a paragraph per crate and room): under 30 KB, with the
/// specification in the rooms' docs and docs/internals.md.
#[test]
fn the_map_stays_a_map() {
    let bytes = std::fs::metadata(repo().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md")
        .len();
    assert!(bytes < 30_000, "ARCHITECTURE.md is {bytes} bytes: move specification into the rooms' docs or docs/internals.md");
    let map = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("read");
    for c in CRATES {
        assert!(
            map.contains(&format!("**`{c}`**")),
            "ARCHITECTURE.md has no paragraph for {c}"
        );
    }
}
