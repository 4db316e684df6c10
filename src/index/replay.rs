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

/// Replays the updates `src` publishes after the database's newest, whose records are leaves
/// of the log's tree below `size` (see the module), in one transaction under the index's lock.
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
    let mut from = newest
        .as_ref()
        .map_or(0, |v| u64::try_from(v.version).unwrap_or(0));
    let mut version = newest.as_ref().map_or(-1, |v| v.version);
    let mut labels = newest
        .as_ref()
        .map_or(0, |v| u64::try_from(v.labels).unwrap_or(0));
    let next = newest
        .as_ref()
        .map_or(1, |v| u64::try_from(v.seq).unwrap_or(0) + 1);
    let mut out = Replayed {
        first: next,
        last: next - 1,
        through: from,
    };
    let mut slot: Option<Current> = None;
    for seq in next..=published.min(next + MAX_UPDATES - 1) {
        let rel = delta::path(seq);
        let at = src.shown(&rel);
        let refused = |why: String| ReplayError::Refused {
            at: at.clone(),
            why,
        };
        let Some(bytes) = src.file(&rel, delta::MAX_DELTA, "index delta").await? else {
            break;
        };
        let d = Delta::parse(&bytes).map_err(|e| refused(format!("not an index delta: {e}")))?;
        if d.record_leaf >= size {
            break;
        }
        let hash = row_hashes(&mut tx, d.record_leaf, d.record_leaf + 1)
            .await?
            .first()
            .copied();
        let rec = check_record(&d, seq, hash).map_err(refused)?;
        if rec.tree_size < from {
            return Err(refused(format!(
                "it indexes leaves up to {}, before the index's {from}",
                rec.tree_size
            )));
        }
        let hashes = row_hashes(&mut tx, from, rec.tree_size).await?;
        let mut added: BTreeMap<Label, Vec<(u64, Hash)>> = BTreeMap::new();
        for (leaf, label) in &d.pairs {
            let h = leaf
                .checked_sub(from)
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
        let (root, fresh) = grow(&mut tx, &mut slot, version, &added, &mut w).await?;
        labels += fresh;
        if root.hash != rec.root || labels != rec.labels {
            return Err(refused(
                "the index its delta makes has another root (or label count) than its record states"
                    .into(),
            ));
        }
        w.root = root.hash;
        w.labels = i64::try_from(labels).unwrap_or(i64::MAX);
        store::write_index(&mut tx, &w).await?;
        store::write_version(&mut tx, &w).await?;
        version = w.version;
        from = rec.tree_size;
        out.last = seq;
        out.through = from;
    }
    tx.commit()
        .await
        .ctx("commit the account index's replayed updates")?;
    Ok(out)
}

/// The row hashes of leaves `[from, to)` in order.
async fn row_hashes(tx: &mut sqlx::PgConnection, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
    let rows = store::rows_between(tx, from, to).await?;
    Ok(rows.into_iter().map(|r| r.row_hash).collect())
}
