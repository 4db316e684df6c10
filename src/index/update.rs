//! The account index's updates. One update, in one transaction under the index's advisory
//! lock: the rows from the last update's size to a link end at most [`MAX_ROWS`] rows on (or
//! the head) are read with their identifiers; each identifier's label ([`super::label`]) gets
//! the row's leaf (its value folded on); the stored nodes above the labels changed are
//! recomputed (their buckets' labels from the stored values, the depth-16 and depth-8 nodes
//! from the current ones this updater remembers, read again whenever another process updated
//! the index); the new root is recorded as a row of the log, and the update's delta stored
//! beside it. The index's writes come before the record, so the chain head is held only for
//! the record and its version row. Nothing is written when the log gained no row but the
//! previous record.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chrono::Utc;
use sqlx::PgConnection;

use super::label::Labeler;
use super::metrics::IndexMetrics;
use super::IndexError;
use crate::db::{Db, DbError};
use crate::log::append::Appender;
use crate::log::index::{self as store, Writes};
use crate::row::index_record::{IndexRecord, STREAM};
use crate::tlog::index::delta::Delta;
use crate::tlog::index::memory::bucket;
use crate::tlog::index::path::range;
use crate::tlog::index::{band, subtree, Label, Node, Value, FORMAT};
use crate::tlog::merkle::Hash;

/// The most rows one update indexes (rounded up to the end of a link); a log larger than this
/// behind the index is caught up over several updates.
pub(crate) const MAX_ROWS: u64 = 100_000;

/// The fewest rows an update is sized to (a link's end may add more).
const MIN_ROWS: u64 = 1_000;
/// The rate a new updater assumes, rows a second (this project's machine indexes 11,000 to
/// 35,000 rows a second alone: BENCHMARKS.md).
const FIRST_RATE: f64 = 10_000.0;

/// What one update did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Updated {
    /// The log's leaves `[0, version)` are indexed.
    pub(crate) version: u64,
    /// The update's number (its record's in stream `event-audit.index`).
    pub(crate) seq: i64,
    /// The leaf of the row recording it.
    pub(crate) record_leaf: i64,
    pub(crate) rows: usize,
    /// Labels that gained leaves.
    pub(crate) touched: usize,
    pub(crate) labels: u64,
    pub(crate) root: Hash,
    /// Where its time went, in seconds: reading the rows, making labels (and their VRF
    /// proofs), the values and nodes, writing.
    pub(crate) phases: [f64; 4],
}

/// Each row's leaf under each of its identifiers' labels: the pairs in leaf order (the delta's),
/// and each label's new leaves with their row hashes.
#[allow(clippy::type_complexity)]
fn group(
    rows: &[crate::log::index::IndexedRow],
    labels_of: &std::collections::HashMap<String, Label>,
) -> (Vec<(u64, Label)>, BTreeMap<Label, Vec<(u64, Hash)>>) {
    let mut pairs: Vec<(u64, Label)> = Vec::new();
    let mut added: BTreeMap<Label, Vec<(u64, Hash)>> = BTreeMap::new();
    for r in rows {
        let mine: BTreeSet<Label> = r
            .identifiers
            .iter()
            .filter_map(|id| labels_of.get(id).copied())
            .collect();
        for label in mine {
            pairs.push((r.leaf_index, label));
            added
                .entry(label)
                .or_default()
                .push((r.leaf_index, r.row_hash));
        }
    }
    (pairs, added)
}

/// An update's time by phase.
struct Phases {
    at: Instant,
    spent: [f64; 4],
}

impl Phases {
    fn start() -> Phases {
        Phases {
            at: Instant::now(),
            spent: [0.0; 4],
        }
    }

    /// The time since the last lap goes to phase `i`.
    fn lap(&mut self, i: usize) {
        self.spent[i] += self.at.elapsed().as_secs_f64();
        self.at = Instant::now();
    }
}

/// The stored nodes at depths 8 and 16 as of one version.
#[derive(Debug, Default)]
pub(super) struct Current {
    version: i64,
    top: BTreeMap<u8, Node>,
    mid: BTreeMap<u16, Node>,
}

/// The index's updater (one per daemon; the advisory lock makes one update at a time).
pub(crate) struct Updater {
    db: Db,
    instance: String,
    labeler: Labeler,
    current: Option<Current>,
    metrics: Arc<IndexMetrics>,
    max_rows: u64,
    /// Rows a second the last updates indexed: how large the next one may be to end within
    /// its round's budget.
    rate: f64,
    /// The log's size the last round saw.
    last_head: Option<u64>,
}

impl Updater {
    pub(crate) fn new(
        db: Db,
        instance: String,
        labeler: Labeler,
        metrics: Arc<IndexMetrics>,
    ) -> Updater {
        Updater {
            db,
            instance,
            labeler,
            current: None,
            metrics,
            max_rows: MAX_ROWS,
            rate: FIRST_RATE,
            last_head: None,
        }
    }

    /// Rows a second the last updates indexed.
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// How many rows the log gained since the last call (0 at the first).
    pub(crate) async fn growth(&mut self) -> Result<u64, IndexError> {
        let mut conn = self.db.acquire().await?;
        let head = store::tree_size(&mut conn).await?;
        let grown = self.last_head.map_or(0, |h| head.saturating_sub(h));
        self.last_head = Some(head);
        Ok(grown)
    }

    /// Updates of at most `rows` rows each (fewer when the rate the last ones ran at says a
    /// larger one would overrun `budget`) until the index covers the head or `budget` is spent;
    /// each update counted.
    pub(crate) async fn catch_up(
        &mut self,
        budget: Duration,
        rows: u64,
    ) -> Result<Vec<Updated>, IndexError> {
        let started = Instant::now();
        let mut done = Vec::new();
        loop {
            let left = budget.saturating_sub(started.elapsed()).as_secs_f64();
            let fits = (self.rate * left) as u64;
            self.max_rows = fits.clamp(MIN_ROWS.min(rows), rows.max(1));
            let t = Instant::now();
            let result = self.update().await;
            match result {
                Ok(Some(u)) => {
                    let secs = t.elapsed().as_secs_f64().max(1e-3);
                    self.rate = (self.rate + u.rows as f64 / secs) / 2.0;
                    self.metrics.updates.inc();
                    self.metrics.rows.inc_by(u.rows as u64);
                    self.metrics
                        .labels
                        .set(i64::try_from(u.labels).unwrap_or(i64::MAX));
                    self.metrics
                        .size
                        .set(i64::try_from(u.version).unwrap_or(i64::MAX));
                    self.metrics.seconds.observe(t.elapsed().as_secs_f64());
                    done.push(u);
                }
                Ok(None) => return Ok(done),
                Err(e) => {
                    self.metrics.failures.inc();
                    return Err(e);
                }
            }
            if started.elapsed() >= budget {
                return Ok(done);
            }
        }
    }

    /// Indexes what the log gained since the last update (at most `max_rows` rows of it,
    /// rounded up to a link's end); `None`
    /// when it gained nothing. A failure forgets the nodes remembered.
    pub(crate) async fn update(&mut self) -> Result<Option<Updated>, IndexError> {
        let result = self.update_once().await;
        if result.is_err() {
            self.current = None;
        }
        result
    }

    async fn update_once(&mut self) -> Result<Option<Updated>, IndexError> {
        let mut conn = self.db.acquire().await?;
        let instance = self.instance.clone();
        let mut ap = Appender::begin(&mut conn, &instance).await?;
        store::lock(ap.tx()).await?;
        let newest = store::newest(ap.tx()).await?;
        let head = store::tree_size(ap.tx()).await?;
        let from = newest
            .as_ref()
            .map_or(0, |v| u64::try_from(v.version).unwrap_or(0));
        // The log gained only the previous update's record (which no label holds).
        let only_the_record = newest.as_ref().is_some_and(|v| {
            v.record_leaf == v.version && i64::try_from(head) == Ok(v.version + 1)
        });
        if head <= from || only_the_record {
            ap.rollback("end an empty index update").await?;
            return Ok(None);
        }
        let to = store::end_after(ap.tx(), from, self.max_rows, head).await?;
        let mut clock = Phases::start();
        let rows = store::rows_between(ap.tx(), from, to).await?;
        clock.lap(0);
        let ids: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| r.identifiers.iter().map(String::as_str))
            .collect();
        let (labels_of, new_labels) = self.labeler.labels(ap.tx(), &ids).await?;
        self.metrics.new_labels.inc_by(new_labels.len() as u64);
        clock.lap(1);
        let (pairs, added) = group(&rows, &labels_of);
        let newest_version = newest.as_ref().map_or(-1, |v| v.version);
        let mut w = Writes {
            version: i64::try_from(to).unwrap_or(i64::MAX),
            new_labels,
            ..Writes::default()
        };
        let (root, fresh) =
            grow(ap.tx(), &mut self.current, newest_version, &added, &mut w).await?;
        let labels = newest
            .as_ref()
            .map_or(0, |v| u64::try_from(v.labels).unwrap_or(0))
            + fresh;
        w.labels = i64::try_from(labels).unwrap_or(i64::MAX);
        w.root = root.hash;
        clock.lap(2);
        // The index's rows first; then the record, which holds the chain head to the commit.
        store::write_index(ap.tx(), &w).await?;
        // The next number after the stream's rows and the stored updates: updates replayed over
        // restored leaves have no row of the stream.
        let seq = store::next_seq(ap.tx(), STREAM)
            .await?
            .max(newest.as_ref().map_or(1, |v| v.seq + 1));
        let record = IndexRecord {
            index: FORMAT.to_owned(),
            seq,
            tree_size: to,
            root: crate::row::hex(&root.hash),
            labels,
            vrf_key: B64.encode(self.labeler.public()),
        };
        let row = record.row(Utc::now());
        let (_, link_seq) = ap.own_rows(std::slice::from_ref(&row)).await?;
        let record_leaf = store::last_leaf_of(ap.tx(), link_seq).await?;
        let canon = row.canon();
        w.seq = seq;
        w.record_leaf = record_leaf;
        w.delta = Delta {
            record_leaf: u64::try_from(record_leaf).unwrap_or(0),
            record: canon.encode(),
            opening: canon.opening().unwrap_or_default(),
            pairs,
        }
        .encode();
        store::write_version(ap.tx(), &w).await?;
        ap.commit("commit the account index update").await?;
        clock.lap(3);
        Ok(Some(Updated {
            version: to,
            seq,
            record_leaf,
            rows: rows.len(),
            touched: added.len(),
            labels,
            root: root.hash,
            phases: clock.spent,
        }))
    }
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
pub(super) async fn grow(
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
