//! The account index's deltas beside a log's tiles. A pull copies them ([`copy_deltas`]): the
//! deltas the log publishes (`index/latest`, then `index/delta/N` from the copy's next one on, at
//! most [`DELTAS_A_PULL`] a pull), each read strictly and held against the copy's own tiles
//! before it is stored: its record is the row at its record leaf (the delta's leaf data makes
//! the row hash the copy's entry bundle holds there, its opening holds an index record numbered
//! N), the leaves it indexes follow the previous update's and precede its record. `tiles fsck`
//! rebuilds the whole index from them ([`rebuild`]) and holds every root its records state.

use sha2::{Digest, Sha256};

use super::source::{FetchError, Source};
use super::{Log, PullError};
use crate::bundle::{complete, leaf};
use crate::tiles::Tiles;
use crate::tlog::index::delta::{self, Delta};
use crate::tlog::index::memory::Index;
use crate::tlog::index::{Label, Value};
use crate::tlog::merkle::Hash;
use crate::tlog::tile::{self, TileId, TILE_WIDTH};

/// Deltas copied in one pull at most (a backlog goes on at the next).
pub const DELTAS_A_PULL: u64 = 256;

/// The entry bundle holding `leaf` in a tree of `size` leaves (full when it is).
fn bundle_of(leaf: u64, size: u64) -> TileId {
    let index = leaf / TILE_WIDTH;
    let width = (size - index * TILE_WIDTH).min(TILE_WIDTH) as u16;
    TileId::entries(index, width)
}

/// The row hash at `leaf` in the copy's tiles of a tree of `size` leaves.
async fn copy_row_hash(
    t: &Tiles,
    leaf: u64,
    size: u64,
) -> Result<Option<Hash>, crate::tiles::TilesError> {
    if leaf >= size {
        return Ok(None);
    }
    let id = bundle_of(leaf, size);
    // A partial bundle may have been replaced by the full one since.
    let bytes = match t.read(&id).await? {
        Some(b) => Some((id, b)),
        None => t.read(&id.full()).await?.map(|b| (id.full(), b)),
    };
    let Some((id, bytes)) = bytes else {
        return Ok(None);
    };
    let entries = tile::parse_bundle(&id, &bytes)?;
    let at = usize::try_from(leaf % TILE_WIDTH).unwrap_or(usize::MAX);
    Ok(entries.get(at).and_then(|e| Hash::try_from(*e).ok()))
}

/// A delta's record, given the row hash the tiles hold at its record leaf: the row is the
/// record of update `seq`, of an index below its own leaf, and the delta's pairs are below
/// that index's size. Pure.
pub fn check_record(
    d: &Delta,
    seq: u64,
    row_hash: Option<Hash>,
) -> Result<complete::Record, String> {
    let Some(hash) = row_hash else {
        return Err(format!(
            "its record leaf {} is not in the tree",
            d.record_leaf
        ));
    };
    if <[u8; 32]>::from(Sha256::digest(&d.record)) != hash {
        return Err(format!(
            "its record is not the row at leaf {}",
            d.record_leaf
        ));
    }
    let mut c =
        leaf::parse(&d.record).map_err(|_| "its record is not a row encoding".to_owned())?;
    leaf::open(&mut c, &d.opening)
        .map_err(|_| "its record's opening does not open it".to_owned())?;
    let rec = complete::record(c.raw)?;
    if rec.seq != seq || rec.tree_size > d.record_leaf {
        return Err(format!(
            "its record is numbered {} for an index of {} leaves",
            rec.seq, rec.tree_size
        ));
    }
    if let Some((leaf, _)) = d.pairs.iter().find(|(l, _)| *l >= rec.tree_size) {
        return Err(format!("leaf {leaf} is beyond the index it records"));
    }
    Ok(rec)
}

/// Copies the deltas the log publishes whose records are leaves of the copy's tree of `size`.
pub async fn copy_deltas(log: &Log, copy: &Tiles, size: u64) -> Result<u64, PullError> {
    let theirs = log
        .source
        .file(delta::LATEST, 64, "index latest")
        .await
        .map_err(PullError::served)?
        .and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mine = copy.deltas_published().await?;
    // The size the previous update indexed: this one's pairs come after it.
    let mut before = 0;
    if mine > 0 {
        if let Some(Ok(d)) = copy.delta(mine).await?.map(|b| Delta::parse(&b)) {
            let hash = copy_row_hash(copy, d.record_leaf, size).await?;
            before = check_record(&d, mine, hash).map_or(0, |r| r.tree_size);
        }
    }
    let mut n = mine;
    while n < theirs.min(mine + DELTAS_A_PULL) {
        let seq = n + 1;
        let rel = delta::path(seq);
        let at = log.source.shown(&rel);
        let refused = |why: String| PullError::Refused(format!("{at}: {why}"));
        let got = log.source.file(&rel, delta::MAX_DELTA, "index delta");
        let Some(bytes) = got.await.map_err(PullError::served)? else {
            break;
        };
        let d = Delta::parse(&bytes).map_err(|e| refused(format!("not an index delta: {e}")))?;
        if d.record_leaf >= size {
            break;
        }
        let hash = copy_row_hash(copy, d.record_leaf, size).await?;
        let rec = check_record(&d, seq, hash).map_err(refused)?;
        if let Some((leaf, _)) = d.pairs.iter().find(|(l, _)| *l < before) {
            return Err(refused(format!(
                "leaf {leaf} was indexed by an earlier update"
            )));
        }
        copy.write_delta(seq, &bytes).await?;
        before = rec.tree_size;
        n = seq;
    }
    if n != mine {
        copy.set_deltas_published(n).await?;
    }
    Ok(n - mine)
}

/// Row hashes read from a log's entry bundles, one bundle kept.
struct RowHashes<'a> {
    src: &'a Source,
    size: u64,
    kept: Option<(u64, Vec<Hash>)>,
}

impl RowHashes<'_> {
    async fn at(&mut self, leaf: u64) -> Result<Option<Hash>, FetchError> {
        if leaf >= self.size {
            return Ok(None);
        }
        let index = leaf / TILE_WIDTH;
        if self.kept.as_ref().is_none_or(|(i, _)| *i != index) {
            let id = bundle_of(leaf, self.size);
            let bytes = self.src.tile(id).await?;
            let hashes = tile::parse_bundle(&id, &bytes)
                .unwrap_or_default()
                .iter()
                .filter_map(|e| Hash::try_from(*e).ok())
                .collect();
            self.kept = Some((index, hashes));
        }
        let at = usize::try_from(leaf % TILE_WIDTH).unwrap_or(usize::MAX);
        Ok(self.kept.as_ref().and_then(|(_, h)| h.get(at).copied()))
    }
}

/// What the rebuild found: updates checked, the labels of the last, and the first update that
/// does not hold (the rebuild stops there).
#[derive(Debug, Default)]
pub struct Rebuilt {
    pub updates: u64,
    pub labels: u64,
    pub broken: Option<String>,
}

/// Rebuilds the account index from the deltas at `src` whose records are leaves of its tree of
/// `size` leaves, each root held against its record. Memory: the index (about 150 bytes a
/// label), one delta and one bundle.
pub async fn rebuild(src: &Source, size: u64) -> Result<Rebuilt, FetchError> {
    let mut out = Rebuilt::default();
    let published = src
        .file(delta::LATEST, 64, "index latest")
        .await?
        .and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut hashes = RowHashes {
        src,
        size,
        kept: None,
    };
    let mut idx = Index::new();
    let (mut before, mut key) = (0u64, None);
    for seq in 1..=published {
        let at = src.shown(&delta::path(seq));
        let Some(bytes) = src
            .file(&delta::path(seq), delta::MAX_DELTA, "index delta")
            .await?
        else {
            out.broken = Some(format!("MISSING {at}"));
            break;
        };
        let d = match Delta::parse(&bytes) {
            Ok(d) if d.record_leaf < size => d,
            Ok(_) => break,
            Err(e) => {
                out.broken = Some(format!("WRONG {at}: not an index delta: {e}"));
                break;
            }
        };
        let rec = match check_record(&d, seq, hashes.at(d.record_leaf).await?) {
            Ok(r) => r,
            Err(why) => {
                out.broken = Some(format!("WRONG {at}: {why}"));
                break;
            }
        };
        if key.is_some_and(|k| k != rec.vrf_key) {
            out.broken = Some(format!(
                "WRONG {at}: its record names another index key than the first"
            ));
            break;
        }
        key = Some(rec.vrf_key);
        let mut changed: std::collections::BTreeMap<Label, Value> = Default::default();
        for (leaf, label) in &d.pairs {
            let Some(h) = hashes.at(*leaf).await?.filter(|_| *leaf >= before) else {
                out.broken = Some(format!(
                    "WRONG {at}: leaf {leaf} is not one this update indexed"
                ));
                return Ok(out);
            };
            let v0 = changed
                .get(label)
                .copied()
                .or_else(|| idx.get(label))
                .unwrap_or(Value::NONE);
            changed.insert(*label, v0.push(*leaf, &h));
        }
        idx.update(changed);
        if idx.root() != rec.root || idx.len() as u64 != rec.labels {
            out.broken = Some(format!(
                "WRONG {at}: the index its deltas make has another root (or label count) than its record states"
            ));
            break;
        }
        before = rec.tree_size;
        out.updates = seq;
        out.labels = idx.len() as u64;
    }
    Ok(out)
}
