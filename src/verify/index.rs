//! `verify`'s check of the account index: the index rebuilt from the updates' deltas and the
//! rows, held against every root the log recorded. For each update, in order: its number is the
//! next one, its record is the row at its record leaf (or a leaf a restore brought back; the
//! delta's leaf data makes that row's
//! hash; its opening holds the record's JSON, whose size, root, label count and index key are the
//! update's, the key the same in every record), its pairs are leaves of the range it indexed,
//! the index they grow has the recorded root; and each row of the range that still holds its
//! personal data is under exactly the labels of the identifiers it holds (each label proven from
//! its identifier by its stored VRF proof; an erased row's labels are taken as stored). Last,
//! the stored values are the rebuilt ones. Memory: the whole index (about 150 bytes a label)
//! and one update's rows at a time.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::TryStreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::db::{Ctx, Db, DbError};
use crate::log::index as store;
use crate::tlog::index::delta::Delta;
use crate::tlog::index::memory::Index;
use crate::tlog::index::{label_proven, Label, Value};
use event_audit_proof::bundle::{complete, leaf};

/// The most breaks listed (all are counted).
const MAX_LISTED: usize = 100;
/// The most identifiers remembered with their labels (then forgotten and proven again).
const MAX_REMEMBERED: usize = 1_000_000;

/// What the check found.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct IndexReport {
    pub(crate) ok: bool,
    /// Updates checked.
    pub(crate) updates: u64,
    /// The log's leaves `[0, through)` are indexed.
    pub(crate) through: u64,
    pub(crate) labels: u64,
    /// Rows whose labels were checked against their identifiers.
    pub(crate) rows_checked: u64,
    /// VRF proofs verified.
    pub(crate) labels_proven: u64,
    pub(crate) breaks: Vec<String>,
    pub(crate) breaks_total: u64,
}

impl IndexReport {
    /// The summary line.
    pub(crate) fn line(&self) -> String {
        if self.ok {
            format!(
                "account index intact: {} updates, {} labels, leaves below {} indexed; {} rows' labels proven from their identifiers",
                self.updates, self.labels, self.through, self.rows_checked
            )
        } else {
            format!(
                "account index BROKEN: {} ({} break(s) in all; {} updates)",
                self.breaks.first().map_or("?", String::as_str),
                self.breaks_total,
                self.updates
            )
        }
    }

    fn broken(&mut self, why: String) {
        self.breaks_total += 1;
        if self.breaks.len() < MAX_LISTED {
            self.breaks.push(why);
        }
    }
}

/// The check; `None` when the log has no account index.
pub(crate) async fn check(db: &Db) -> Result<Option<IndexReport>, DbError> {
    let mut conn = db.acquire().await?;
    let versions = store::versions(&mut conn).await?;
    if versions.is_empty() {
        return Ok(None);
    }
    let mut r = IndexReport::default();
    let mut idx = Index::new();
    let mut known: HashMap<String, Label> = HashMap::new();
    let mut key: Option<[u8; 32]> = None;
    let mut from = 0u64;
    let mut deltas = store::deltas(db.pool());
    for v in &versions {
        let Some((seq, bytes)) = deltas.try_next().await.ctx("read the index's updates")? else {
            r.broken("the index's updates ended before its versions".into());
            break;
        };
        r.updates += 1;
        let to = u64::try_from(v.version).unwrap_or(0);
        let at = format!("index update {}", v.seq);
        if seq != v.seq || v.seq != i64::try_from(r.updates).unwrap_or(0) {
            r.broken(format!(
                "{at}: not numbered {} (updates are numbered from 1 without a gap)",
                r.updates
            ));
        }
        let delta = match Delta::parse(&bytes) {
            Ok(d) => d,
            Err(e) => {
                r.broken(format!("{at}: its delta is not one ({e})"));
                from = to;
                continue;
            }
        };
        if let Err(why) = record(&mut conn, v, &delta, &mut key).await? {
            r.broken(format!("{at}: its record {why}"));
        }
        let rows = store::rows_between(&mut conn, from, to).await?;
        let mut by_leaf: BTreeMap<u64, Vec<Label>> = BTreeMap::new();
        for (leaf, label) in &delta.pairs {
            if *leaf < from || *leaf >= to {
                r.broken(format!(
                    "{at}: leaf {leaf} is outside the range it indexed ({from} to {to})"
                ));
                continue;
            }
            by_leaf.entry(*leaf).or_default().push(*label);
        }
        let mut changed: BTreeMap<Label, Value> = BTreeMap::new();
        for row in &rows {
            if let Some(labels) = by_leaf.get(&row.leaf_index) {
                for l in labels {
                    let v0 = changed
                        .get(l)
                        .copied()
                        .or_else(|| idx.get(l))
                        .unwrap_or(Value::NONE);
                    changed.insert(*l, v0.push(row.leaf_index, &row.row_hash));
                }
            }
        }
        if let Some(k) = key {
            labels_of_rows(&mut conn, &k, &rows, &by_leaf, &mut known, &mut r).await?;
        }
        idx.update(changed);
        if idx.root()[..] != v.root[..] {
            r.broken(format!(
                "{at}: the index its pairs make has another root than the recorded one"
            ));
        }
        if idx.len() as i64 != v.labels {
            r.broken(format!(
                "{at}: the index holds {} labels, its record says {}",
                idx.len(),
                v.labels
            ));
        }
        from = to;
    }
    // What proofs are made from: the stored values, the rebuilt ones.
    let mut stored = store::latest_values(db.pool());
    let mut count = 0usize;
    let mut other = 0u64;
    while let Some((l, n, acc)) = stored.try_next().await.ctx("read the index's values")? {
        count += 1;
        let same = <Label>::try_from(l.as_slice())
            .ok()
            .and_then(|l| idx.get(&l))
            == Some(Value {
                count: u64::try_from(n).unwrap_or(0),
                acc: <[u8; 32]>::try_from(acc.as_slice()).unwrap_or_default(),
            });
        other += u64::from(!same);
    }
    if count != idx.len() || other > 0 {
        r.broken(format!(
            "the stored index holds {count} labels, {other} of them with another value than the rebuilt index of {} labels",
            idx.len()
        ));
    }
    r.through = from;
    r.labels = idx.len() as u64;
    r.ok = r.breaks_total == 0;
    Ok(Some(r))
}

/// The update's record, held against the row at its leaf and the version row; `Ok(Err(why))`
/// when it does not hold.
async fn record(
    conn: &mut sqlx::PgConnection,
    v: &store::VersionRow,
    d: &Delta,
    key: &mut Option<[u8; 32]>,
) -> Result<Result<(), String>, DbError> {
    let leaf = u64::try_from(v.record_leaf).unwrap_or(u64::MAX);
    if d.record_leaf != leaf {
        return Ok(Err(format!(
            "is at leaf {}, its delta says {}",
            leaf, d.record_leaf
        )));
    }
    let rows = crate::log::tree::rows_at(conn, &[leaf]).await?;
    let Some((place, hash)) = rows.first() else {
        return Ok(Err(format!("leaf {leaf} is not in the tree")));
    };
    // A record lost with a database and restored from a copy is a restored leaf: its row hash
    // still binds the record the delta carries.
    if place.stream != complete::RECORD_STREAM && place.stream != crate::row::restore::LEAVES {
        return Ok(Err(format!(
            "leaf {leaf} is a row of stream {}",
            place.stream
        )));
    }
    if <[u8; 32]>::from(Sha256::digest(&d.record)) != *hash {
        return Ok(Err(format!(
            "leaf data in the delta is not the row at leaf {leaf}"
        )));
    }
    let Ok(mut c) = leaf::parse(&d.record) else {
        return Ok(Err("leaf data is not a row encoding".into()));
    };
    if leaf::open(&mut c, &d.opening).is_err() {
        return Ok(Err("opening does not open its leaf".into()));
    }
    let rec = match complete::record(c.raw) {
        Ok(r) => r,
        Err(why) => return Ok(Err(why)),
    };
    let same = i64::try_from(rec.seq) == Ok(v.seq)
        && i64::try_from(rec.tree_size) == Ok(v.version)
        && rec.root[..] == v.root[..]
        && i64::try_from(rec.labels) == Ok(v.labels);
    if !same {
        return Ok(Err(
            "says another number, size, root or label count than the stored update".into(),
        ));
    }
    match key {
        Some(k) if *k != rec.vrf_key => {
            Ok(Err("names another index key than the first record".into()))
        }
        Some(_) => Ok(Ok(())),
        None => {
            *key = Some(rec.vrf_key);
            Ok(Ok(()))
        }
    }
}

/// Each row that holds its personal data is under exactly the labels of its identifiers.
async fn labels_of_rows(
    conn: &mut sqlx::PgConnection,
    key: &[u8; 32],
    rows: &[store::IndexedRow],
    by_leaf: &BTreeMap<u64, Vec<Label>>,
    known: &mut HashMap<String, Label>,
    r: &mut IndexReport,
) -> Result<(), DbError> {
    // The proofs of the labels of rows holding identifiers not yet proven.
    let mut wanted: BTreeSet<Label> = BTreeSet::new();
    for row in rows.iter().filter(|row| row.held) {
        if row.identifiers.iter().any(|id| !known.contains_key(id)) {
            wanted.extend(by_leaf.get(&row.leaf_index).into_iter().flatten());
        }
    }
    let wanted: Vec<Label> = wanted.into_iter().collect();
    let proofs: HashMap<Label, Vec<u8>> = store::labels_by_label(conn, &wanted)
        .await?
        .into_iter()
        .map(|s| (s.label, s.proof))
        .collect();
    for row in rows.iter().filter(|row| row.held) {
        r.rows_checked += 1;
        let under: BTreeSet<Label> = by_leaf
            .get(&row.leaf_index)
            .map(|v| v.iter().copied().collect())
            .unwrap_or_default();
        let mut expected = BTreeSet::new();
        for id in &row.identifiers {
            let label = match known.get(id) {
                Some(l) => Some(*l),
                None => {
                    let mut tried = 0u64;
                    let found = under.iter().copied().find(|l| {
                        proofs.get(l).is_some_and(|p| {
                            tried += 1;
                            label_proven(key, id, p) == Some(*l)
                        })
                    });
                    r.labels_proven += tried;
                    if let Some(l) = found {
                        if known.len() >= MAX_REMEMBERED {
                            known.clear();
                        }
                        known.insert(id.clone(), l);
                    }
                    found
                }
            };
            match label {
                Some(l) => {
                    expected.insert(l);
                }
                None => r.broken(format!(
                    "leaf {}: one of the identifiers it holds is under none of its labels (the row is left out of that identifier's entry)",
                    row.leaf_index
                )),
            }
        }
        if under.len() > expected.len() {
            r.broken(format!(
                "leaf {}: it is under a label none of its identifiers has (the row is added to another's entry)",
                row.leaf_index
            ));
        }
    }
    Ok(())
}
