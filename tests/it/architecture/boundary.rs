//! The library's boundary and the formats' single definitions, read from the source text: the
//! modules reachable from outside the crate (`pub mod` chains from `src/lib.rs`) and the public
//! items they declare; where each note, tile and leaf format constant is defined; and the index
//! of every file, docs/files.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::scan::code_of;

/// The file of module `name` declared in `file`.
fn child(file: &Path, name: &str) -> Option<PathBuf> {
    let base = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = if ["lib.rs", "main.rs", "mod.rs"].contains(&base) {
        file.parent()?.to_owned()
    } else {
        file.with_extension("")
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// The modules reachable from outside the crate under `root` (`src`), each with the number of
/// public items it declares at its top level (a `pub use` of several names counts each).
pub(super) fn public_modules(root: &Path) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut todo = vec![(root.join("lib.rs"), String::new())];
    while let Some((file, path)) = todo.pop() {
        let code = code_of(&file);
        let mut items = 0;
        for line in code.lines().filter(|l| l.starts_with("pub ")) {
            let rest = &line[4..];
            let kinds = [
                "fn ",
                "async fn ",
                "struct ",
                "enum ",
                "trait ",
                "const ",
                "static ",
                "type ",
                "mod ",
                "use ",
            ];
            if kinds.iter().any(|k| rest.starts_with(k)) {
                items += 1;
            }
            if let (true, Some(i), Some(j)) =
                (rest.starts_with("use "), line.find('{'), line.find('}'))
            {
                items += line[i + 1..j]
                    .split(',')
                    .filter(|n| !n.trim().is_empty())
                    .count()
                    .saturating_sub(1);
            }
            if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                if let Some(f) = child(&file, name) {
                    let p = if path.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{path}::{name}")
                    };
                    todo.push((f, p));
                }
            }
        }
        out.push((path, items));
    }
    out.sort();
    out
}

/// Every file under `root` (`src`) whose code (tests aside) defines `const NAME` or holds the
/// literal `lit` outside comments.
pub(super) fn defined_in(root: &Path, name: Option<&str>, lit: Option<&str>) -> BTreeSet<String> {
    let mut files = Vec::new();
    super::scan::rust_files(root, &mut files);
    let mut out = BTreeSet::new();
    for f in files {
        if f.to_string_lossy().ends_with("_tests.rs") {
            continue;
        }
        let code = code_of(&f);
        let hit = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .any(|l| {
                name.is_some_and(|n| l.contains(&format!("const {n}:")))
                    || lit.is_some_and(|s| l.contains(s))
            });
        if hit {
            out.insert(f.strip_prefix(root).unwrap_or(&f).display().to_string());
        }
    }
    out
}

/// docs/files.md as the sources under `root` (`src`) make it: each room (a top-level file or
/// folder) with its files, each file with the first sentence of its `//!` documentation.
pub(super) fn file_index(root: &Path) -> String {
    let mut files = Vec::new();
    super::scan::rust_files(root, &mut files);
    let mut rows: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(root).unwrap_or(f).display().to_string();
            let text = std::fs::read_to_string(f).unwrap_or_default();
            (rel, first_sentence(&text))
        })
        .collect();
    rows.sort();
    let mut out = String::from(
        "# Files\n\nEvery file of `src/`, by room, then of each crate under `crates/`, with the first sentence of its own documentation. \
         Made from the sources by a test (`architecture::the_file_index_is_current`); write it \
         again with `EVENT_AUDIT_WRITE_INDEX=1 cargo test --features dev --test it \
         architecture::the_file_index`. What each room owns: [ARCHITECTURE.md](../ARCHITECTURE.md).\n",
    );
    let mut room = String::new();
    for (rel, sentence) in rows {
        let this = rel
            .split('/')
            .next()
            .unwrap_or(&rel)
            .trim_end_matches(".rs")
            .to_string();
        if this != room {
            out.push_str(&format!("\n## `{this}`\n\n"));
            room = this;
        }
        out.push_str(&format!("- `{rel}`: {sentence}\n"));
    }
    out
}

/// One workspace crate's part of docs/files.md: its files (paths from the repository) under one
/// heading, each with the first sentence of its `//!` documentation.
pub(super) fn crate_index(root: &Path, name: &str) -> String {
    let mut files = Vec::new();
    super::scan::rust_files(&root.join("src"), &mut files);
    let mut rows: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(root).unwrap_or(f).display().to_string();
            let text = std::fs::read_to_string(f).unwrap_or_default();
            (format!("{name}/{rel}"), first_sentence(&text))
        })
        .collect();
    rows.sort();
    let mut out = format!("\n## Crate `{name}`\n\n");
    for (rel, sentence) in rows {
        out.push_str(&format!("- `{rel}`: {sentence}\n"));
    }
    out
}

/// The first sentence of a file's `//!` lines, at most about 200 characters (cut at a word).
fn first_sentence(text: &str) -> String {
    let doc: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let joined = doc.join(" ");
    let mut end = joined.len();
    let bytes = joined.as_bytes();
    for (i, _) in joined.match_indices(". ") {
        if bytes
            .get(i + 2)
            .is_some_and(|c| c.is_ascii_uppercase() || *c == b'`')
        {
            end = i + 1;
            break;
        }
    }
    let sentence = joined[..end].trim();
    if sentence.chars().count() <= 200 {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(200).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end_matches([',', ';', ':', '(']))
}
