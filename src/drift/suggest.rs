//! `drift --suggest`: a unified diff to `catalogue/events.toml` adding each observed undeclared
//! top-level field as optional, with its observed type. Printed for a person to review, never
//! applied. Nested paths, arrays (their element type is not observed) and fields seen with more
//! than one kind are listed as notes instead. Pure: takes the file's text.

use super::{Drift, Undeclared};

/// A patch and what it leaves to a person.
#[derive(Debug, Default)]
pub struct Suggestion {
    /// Unified diff (empty when there is nothing to add).
    pub patch: String,
    pub notes: Vec<String>,
}

/// The catalogue type for a field's observed kinds, or why there is none.
fn type_of(u: &Undeclared) -> Result<&'static str, String> {
    let kinds: Vec<&str> = u
        .kinds
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "null")
        .collect();
    match kinds.as_slice() {
        ["string"] => Ok("string"),
        ["integer"] => Ok("integer"),
        ["number"] | ["integer", "number"] => Ok("number"),
        ["boolean"] => Ok("boolean"),
        ["object"] => Ok("object"),
        ["array"] => Err("an array: its element type is not observed".into()),
        [] => Err("only null seen".into()),
        many => Err(format!("seen as {}", many.join(" and "))),
    }
}

/// Where to insert in `lines` for event `name`: the index before which new field lines go, and
/// whether a `fields = [` … `]` block must be opened.
fn insertion(lines: &[&str], name: &str) -> Option<(usize, bool)> {
    let head = lines
        .iter()
        .position(|l| l.trim() == format!("name = \"{name}\""))?;
    let end = lines[head + 1..]
        .iter()
        .position(|l| l.trim() == "[[event]]")
        .map_or(lines.len(), |i| head + 1 + i);
    let block = &lines[head..end];
    match block
        .iter()
        .position(|l| l.trim_start().starts_with("fields = ["))
    {
        Some(open) => {
            let close = block[open..].iter().position(|l| l.trim() == "]")?;
            Some((head + open + close, false))
        }
        None => {
            // After the entry's last non-blank line.
            let last = block.iter().rposition(|l| !l.trim().is_empty())?;
            Some((head + last + 1, true))
        }
    }
}

/// The suggestion for `events_toml` (the text of `catalogue/events.toml`).
pub fn suggest(d: &Drift, events_toml: &str) -> Suggestion {
    let lines: Vec<&str> = events_toml.lines().collect();
    let mut out = Suggestion::default();
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    for e in &d.events {
        let mut add = Vec::new();
        for u in &e.undeclared {
            if u.path.contains('.') {
                out.notes.push(format!(
                    "{}: {} is nested (inside a shape): not suggested",
                    e.event, u.path
                ));
                continue;
            }
            match type_of(u) {
                Ok(ty) => add.push(format!("  {{ name = \"{}\", type = \"{ty}\" }},", u.path)),
                Err(why) => out
                    .notes
                    .push(format!("{}: {} is {why}: not suggested", e.event, u.path)),
            }
        }
        if add.is_empty() {
            continue;
        }
        match insertion(&lines, &e.event) {
            Some((at, open)) => {
                if open {
                    add.insert(0, "fields = [".into());
                    add.push("]".into());
                }
                inserts.push((at, add));
            }
            None => out
                .notes
                .push(format!("{}: no such entry in events.toml", e.event)),
        }
    }
    inserts.sort_by_key(|(at, _)| *at);
    out.patch = unified(&lines, &inserts);
    out
}

/// A unified diff of insertions only (`inserts` sorted; each goes before old line `at`), three
/// lines of context, close insertions sharing a hunk.
fn unified(lines: &[&str], inserts: &[(usize, Vec<String>)]) -> String {
    if inserts.is_empty() {
        return String::new();
    }
    let mut out = String::from("--- a/catalogue/events.toml\n+++ b/catalogue/events.toml\n");
    let mut groups: Vec<Vec<&(usize, Vec<String>)>> = Vec::new();
    for ins in inserts {
        match groups.last_mut() {
            Some(g) if g.last().is_some_and(|p| ins.0 - p.0 <= 6) => g.push(ins),
            _ => groups.push(vec![ins]),
        }
    }
    let mut added_before = 0usize;
    for g in groups {
        let start = g[0].0.saturating_sub(3);
        let end = (g[g.len() - 1].0 + 3).min(lines.len());
        let added: usize = g.iter().map(|(_, l)| l.len()).sum();
        let mut body = String::new();
        let mut next = g.iter().peekable();
        for (i, line) in lines.iter().enumerate().take(end).skip(start) {
            while let Some((_, new)) = next.next_if(|(at, _)| *at == i) {
                for l in new {
                    body.push_str(&format!("+{l}\n"));
                }
            }
            body.push_str(&format!(" {line}\n"));
        }
        for (_, new) in next {
            for l in new {
                body.push_str(&format!("+{l}\n"));
            }
        }
        let old_len = end - start;
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{} @@\n{body}",
            start + 1,
            start + 1 + added_before,
            old_len + added
        ));
        added_before += added;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drift::{EventDrift, Seen};
    use std::collections::BTreeMap;

    fn und(path: &str, kinds: &[&str]) -> Undeclared {
        Undeclared {
            path: path.into(),
            kinds: kinds.iter().map(|k| ((*k).to_owned(), 1)).collect(),
            seen: Seen {
                count: 1,
                first_seen: chrono::DateTime::UNIX_EPOCH,
                last_seen: chrono::DateTime::UNIX_EPOCH,
            },
        }
    }

    #[test]
    fn adds_top_level_fields_with_their_types() {
        let toml = "[[event]]\nname = \"a.b-v1\"\nsection = \"S\"\nfields = [\n  { name = \"x\", type = \"string\", required = true },\n]\n\n[[event]]\nname = \"c.d-v1\"\nsection = \"S\"\nextends = \"a.b-v1\"\n";
        let d = Drift {
            events: vec![
                EventDrift {
                    event: "a.b-v1".into(),
                    rows: BTreeMap::new(),
                    undeclared: vec![
                        und("y", &["integer", "null"]),
                        und("z.w", &["string"]),
                        und("v", &["array"]),
                    ],
                    optional_never_seen: vec![],
                    required_missing: vec![],
                    type_mismatches: vec![],
                },
                EventDrift {
                    event: "c.d-v1".into(),
                    rows: BTreeMap::new(),
                    undeclared: vec![und("q", &["boolean"])],
                    optional_never_seen: vec![],
                    required_missing: vec![],
                    type_mismatches: vec![],
                },
            ],
            ..Drift::default()
        };
        let s = suggest(&d, toml);
        assert!(
            s.patch
                .contains("+  { name = \"y\", type = \"integer\" },\n ]\n"),
            "{}",
            s.patch
        );
        assert!(
            s.patch
                .contains("+fields = [\n+  { name = \"q\", type = \"boolean\" },\n+]\n"),
            "{}",
            s.patch
        );
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        // The patch applies: every hunk's context is the file's.
        assert!(
            s.patch
                .starts_with("--- a/catalogue/events.toml\n+++ b/catalogue/events.toml\n@@ -3,"),
            "{}",
            s.patch
        );
    }
}
