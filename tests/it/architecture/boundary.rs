//! The library's boundary and the formats' single definitions, read from the source text: the
//! modules reachable from outside the crate (`pub mod` chains from `src/lib.rs`) and the public
//! items they declare; where each note, tile and leaf format constant is defined; and the rooms
//! and files ARCHITECTURE.md's code map names.

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
pub fn public_modules(root: &Path) -> Vec<(String, usize)> {
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
pub fn defined_in(root: &Path, name: Option<&str>, lit: Option<&str>) -> BTreeSet<String> {
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

/// The files under `root` (`src`) and the top-level rooms that ARCHITECTURE.md's code map
/// (`text`) does not name (a file by its path below `src/`, a room as `` `name/` `` or its file).
pub fn unnamed_in_code_map(root: &Path, text: &str) -> Vec<String> {
    let mut files = Vec::new();
    super::scan::rust_files(root, &mut files);
    let mut missing = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        if !text.contains(&format!("`{rel}`")) && !text.contains(&format!("`src/{rel}`")) {
            missing.push(rel);
        }
    }
    missing
}
