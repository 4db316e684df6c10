//! Growing the stored index by an update's new leaves: each changed label's value folded on,
//! the stored nodes above the changed labels recomputed (their buckets' labels from the stored
//! values, the depth-16 and depth-8 nodes from the current ones remembered, read again whenever
//! another process updated the index). What an update and a replayed update share.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgConnection;

use crate::db::DbError;
use crate::log::index::{self as store, Writes};
use crate::tlog::index::memory::bucket;
use crate::tlog::index::path::range;
use crate::tlog::index::{band, subtree, Label, Node, Value};
use crate::tlog::merkle::Hash;

/// The stored nodes at depths 8 and 16 as of one version.
#[derive(Debug, Default)]
pub(crate) struct Current {
    version: i64,
    top: BTreeMap<u8, Node>,
    mid: BTreeMap<u16, Node>,
}

/// The current stored nodes at depths 8 and 16: remembered, or read again when the
/// newest version is not the one remembered (another process updated the index).
async fn current<'c>(
    slot: &'c mut Option<Current>,
    tx: &mut PgConnection,
    newest: i64,
) -> Result<&'c mut Current, DbError> {
    if slot.as_ref().is_none_or(|c| c.version != newest) {
        let top = store::nodes(tx, 8, (0, 255), i64::MAX)
            .await?
            .into_iter()
            .map(|(p, n)| (u8::try_from(p).unwrap_or(0), n))
            .collect();
        let mid = store::nodes(tx, 16, (0, u16::MAX), i64::MAX)
            .await?
            .into_iter()
            .collect();
        *slot = Some(Current {
            version: newest,
            top,
            mid,
        });
    }
    Ok(slot.get_or_insert_with(Current::default))
}

/// The stored nodes above the labels `changed` (their new values), recomputed, pushed to
/// `out` as `(depth, prefix, node)`; returns the new root.
async fn nodes_above(
    slot: &mut Option<Current>,
    tx: &mut PgConnection,
    newest: i64,
    changed: &BTreeMap<Label, Value>,
    out: &mut Vec<(usize, u16, Node)>,
) -> Result<Node, DbError> {
    let buckets: BTreeSet<u16> = changed.keys().map(bucket).collect();
    let bucket_range = |b: u16| {
        let mut l = [0u8; 32];
        l[..2].copy_from_slice(&b.to_be_bytes());
        range(&l, 16)
    };
    let ranges: Vec<(Label, Label)> = buckets.iter().map(|b| bucket_range(*b)).collect();
    let mut all: BTreeMap<Label, Value> = store::values_in(tx, &ranges, i64::MAX)
        .await?
        .into_iter()
        .collect();
    all.extend(changed.iter().map(|(l, v)| (*l, *v)));
    let cur = current(slot, tx, newest).await?;
    let mut firsts = BTreeSet::new();
    for b in &buckets {
        let (lo, hi) = bucket_range(*b);
        let labels: Vec<(Label, Value)> = all.range(lo..=hi).map(|(l, v)| (*l, *v)).collect();
        let n = subtree(&labels, 16);
        cur.mid.insert(*b, n);
        out.push((16, *b, n));
        firsts.insert(b.to_be_bytes()[0]);
    }
    for f in firsts {
        let lo = u16::from(f) << 8;
        let children: Vec<(u8, Node)> = cur
            .mid
            .range(lo..=lo | 0xff)
            .filter(|(_, n)| n.count > 0)
            .map(|(b, n)| (b.to_be_bytes()[1], *n))
            .collect();
        let n = band(&children, 0);
        cur.top.insert(f, n);
        out.push((8, u16::from(f), n));
    }
    let children: Vec<(u8, Node)> = cur
        .top
        .iter()
        .filter(|(_, n)| n.count > 0)
        .map(|(b, n)| (*b, *n))
        .collect();
    let root = band(&children, 0);
    out.push((0, 0, root));
    Ok(root)
}

/// The values of the labels `added` gives leaves (with their row hashes) folded onto their
/// stored ones as of `newest_version`, and the stored nodes above them recomputed: pushed to
/// `w` (its entries and nodes). Returns the new root and how many of the labels are new to the
/// index. What an update and a replayed update share.
pub(crate) async fn grow(
    tx: &mut PgConnection,
    slot: &mut Option<Current>,
    newest_version: i64,
    added: &BTreeMap<Label, Vec<(u64, Hash)>>,
    w: &mut Writes,
) -> Result<(Node, u64), DbError> {
    let ranges: Vec<(Label, Label)> = added.keys().map(|l| (*l, *l)).collect();
    let before: BTreeMap<Label, Value> = store::values_in(tx, &ranges, i64::MAX)
        .await?
        .into_iter()
        .collect();
    let fresh = added.keys().filter(|l| !before.contains_key(*l)).count() as u64;
    let mut changed: BTreeMap<Label, Value> = BTreeMap::new();
    for (label, leaves) in added {
        let v0 = before.get(label).copied().unwrap_or(Value::NONE);
        let v = leaves.iter().fold(v0, |v, (i, h)| v.push(*i, h));
        changed.insert(*label, v);
        let gained = leaves
            .iter()
            .map(|(i, _)| i64::try_from(*i).unwrap_or(i64::MAX))
            .collect();
        w.entries.push((*label, v, gained));
    }
    let root = nodes_above(slot, tx, newest_version, &changed, &mut w.nodes).await?;
    // The nodes remembered are now those of this version.
    if let Some(c) = slot {
        c.version = w.version;
    }
    Ok((root, fresh))
}
