//! The account index after a database restored from a backup: the updates the backup lacks are
//! taken back from a copy of the log's tiles, which publishes each update's delta beside them
//! (`index/delta/N`). The restore brought back the lost leaves as row hashes only, so the lost
//! rows' identifiers are gone, but each delta names the labels of each leaf it indexed: replayed
//! in order, every delta's record is the (restored) row at its record leaf, its pairs are leaves
//! of the range it indexed, and the index it grows makes the root and label count its record
//! states, or the replay stops there. What is replayed is stored as the updates were (their
//! numbers, records and deltas), so the index, the tiles' deltas and a mirror's copies agree
//! again, and the next update is numbered after them. A label's proof is not in a delta: the
//! labels of the lost rows are not stored (`prove --complete` makes them again with the key).

use std::collections::BTreeMap;

use sqlx::Connection;

use super::grow::{grow, Current};
use crate::db::{Ctx, Db, DbError};
use crate::log::index::{self as store, Writes};
use crate::mirror::index::check_record;
use crate::mirror::source::{FetchError, Source};
use crate::tlog::index::delta::{self, Delta};
use crate::tlog::index::Label;
use crate::tlog::merkle::Hash;

/// The copies of the log's tiles a replay (and a restore) reads: the daemon's own tiles (a
/// directory or a bucket), then `witness.restore_from`.
pub(crate) fn copies_of(s: &crate::config::Settings) -> Vec<String> {
    let mut out: Vec<String> = s
        .witness
        .tiles_dir
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    out.extend(s.witness.tiles_url.iter().cloned());
    out.extend(s.witness.restore_from.iter().cloned());
    out
}

/// `copies` opened for reading (each read bounded by `timeout`; `s3://` ones with the object
/// store's settings, HTTPS ones with `tls`); one that cannot be opened is left out.
pub(crate) fn open_copies(
    copies: &[String],
    timeout: std::time::Duration,
    store: &crate::config::ObjectStoreSettings,
    tls: &crate::tls::Peer,
) -> Vec<Source> {
    copies
        .iter()
        .filter_map(|c| Source::open(c, timeout, store, tls).ok())
        .collect()
}

/// Where a copy publishes the log's deltas: at its root, or under a mirror's folder of the
/// log's origin; `None` when it publishes none, an error when it did not answer.
pub(crate) async fn deltas_at(src: &Source, origin: &str) -> Result<Option<Source>, FetchError> {
    for s in [
        src.clone(),
        src.child(&crate::mirror::source::origin_dir(origin)),
    ] {
        if s.file(delta::LATEST, 64, "index latest").await?.is_some() {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

/// How long one read of a copy may take.
pub(crate) const COPY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The most updates one replay takes (a log with more is replayed again at the next start).
pub(crate) const MAX_UPDATES: u64 = 100_000;

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Replayed {
    /// The first and last update replayed (none: `first > last`).
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// The log's leaves `[0, through)` are indexed after it.
    pub(crate) through: u64,
}

impl Replayed {
    pub(crate) fn count(&self) -> u64 {
        (self.last + 1).saturating_sub(self.first)
    }
}

/// Why a replay stopped short.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{0}")]
    Fetch(#[from] FetchError),
    #[error("{at}: {why}; the updates before it were replayed, the index goes on from there")]
    Refused { at: String, why: String },
}

/// What replaying from a list of copies did.
#[derive(Debug)]
pub(crate) enum FromCopies {
    /// Updates replayed from the copy shown.
    Replayed(String, Replayed),
    /// No copy publishes an update the database lacks.
    Nothing,
    /// Nothing replayed: the copies whose deltas were refused (each with the first that does
    /// not hold; those before it were kept) and those that did not answer.
    Failed {
        refused: Vec<String>,
        silent: Vec<String>,
    },
}

/// Replays from the first of `copies` that publishes updates the database lacks, whose records
/// are leaves of the log's tree below `size` ([`replay`]; each copy at its root or under a
/// mirror's folder of `origin`).
pub(crate) async fn from_copies(
    db: &Db,
    copies: &[Source],
    origin: &str,
    size: u64,
) -> Result<FromCopies, DbError> {
    let (mut refused, mut silent) = (Vec::new(), Vec::new());
    for src in copies {
        let at = match deltas_at(src, origin).await {
            Ok(Some(at)) => at,
            Ok(None) => continue,
            Err(e) => {
                silent.push(e.to_string());
                continue;
            }
        };
        match replay(db, &at, size).await {
            Ok(r) if r.count() > 0 => return Ok(FromCopies::Replayed(at.shown(""), r)),
            Ok(_) => {}
            Err(ReplayError::Db(e)) => return Err(e),
            Err(ReplayError::Fetch(e)) => silent.push(e.to_string()),
            Err(e) => refused.push(e.to_string()),
        }
    }
    Ok(match refused.is_empty() && silent.is_empty() {
        true => FromCopies::Nothing,
        false => FromCopies::Failed { refused, silent },
    })
}

/// Where a replay stands: the leaves indexed, the newest version and label count, the nodes
/// remembered.
struct At {
    from: u64,
    version: i64,
    labels: u64,
    slot: Option<Current>,
}

/// Replays the updates `src` publishes after the database's newest, whose records are leaves
/// of the log's tree below `size` (see the module), in one transaction under the index's lock.
/// A delta that does not hold (or a copy that stops answering) ends the replay: the updates
/// before it are committed, and the error names it.
pub(crate) async fn replay(db: &Db, src: &Source, size: u64) -> Result<Replayed, ReplayError> {
    let published = src
        .file(delta::LATEST, 64, "index latest")
        .await?
        .and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut conn = db.acquire().await?;
    let mut tx = conn
        .begin()
        .await
        .ctx("begin replaying the account index")?;
    store::lock(&mut tx).await?;
    let newest = store::newest(&mut tx).await?;
    let mut at = At {
        from: newest
            .as_ref()
            .map_or(0, |v| u64::try_from(v.version).unwrap_or(0)),
        version: newest.as_ref().map_or(-1, |v| v.version),
        labels: newest
            .as_ref()
            .map_or(0, |v| u64::try_from(v.labels).unwrap_or(0)),
        slot: None,
    };
    let next = newest
        .as_ref()
        .map_or(1, |v| u64::try_from(v.seq).unwrap_or(0) + 1);
    let mut out = Replayed {
        first: next,
        last: next - 1,
        through: at.from,
    };
    let mut stopped = None;
    for seq in next..=published.min(next + MAX_UPDATES - 1) {
        match replay_one(&mut tx, src, seq, size, &mut at).await {
            Ok(true) => {
                out.last = seq;
                out.through = at.from;
            }
            Ok(false) => break,
            Err(ReplayError::Db(e)) => return Err(e.into()),
            Err(e) => {
                stopped = Some(e);
                break;
            }
        }
    }
    tx.commit()
        .await
        .ctx("commit the account index's replayed updates")?;
    match stopped {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Replays update `seq` from `src` onto `at` (see [`replay`]); `false` when `src` has no such
/// update or its record is not below `size`.
async fn replay_one(
    tx: &mut sqlx::PgConnection,
    src: &Source,
    seq: u64,
    size: u64,
    at: &mut At,
) -> Result<bool, ReplayError> {
    let rel = delta::path(seq);
    let shown = src.shown(&rel);
    let refused = |why: String| ReplayError::Refused {
        at: shown.clone(),
        why,
    };
    let Some(bytes) = src.file(&rel, delta::MAX_DELTA, "index delta").await? else {
        return Ok(false);
    };
    let d = Delta::parse(&bytes).map_err(|e| refused(format!("not an index delta: {e}")))?;
    if d.record_leaf >= size {
        return Ok(false);
    }
    let hash = row_hashes(tx, d.record_leaf, d.record_leaf + 1)
        .await?
        .first()
        .copied();
    let rec = check_record(&d, seq, hash).map_err(refused)?;
    if rec.tree_size < at.from {
        return Err(refused(format!(
            "it indexes leaves up to {}, before the index's {}",
            rec.tree_size, at.from
        )));
    }
    let hashes = row_hashes(tx, at.from, rec.tree_size).await?;
    let mut added: BTreeMap<Label, Vec<(u64, Hash)>> = BTreeMap::new();
    for (leaf, label) in &d.pairs {
        let h = leaf
            .checked_sub(at.from)
            .and_then(|k| hashes.get(usize::try_from(k).ok()?))
            .ok_or_else(|| refused(format!("leaf {leaf} is not one this update indexed")))?;
        added.entry(*label).or_default().push((*leaf, *h));
    }
    let mut w = Writes {
        version: i64::try_from(rec.tree_size).unwrap_or(i64::MAX),
        seq: i64::try_from(seq).unwrap_or(i64::MAX),
        record_leaf: i64::try_from(d.record_leaf).unwrap_or(i64::MAX),
        delta: bytes,
        ..Writes::default()
    };
    let (root, fresh) = grow(tx, &mut at.slot, at.version, &added, &mut w).await?;
    let labels = at.labels + fresh;
    if root.hash != rec.root || labels != rec.labels {
        return Err(refused(
            "the index its delta makes has another root (or label count) than its record states"
                .into(),
        ));
    }
    w.root = root.hash;
    w.labels = i64::try_from(labels).unwrap_or(i64::MAX);
    store::write_index(tx, &w).await?;
    store::write_version(tx, &w).await?;
    *at = At {
        from: rec.tree_size,
        version: w.version,
        labels,
        slot: at.slot.take(),
    };
    Ok(true)
}

/// The row hashes of leaves `[from, to)` in order.
async fn row_hashes(tx: &mut sqlx::PgConnection, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
    let rows = store::rows_between(tx, from, to).await?;
    Ok(rows.into_iter().map(|r| r.row_hash).collect())
}
