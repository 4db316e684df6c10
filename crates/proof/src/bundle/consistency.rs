//! An account index consistency proof (`event-audit-index-consistency/1`, `prove
//! --index-consistency`): that the index of one update only grew into the index of a later one.
//! The two updates' records, each a row of the log proven as a bundle's entry is against one
//! signed checkpoint; every label that changed between them with the leaves (and row hashes) it
//! gained; and the first index pruned to those labels' paths (`tlog::index::consistency`). Read
//! strictly and checked: the records of one index key, in order; the pruned tree makes the first
//! root; the changes, folded onto the old values, make the second root and its label count.
//! Pure.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use super::complete::unhex;
use super::json::{self, Json, Keys};
use super::{complete, shape, BundleError, Expect};
use crate::tlog::index::consistency::{self, Pruned, Side};
use crate::tlog::index::Label;
use crate::tlog::merkle::Hash;
use crate::tlog::note::PublicKey;

/// The format's name.
pub const FORMAT: &str = "event-audit-index-consistency/1";

/// The most changed labels a proof carries (a proof between updates further apart is refused:
/// prove between closer ones).
pub const MAX_CHANGES: usize = 1_000_000;

/// What a consistency proof proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grown {
    pub format: &'static str,
    pub origin: String,
    pub tree_size: u64,
    /// The two updates' numbers and sizes.
    pub from_update: u64,
    pub from_size: u64,
    pub to_update: u64,
    pub to_size: u64,
    /// Labels that gained leaves (new ones among them).
    pub changed: usize,
    pub new_labels: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosigned_by: Option<Vec<String>>,
}

/// Whether `text` names this format (its check then tells whether it is one).
pub fn is_consistency(text: &str) -> bool {
    match json::parse(text, Keys::Unique) {
        Ok(Json::Obj(o)) => json::get(&o, "format") == Some(&Json::Str(FORMAT.into())),
        _ => false,
    }
}

fn bad(why: String) -> BundleError {
    BundleError::Unusable(why)
}

type Changes = Vec<(Label, Vec<(u64, Hash)>)>;

fn changes(v: Option<&Json>) -> Result<Changes, BundleError> {
    let Some(Json::Arr(items)) = v else {
        return Err(bad("changes: not an array".into()));
    };
    if items.len() > MAX_CHANGES {
        return Err(bad(format!("changes: more than {MAX_CHANGES}")));
    }
    let leaf = |at: &str, v: &Json| -> Result<(u64, Hash), BundleError> {
        let Json::Arr(pair) = v else {
            return Err(bad(format!("{at}: not a [leaf, row hash] pair")));
        };
        match pair.as_slice() {
            [Json::Num(n), Json::Str(h)] if json::is_integer(n) => {
                let n = n
                    .parse::<u64>()
                    .map_err(|_| bad(format!("{at}: not a leaf index")))?;
                let h = unhex(h).ok_or_else(|| bad(format!("{at}: not a row hash")))?;
                Ok((n, h))
            }
            _ => Err(bad(format!("{at}: not a [leaf, row hash] pair"))),
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let at = format!("changes[{i}]");
            let Json::Obj(o) = c else {
                return Err(bad(format!("{at}: not an object")));
            };
            if o.len() != 2 {
                return Err(bad(format!("{at}: exactly label and added")));
            }
            let label = match json::get(o, "label") {
                Some(Json::Str(s)) => unhex(s),
                _ => None,
            }
            .ok_or_else(|| bad(format!("{at}.label: not 64 lowercase hex digits")))?;
            let Some(Json::Arr(added)) = json::get(o, "added") else {
                return Err(bad(format!("{at}.added: not an array")));
            };
            let added = added
                .iter()
                .map(|v| leaf(&format!("{at}.added"), v))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((label, added))
        })
        .collect()
}

/// Checks a consistency proof's text against the log's key (without one, its checkpoint as it
/// claims: for `prove`'s own check of what it writes) and `expect`'s origin and policy.
pub fn check(text: &str, key: Option<&PublicKey>, expect: &Expect) -> Result<Grown, BundleError> {
    let v = json::parse(text, Keys::Unique).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Json::Obj(o) = v else {
        return Err(bad("not a JSON object".into()));
    };
    let keys = ["format", "checkpoint", "from", "to", "changes", "tree"];
    if let Some((k, _)) = o.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
        return Err(bad(format!("{k}: not a key of {FORMAT}")));
    }
    if let Some(k) = keys.iter().find(|k| json::get(&o, k).is_none()) {
        return Err(bad(format!("{k}: missing")));
    }
    let text_of = |k: &str| match json::get(&o, k) {
        Some(Json::Str(s)) => Ok(s.as_str()),
        _ => Err(bad(format!("{k}: not a string"))),
    };
    if text_of("format")? != FORMAT {
        return Err(bad(format!("format: not {FORMAT}")));
    }
    let entry =
        |k: &str| shape::entry_at(k, super::FORMAT, json::get(&o, k).unwrap_or(&Json::Null));
    let (from, to) = (entry("from")?, entry("to")?);
    let changes = changes(json::get(&o, "changes"))?;
    let tree = B64
        .decode(text_of("tree")?)
        .map_err(|_| bad("tree: not base64".into()))?;
    let tree = Pruned::parse(&tree).map_err(|e| bad(format!("tree: {e}")))?;
    let note_text = text_of("checkpoint")?;
    let (cp, cosigned_by) = super::signed(note_text, key, expect)?;
    let fault = |why: String| BundleError::Consistency(why);
    let mut sides = Vec::new();
    for (name, e) in [("from", &from), ("to", &to)] {
        super::check_entry(e, cp.size, &cp.root, None)
            .map_err(|f| fault(format!("{name}: the index record's row: {f}")))?;
        let raw = B64.decode(&e.raw).unwrap_or_default();
        let rec = complete::record(&raw).map_err(|why| fault(format!("{name}: {why}")))?;
        if e.stream != complete::RECORD_STREAM || rec.tree_size > e.leaf_index {
            return Err(fault(format!("{name}: not an account index record's row")));
        }
        sides.push(rec);
    }
    let (a, b) = (&sides[0], &sides[1]);
    if a.vrf_key != b.vrf_key || a.seq >= b.seq || a.tree_size > b.tree_size {
        return Err(fault(
            "the two records are not of one index key, the first before the second".into(),
        ));
    }
    let side = |r: &complete::Record| Side {
        root: r.root,
        size: r.tree_size,
        labels: r.labels,
    };
    let (sa, sb) = (side(a), side(b));
    consistency::check(&sa, &sb, tree, &changes).map_err(|e| fault(e.to_string()))?;
    Ok(Grown {
        format: FORMAT,
        origin: cp.origin,
        tree_size: cp.size,
        from_update: a.seq,
        from_size: a.tree_size,
        to_update: b.seq,
        to_size: b.tree_size,
        changed: changes.len(),
        new_labels: b.labels - a.labels,
        cosigned_by,
    })
}
