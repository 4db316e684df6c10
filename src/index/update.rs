//! The account index's updates. One update, in one transaction under the index's advisory
//! lock: the rows from the last update's size to a link end at most [`MAX_ROWS`] rows on (or
//! the head) are read with their identifiers; each identifier's label ([`super::label`]) gets
//! the row's leaf (its value folded on) and the stored nodes above are recomputed
//! ([`super::grow`]); the new root is recorded as a row of the log, and the update's delta
//! stored beside it. The index's writes come before the record, so the chain head is held only
//! for the record and its version row. Nothing is written when the log gained no row but the
//! previous record. Leaves a restore brought back are indexed only after the updates that had
//! indexed them were replayed from a copy of the tiles ([`super::replay`]), when one has them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chrono::Utc;

use super::grow::{grow, Current};
use super::label::Labeler;
use super::metrics::IndexMetrics;
use super::IndexError;
use crate::db::Db;
use crate::log::append::Appender;
use crate::log::index::{self as store, Writes};
use crate::row::index_record::{IndexRecord, STREAM};
use crate::tlog::index::delta::Delta;
use crate::tlog::index::{Label, FORMAT};
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
    /// Copies of the log's tiles whose deltas bring back the updates a restored database lost
    /// (`replay`), and the log's origin (a mirror keeps a log under a folder named by it).
    copies: Vec<crate::mirror::source::Source>,
    origin: String,
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
            copies: Vec::new(),
            origin: String::new(),
        }
    }

    /// The updater that, before it indexes leaves a restore brought back, replays the updates
    /// they were indexed by from the first of `copies` that publishes them.
    pub(crate) fn with_copies(
        mut self,
        origin: String,
        copies: Vec<crate::mirror::source::Source>,
    ) -> Updater {
        self.origin = origin;
        self.copies = copies;
        self
    }

    /// When the index has not yet covered leaves a restore brought back: the updates that had
    /// indexed them, replayed from the first copy that publishes them (`replay`; under the
    /// index's lock, so a daemon that restored and another starting beside it replay once).
    /// `false` when a copy did not answer and none replayed: this round indexes nothing, so
    /// that those leaves are not indexed without the labels a copy still holds.
    async fn replay_restored(&mut self) -> Result<bool, IndexError> {
        use super::replay::{from_copies, FromCopies};
        if self.copies.is_empty() {
            return Ok(true);
        }
        let head = {
            let mut conn = self.db.acquire().await?;
            let from = store::newest(&mut conn)
                .await?
                .map_or(0, |v| u64::try_from(v.version).unwrap_or(0));
            if !store::restored_from(&mut conn, from).await? {
                return Ok(true);
            }
            store::tree_size(&mut conn).await?
        };
        match from_copies(&self.db, &self.copies, &self.origin, head).await? {
            FromCopies::Replayed(copy, r) => {
                self.current = None;
                self.metrics.replayed.inc_by(r.count());
                tracing::warn!(
                    first = r.first,
                    last = r.last,
                    through = r.through,
                    %copy,
                    "account index updates lost with a restored database replayed from a copy of the tiles"
                );
                Ok(true)
            }
            FromCopies::Nothing => Ok(true),
            FromCopies::Failed { refused, .. } if !refused.is_empty() => {
                self.current = None;
                tracing::error!(copies = %refused.join("; "), "the account index's lost updates were not all replayed: it goes on from its newest update");
                Ok(true)
            }
            FromCopies::Failed { silent, .. } => {
                tracing::warn!(
                    copies = %silent.join("; "),
                    "the account index waits: the log holds restored leaves it has not covered, and no copy of the tiles answered for the updates that indexed them (retried next round)"
                );
                Ok(false)
            }
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
        if !self.replay_restored().await? {
            return Ok(done);
        }
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
