//! The source scans behind the architecture tests: modules and the modules each refers to, import
//! cycles, layer breaks, I/O paths and function lengths, for any crate root (the repository's,
//! or a fixture's).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(super) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub(super) fn module_of(src: &Path, file: &Path) -> String {
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
pub(super) fn references(
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
            // `super::super::…`: one level up for each further `super`.
            let mut base = base.clone();
            while prefix == "super::" && rest.starts_with("super::") {
                base.pop();
                rest = &rest["super::".len()..];
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

pub(super) fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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

/// [`graph`] of the crate at `root`.
pub(super) fn graph_at(root: &Path) -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let src = root.join("src");
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

pub(super) fn prefix(m: &str, depth: usize) -> String {
    m.split("::").take(depth).collect::<Vec<_>>().join("::")
}

/// Import cycles among the rooms of any folder of `g`, and how many rooms with imports were seen.
pub(super) fn cycles(g: &[(PathBuf, String, BTreeSet<String>)]) -> (Vec<String>, usize) {
    let mut found = Vec::new();
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
        for (_, m, refs) in g {
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
            found.push(format!(
                "import cycle among the rooms of `{parent}`: {}",
                c.join(" → ")
            ));
        }
    }
    (found, checked)
}

/// Imports between top-level rooms that do not point down `layers`, and rooms in no layer.
pub(super) fn layer_breaks(
    g: &[(PathBuf, String, BTreeSet<String>)],
    layers: &[&[&str]],
) -> Vec<String> {
    let layer = |room: &str| layers.iter().position(|l| l.contains(&room));
    let mut out = BTreeSet::new();
    for (file, m, refs) in g {
        let from = prefix(m, 1);
        if from.is_empty() || from == "main" {
            continue;
        }
        let Some(lf) = layer(&from) else {
            out.insert(format!("room `{from}` is in no layer"));
            continue;
        };
        for r in refs {
            let to = prefix(r, 1);
            if to.is_empty() || to == from {
                continue;
            }
            match layer(&to) {
                Some(lt) if lt > lf => {}
                Some(_) => {
                    out.insert(format!(
                        "{} ({m}) uses `{to}`, which is not below `{from}`",
                        file.display()
                    ));
                }
                None => {
                    out.insert(format!("room `{to}` is in no layer"));
                }
            }
        }
    }
    out.into_iter().collect()
}

/// Paths whose presence in a pure room (`decode`, `row`, `evidence::bundle`, a pure crate) would
/// be I/O.
pub(super) const IO: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "tokio::",
    "sqlx",
    "async_nats",
    "reqwest",
    "File::",
];

/// The code of a file, its tests left out.
pub(super) fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("read");
    text.split("#[cfg(test)]").next().unwrap_or("").to_owned()
}

/// Files of `rooms` whose code (tests aside) names an I/O path.
pub(super) fn io_in(g: &[(PathBuf, String, BTreeSet<String>)], rooms: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, m, _) in g {
        // A room by its path: a top-level room, or a module inside one (`evidence::bundle`).
        if !rooms
            .iter()
            .any(|r| m == r || m.starts_with(&format!("{r}::")))
        {
            continue;
        }
        let code = code_of(file);
        for io in IO {
            if code.contains(io) {
                out.push(format!("{} ({m}) does I/O: `{io}`", file.display()));
            }
        }
    }
    out
}

/// A function over this many lines is split.
pub(super) const MAX_FN_LINES: usize = 120;

/// Every function of the code (tests aside) under `root/src` with its length in lines, as
/// `path::name`: from its `fn` line to the closing brace at the same indentation.
pub(super) fn function_lengths(root: &Path) -> Vec<(String, usize)> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        let end = lines
            .iter()
            .position(|l| l.trim() == "#[cfg(test)]")
            .unwrap_or(lines.len());
        let rel = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        for (i, line) in lines[..end].iter().enumerate() {
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            let Some(at) = trimmed.find("fn ") else {
                continue;
            };
            let head = &trimmed[..at];
            let is_fn = head.split_whitespace().all(|w| {
                [
                    "pub",
                    "pub(crate)",
                    "pub(super)",
                    "async",
                    "const",
                    "unsafe",
                ]
                .contains(&w)
            });
            if !is_fn || trimmed.ends_with(';') || trimmed.ends_with('}') {
                continue;
            }
            let name: String = trimmed[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let close = format!("{indent}}}");
            if let Some(j) = lines[i + 1..end].iter().position(|l| *l == close) {
                out.push((format!("{rel}::{name}"), j + 2));
            }
        }
    }
    out
}

/// Functions of `root` over the limit.
pub(super) fn long_functions(root: &Path) -> Vec<String> {
    function_lengths(root)
        .into_iter()
        .filter(|(_, n)| *n > MAX_FN_LINES)
        .map(|(f, n)| format!("{f} has {n} lines (functions stay under {MAX_FN_LINES})"))
        .collect()
}
