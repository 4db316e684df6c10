//! The structure's invariants, checked over the source text: no module imports a module that
//! imports it back (between top-level rooms, and between the rooms of one folder), SQL lives only
//! in the database rooms, production code never imports `dev`, every file says what it is for,
//! and hand-written files stay small.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Hand-written files stay under about 500 lines.
const MAX_LINES: usize = 520;

/// The rooms that may hold SQL.
const SQL_ROOMS: &[&str] = &[
    "db",
    "ingest::sink",
    "verify::store",
    "tree",
    "verify::reverdicts",
    "verify::findings",
    "reconcile::store",
    "checkpoint::store",
    "drift::store",
    "reprocess::store",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/a/b/mod.rs` → `a::b`, `src/a/c.rs` → `a::c`, `src/lib.rs` → ``.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts.join("::")
}

/// The modules a file refers to (`crate::a::b`, `super::c`), resolved to known modules.
fn references(
    module: &str,
    is_mod_rs: bool,
    text: &str,
    known: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let parent: Vec<&str> = {
        let mut p: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        if !is_mod_rs {
            p.pop();
        }
        p
    };
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<&str> = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .collect();
            let mut full: Vec<&str> = base.clone();
            full.extend(path);
            // The longest known module prefix.
            for n in (1..=full.len()).rev() {
                let candidate = full[..n].join("::");
                if known.contains(&candidate) {
                    out.insert(candidate);
                    break;
                }
            }
        }
    }
    out
}

fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The source files, their modules and the modules each refers to.
fn graph() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let src = repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let known: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    files
        .iter()
        .map(|f| {
            // Code only: comments (doc links included) are not imports.
            let text: String = std::fs::read_to_string(f)
                .expect("read source")
                .lines()
                .map(|l| match l.find("//") {
                    Some(i) if !l[..i].contains('"') => &l[..i],
                    _ => l,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let m = module_of(&src, f);
            let is_mod = f
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
            let refs = references(&m, is_mod, &text, &known);
            (f.clone(), m, refs)
        })
        .collect()
}

fn prefix(m: &str, depth: usize) -> String {
    m.split("::").take(depth).collect::<Vec<_>>().join("::")
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let g = graph();
    // Every folder level: edges between distinct rooms that share the same parent.
    let parents: BTreeSet<String> = g
        .iter()
        .flat_map(|(_, m, _)| {
            let parts: Vec<&str> = m.split("::").filter(|s| !s.is_empty()).collect();
            (0..parts.len()).map(move |d| parts[..d].join("::"))
        })
        .collect();
    let mut checked = 0;
    for parent in parents {
        let depth = if parent.is_empty() {
            1
        } else {
            parent.split("::").count() + 1
        };
        let under = |m: &str| parent.is_empty() || m.starts_with(&format!("{parent}::"));
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (_, m, refs) in &g {
            if !under(m) || m.split("::").count() < depth || m.is_empty() {
                continue;
            }
            let from = prefix(m, depth);
            for r in refs {
                if under(r) && r.split("::").count() >= depth {
                    let to = prefix(r, depth);
                    if to != from {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
        }
        checked += edges.len();
        if let Some(c) = find_cycle(&edges) {
            panic!(
                "import cycle among the rooms of `{parent}`: {}",
                c.join(" → ")
            );
        }
    }
    assert!(
        checked > 20,
        "only {checked} rooms with imports: the scan is broken"
    );
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
