//! One pull: the log's checkpoint (its signature by the log's key, a witness policy's quorum),
//! compared with the mirror checkpoint; for a larger tree, the entry bundles of the new leaves
//! pushed onto the copy's own tiles, the rebuilt root compared with the signed one and every
//! hash tile and bundle the log serves compared byte for byte with the rebuilt ones. Nothing is
//! written before every check passed; then the new tiles, then the checkpoint as served (with
//! its cosignatures), put last. The size a checkpoint claims is believed only
//! once its signature holds, and even then bounds nothing by itself: a pull adds at most
//! `Log::max_leaves` leaves (refused beyond, before anything is fetched), the tiles are named
//! one at a time as they are fetched, a few at once, and the first one that cannot be fetched
//! ends the pull, so memory and work follow what the log actually served.

use std::collections::HashMap;

use futures::StreamExt;

use super::source::origin_dir;
use super::{Log, PullError, Pulled, Signed, Split};
use crate::tiles::{Tiles, CHECKPOINT_FILE};
use crate::tlog::merkle::Hash;
use crate::tlog::note;
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::read::{nodes_of_root, tiles_for, TileReader};
use crate::tlog::tile::{self, Kind, TileId};

/// Tiles fetched at once.
const CONCURRENCY: usize = 8;

/// Pulls the log into its copy under `dir` (`dir/<hex SHA-256 of the origin>/`, a directory or
/// an S3 prefix); with `write` false, checks only (a copy kept untouched after a fork).
pub async fn pull(log: &Log, dir: &Tiles, write: bool) -> Result<Pulled, PullError> {
    let (log, theirs) = log_checkpoint(log).await?;
    let copy = dir.child(&origin_dir(&theirs.cp.origin));
    let pulled = pull_tiles(&log, &copy, theirs, write).await?;
    if write {
        super::index::copy_deltas(&log, &copy, pulled.size()).await?;
    }
    Ok(pulled)
}

/// The tiles part of a pull: into `copy`, to the log's checkpoint `theirs`.
async fn pull_tiles(
    log: &Log,
    copy: &Tiles,
    theirs: Signed,
    write: bool,
) -> Result<Pulled, PullError> {
    let ours = mirror_checkpoint(copy, log).await?;
    let Some(ours) = ours else {
        return extend(log, copy, None, theirs, write).await;
    };
    let inconsistent = |split, ours: Signed, theirs: Signed| PullError::Inconsistent {
        split,
        mirror: Box::new(ours),
        log: Box::new(theirs),
    };
    let (m, n) = (ours.cp.size, theirs.cp.size);
    if n < m {
        return Err(inconsistent(Split::Rollback, ours, theirs));
    }
    if n == m {
        if ours.cp.root != theirs.cp.root {
            return Err(inconsistent(Split::Fork, ours, theirs));
        }
        return Ok(Pulled::Unchanged {
            origin: theirs.cp.origin,
            size: n,
        });
    }
    extend(log, copy, Some(ours), theirs, write).await
}

/// The log's checkpoint, signed by its key and, with a policy, cosigned by a quorum: at the
/// log's prefix, or in a mirror's copy of the key's log under it (a mirror of a mirror). Returns
/// the log where it was found.
pub async fn log_checkpoint(log: &Log) -> Result<(Log, Signed), PullError> {
    let (source, note) = log
        .source
        .locate(&log.key.name)
        .await
        .map_err(PullError::served)?;
    let found = Log {
        source,
        ..log.clone()
    };
    let signed = opened(&found, note)?;
    Ok((found, signed))
}

/// `note`, as `log` served it, opened with its key and checked against its policy.
pub fn opened(log: &Log, note: String) -> Result<Signed, PullError> {
    let shown = log.source.shown("checkpoint");
    let cp = note::open(&note, &log.key).map_err(|e| {
        PullError::Refused(format!("{shown}: {e} (is --public-key the log's key?)"))
    })?;
    if let Some(p) = &log.policy {
        p.check(&note)
            .map_err(|e| PullError::Refused(format!("{shown}: witness policy: {e}")))?;
    }
    Ok(Signed { note, cp })
}

/// The mirror checkpoint of the copy, if there is one yet (signed by the same key).
async fn mirror_checkpoint(copy: &Tiles, log: &Log) -> Result<Option<Signed>, PullError> {
    let Some(note) = copy.checkpoint().await? else {
        return Ok(None);
    };
    let cp = note::open(&note, &log.key).map_err(|e| {
        PullError::Refused(format!(
            "the mirror's checkpoint {}: {e}; the copy is of another key, and is kept as it is",
            copy.shown(CHECKPOINT_FILE)
        ))
    })?;
    Ok(Some(Signed { note, cp }))
}

/// The copy's tiles of the larger tree, rebuilt, and what the log serves that differs.
struct Rebuilt {
    builder: TileBuilder,
    built: HashMap<TileId, Vec<u8>>,
    /// The first bundle the log serves with other bytes than the rebuilt one.
    bundle_fault: Option<TileId>,
    /// The first hash tile the log serves with other bytes than the rebuilt one.
    tile_fault: Option<TileId>,
}

/// From the copy of `m` leaves to the log's `n`.
async fn extend(
    log: &Log,
    copy: &Tiles,
    ours: Option<Signed>,
    theirs: Signed,
    write: bool,
) -> Result<Pulled, PullError> {
    let m = ours.as_ref().map_or(0, |s| s.cp.size);
    let n = theirs.cp.size;
    if n - m > log.max_leaves {
        return Err(PullError::Refused(format!(
            "{}: the log signs {n} leaves, {} more than the mirror's {m}; a pull adds at most {} (--max-leaves-per-pull, about 70 bytes of memory a leaf): nothing fetched; raise it to pull this log",
            log.source.shown("checkpoint"),
            n - m,
            log.max_leaves
        )));
    }
    let mut r = rebuild(log, copy.builder_at(m).await?, m, n).await?;
    if r.builder.size() != n {
        return Err(PullError::Refused(format!(
            "the bundles make a tree of {} leaves, not the checkpoint's {n}",
            r.builder.size()
        )));
    }
    compare_tiles(log, m, n, &mut r).await?;
    if r.builder.root() != theirs.cp.root {
        return Err(root_differs(log, ours, theirs, &r).await);
    }
    if let Some(id) = r.bundle_fault {
        return Err(PullError::Refused(format!(
            "{}: its entries before leaf {m} are not the ones the mirror holds, though the log signs the mirror's",
            log.source.shown(&id.path())
        )));
    }
    if let Some(id) = r.tile_fault {
        return Err(PullError::Refused(format!(
            "{}: not the hashes of the log's own entries (which make the root it signed)",
            log.source.shown(&id.path())
        )));
    }
    if write {
        let new: Vec<_> = tile::tiles_between(m, n)
            .filter_map(|id| r.built.get(&id).map(|b| (id, b)))
            .collect();
        for chunk in new.chunks(CONCURRENCY) {
            futures::future::try_join_all(chunk.iter().map(|(id, b)| copy.write(id, b))).await?;
        }
        copy.write_checkpoint(&theirs.note).await?;
    }
    Ok(Pulled::Added {
        origin: theirs.cp.origin,
        from: m,
        size: n,
    })
}

/// Fetches the bundles of the new leaves from `m` to `n`, in order, and pushes their entries
/// onto `builder`.
async fn rebuild(
    log: &Log,
    mut builder: TileBuilder,
    m: u64,
    n: u64,
) -> Result<Rebuilt, PullError> {
    // Level 0 comes first, in index order, the partial bundle last.
    let bundles = tile::tiles_between(m, n).filter(|id| id.kind == Kind::Entries);
    let mut fetched = futures::stream::iter(bundles)
        .map(|id| async move { (id, log.source.tile(id).await) })
        .buffered(CONCURRENCY);
    let mut built = HashMap::new();
    let mut served_partial = None;
    let mut bundle_fault = None;
    while let Some((id, got)) = fetched.next().await {
        let bytes = got.map_err(PullError::served)?;
        let entries = tile::parse_bundle(&id, &bytes).map_err(|e| refused(log, &id, e))?;
        let skip = usize::try_from(m.saturating_sub(id.leaves().0)).unwrap_or(usize::MAX);
        for e in entries.iter().skip(skip) {
            builder.push(e).map_err(|e| refused(log, &id, e))?;
        }
        built.extend(builder.take_full());
        if !id.is_full() {
            served_partial = Some((id, bytes));
        } else if bundle_fault.is_none() && built.get(&id) != Some(&bytes) {
            bundle_fault = Some(id);
        }
    }
    built.extend(builder.partials());
    if let Some((id, bytes)) = served_partial {
        if bundle_fault.is_none() && built.get(&id) != Some(&bytes) {
            bundle_fault = Some(id);
        }
    }
    Ok(Rebuilt {
        builder,
        built,
        bundle_fault,
        tile_fault: None,
    })
}

/// Fetches the log's new hash tiles and notes the first one that is not the rebuilt one.
async fn compare_tiles(log: &Log, m: u64, n: u64, r: &mut Rebuilt) -> Result<(), PullError> {
    let hashes = tile::tiles_between(m, n).filter(|id| id.kind != Kind::Entries);
    let mut fetched = futures::stream::iter(hashes)
        .map(|id| async move { (id, log.source.tile(id).await) })
        .buffered(CONCURRENCY);
    while let Some((id, got)) = fetched.next().await {
        let bytes = got.map_err(PullError::served)?;
        if r.tile_fault.is_none() && r.built.get(&id) != Some(&bytes) {
            r.tile_fault = Some(id);
        }
    }
    Ok(())
}

/// The rebuilt tree is not the signed one: a fork when the log's own hash tiles make its signed
/// root but not the copy's root at the copy's size; otherwise what the log serves does not
/// match its own checkpoint, named by the first tile or bundle at fault.
async fn root_differs(log: &Log, ours: Option<Signed>, theirs: Signed, r: &Rebuilt) -> PullError {
    let (m, n) = (ours.as_ref().map_or(0, |s| s.cp.size), theirs.cp.size);
    let mut nodes = nodes_of_root(n);
    nodes.extend(nodes_of_root(m));
    let read = async {
        let needed = tiles_for(&nodes, n).map_err(|e| PullError::Refused(e.to_string()))?;
        let hashes = fetch_hashes(log, needed).await?;
        let reader = TileReader::new(n, &hashes);
        let root = |size| {
            reader
                .root(size)
                .map_err(|e| PullError::Refused(e.to_string()))
        };
        Ok::<_, PullError>((root(n)?, root(m)?))
    };
    let (root_n, root_m) = match read.await {
        Ok(roots) => roots,
        Err(e) => return e,
    };
    let tiles_sign = root_n == theirs.cp.root;
    if let Some(ours) = ours {
        if tiles_sign && root_m != ours.cp.root {
            return PullError::Inconsistent {
                split: Split::Fork,
                mirror: Box::new(ours),
                log: Box::new(theirs),
            };
        }
    }
    let shown = |id: &TileId| log.source.shown(&id.path());
    PullError::Refused(match (tiles_sign, r.tile_fault) {
        (true, Some(t)) if t.level() == 0 => format!(
            "{}: its entries do not hash to {}, whose hashes make the root the log signed",
            shown(&TileId::entries(t.index, t.width)),
            shown(&t)
        ),
        (_, Some(t)) => format!(
            "{}: not the hashes its bundles make, and the bundles do not make the root the log signed at size {n}",
            shown(&t)
        ),
        (_, None) => format!(
            "the log's bundles and tiles make another root than the one its checkpoint signs at size {n} ({})",
            log.source.shown("checkpoint")
        ),
    })
}

/// The log's hash tiles `ids`, parsed.
pub async fn fetch_hashes(
    log: &Log,
    ids: Vec<TileId>,
) -> Result<HashMap<TileId, Vec<Hash>>, PullError> {
    let mut fetched = futures::stream::iter(ids)
        .map(|id| async move { (id, log.source.tile(id).await) })
        .buffered(CONCURRENCY);
    let mut out = HashMap::new();
    while let Some((id, got)) = fetched.next().await {
        let bytes = got.map_err(PullError::served)?;
        let hashes = tile::parse_hashes(&id, &bytes).map_err(|e| refused(log, &id, e))?;
        out.insert(id, hashes);
    }
    Ok(out)
}

fn refused(log: &Log, id: &TileId, e: impl std::fmt::Display) -> PullError {
    PullError::Refused(format!("{}: {e}", log.source.shown(&id.path())))
}
