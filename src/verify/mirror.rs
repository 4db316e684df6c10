//! `verify --mirror DIR`: the database against an auditor's copy of the log (`event-audit
//! mirror`'s directory, or any copy of the log's tiles). The mirror is read first, bounded: its
//! checkpoint opened with the log's key when one is given (without one, the copy is taken as
//! it describes itself, and the report says so), its entry bundles read one at a time in leaf
//! order (regular files inside the copy, each at most a bundle's size, each entry a 32-byte
//! row hash), the first missing one ending the read, and rebuilt into the checkpoint's root (a
//! copy that does not hold together is not evidence): memory follows the entries actually
//! read, never the size the checkpoint claims. Then the database's row hashes, in log order,
//! are aligned with the mirror's entries: a row whose hash changed, a row deleted (the rows
//! after it are not counted again) and a row inserted are each named once, by leaf index, with
//! the rows the database holds there. Needs no witness and no NATS.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::blobs::{Location, Store};
use crate::log::tiles::{Tiles, TilesError};
use crate::log::tree::TreeStore;
use crate::log::Reader;
use crate::row::hex;
use crate::tlog::merkle::Hash;
use crate::tlog::note::{self, Checkpoint, PublicKey};
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::{parse_bundle, tiles_between, Kind};

/// How many differing leaves the report names (all are counted).
pub(crate) const NAMED_LEAVES: usize = 20;

/// The most entries of a mirror's directory looked at for the one log it holds (without
/// `--public-key`, which names the log's folder directly).
const MAX_DIR_ENTRIES: usize = 4096;

/// Why the mirror could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MirrorError {
    #[error("{path}: no checkpoint (a mirror's directory holds one per log, under the hex SHA-256 of the log's origin; pass the directory `event-audit mirror --dir` wrote, and --public-key to pick the log)")]
    NoCheckpoint { path: String },
    #[error("{path}: {why}")]
    Checkpoint { path: String, why: String },
    #[error("{path}: holds several logs ({count}); pass --public-key to pick this log's")]
    Several { path: String, count: usize },
    #[error("{path}: more than {MAX_DIR_ENTRIES} entries to look through for a log's copy; pass --public-key to pick this log's")]
    Crowded { path: String },
    #[error(transparent)]
    Tiles(#[from] TilesError),
    #[error("{path}: entry {leaf} is {len} bytes, not a row hash (32 bytes): not a copy of an event-audit log")]
    Entry { path: String, leaf: u64, len: usize },
    #[error("{path}: the entries do not make the mirror's checkpoint root at size {size}: the copy is damaged; pull it again with `event-audit mirror`")]
    Damaged { path: String, size: u64 },
    #[error(transparent)]
    Key(#[from] crate::witnessed::signer::CheckpointError),
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
}

/// A row as the database holds it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct RowName {
    pub stream: String,
    pub stream_seq: i64,
}

impl std::fmt::Display for RowName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stream={} stream_seq={}", self.stream, self.stream_seq)
    }
}

/// How the database differs from the mirror at a leaf.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Change {
    /// Another row hash at the leaf.
    Changed,
    /// The mirror's leaf is not in the database; the rows after it follow on.
    Deleted,
    /// A row of the database that is no leaf of the mirror, before the mirror's leaf.
    Inserted,
}

/// One place where the database and the mirror differ.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Difference {
    /// The mirror's leaf (for an inserted row, the leaf it was inserted before).
    pub leaf_index: u64,
    pub kind: Change,
    /// The mirror's entry (hex); `None` for an inserted row.
    pub mirror_entry: Option<String>,
    /// The database's row hash there (hex); `None` for a deleted row.
    pub database_entry: Option<String>,
    /// Where the database holds the mirror's entry now, if anywhere.
    pub mirror_row: Option<RowName>,
    /// The database's row there.
    pub database_row: Option<RowName>,
    /// For a deleted row: the database's rows just before and just after where it was.
    pub after_row: Option<RowName>,
    pub before_row: Option<RowName>,
}

/// What `verify --mirror` found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MirrorReport {
    pub dir: String,
    pub origin: String,
    /// The mirror's checkpoint size.
    pub mirror_size: u64,
    /// Whether the mirror's checkpoint was checked with the log's key.
    pub signature_checked: bool,
    /// What the comparison trusts, in words.
    pub trusts: String,
    /// The database's tree size.
    pub database_size: u64,
    /// Leaves compared (the smaller of the two sizes).
    pub compared: u64,
    /// The mirror's leaves the database holds another row hash at.
    pub changed: u64,
    /// The mirror's leaves the database no longer holds at all: rows deleted (or lost).
    pub lost: u64,
    /// Rows of the database that are no leaf of the mirror, inside the mirror's tree.
    pub inserted: u64,
    /// The first differences, named.
    pub differences: Vec<Difference>,
}

impl MirrorReport {
    pub(crate) fn holds(&self) -> bool {
        self.changed == 0 && self.lost == 0 && self.inserted == 0
    }

    /// The one-line summary.
    pub(crate) fn line(&self) -> String {
        if self.holds() {
            return format!(
                "mirror holds: the database's first {} leaves are the mirror's ({} at size {}; {})",
                self.compared, self.origin, self.mirror_size, self.trusts
            );
        }
        let first = self.differences.first().map_or(String::new(), |d| {
            let row = |r: &Option<RowName>| r.as_ref().map(ToString::to_string);
            match d.kind {
                Change::Changed => format!(
                    "; first: leaf {} changed ({})",
                    d.leaf_index,
                    row(&d.database_row).unwrap_or_else(|| "a row hash no row holds".into())
                ),
                Change::Deleted => format!(
                    "; first: 1 row deleted at leaf {} ({})",
                    d.leaf_index,
                    match (row(&d.after_row), row(&d.before_row)) {
                        (Some(a), Some(b)) => format!("between {a} and {b}"),
                        (Some(a), None) => format!("after {a}, the database's last row"),
                        (None, Some(b)) => format!("before {b}, the database's first row"),
                        (None, None) => "the database holds no row".into(),
                    }
                ),
                Change::Inserted => format!(
                    "; first: a row inserted before leaf {} ({})",
                    d.leaf_index,
                    row(&d.database_row).unwrap_or_default()
                ),
            }
        });
        format!(
            "mirror DIFFERS: {} changed, {} deleted, {} inserted of the mirror's {} leaves (database tree: {}){first}; {}",
            self.changed,
            self.lost,
            self.inserted,
            self.mirror_size,
            self.database_size,
            self.trusts
        )
    }
}

/// An auditor's mirror of one log, read and rebuilt into its checkpoint's root.
#[derive(Debug)]
pub(crate) struct Mirror {
    /// Where the copy is (a directory, or an S3 prefix).
    pub root: String,
    pub cp: Checkpoint,
    pub signature_checked: bool,
    /// Its entries (row hashes) in leaf order.
    pub entries: Vec<Hash>,
}

/// The log's directory in `dir`: `dir` itself when it holds a checkpoint, else the subdirectory
/// of the key's origin, else the one subdirectory holding a checkpoint.
fn log_dir(dir: &Path, key: Option<&PublicKey>) -> Result<PathBuf, MirrorError> {
    if dir.join("checkpoint").exists() {
        return Ok(dir.to_owned());
    }
    if let Some(k) = key {
        let sub = dir.join(crate::log::tiles::origin_dir(&k.name));
        if sub.join("checkpoint").exists() {
            return Ok(sub);
        }
    } else if let Ok(entries) = std::fs::read_dir(dir) {
        let mut subs = Vec::new();
        for (n, e) in entries.enumerate() {
            if n >= MAX_DIR_ENTRIES {
                return Err(MirrorError::Crowded {
                    path: dir.display().to_string(),
                });
            }
            if let Ok(p) = e.map(|e| e.path()) {
                if p.join("checkpoint").exists() {
                    subs.push(p);
                }
            }
        }
        match subs.len() {
            1 => return Ok(subs.swap_remove(0)),
            0 => {}
            count => {
                return Err(MirrorError::Several {
                    path: dir.display().to_string(),
                    count,
                })
            }
        }
    }
    Err(MirrorError::NoCheckpoint {
        path: dir.display().to_string(),
    })
}

/// The mirror's checkpoint, opened with the key when there is one (otherwise only parsed: the
/// size and root it claims, believed as far as the entries read make that root).
async fn checkpoint(dir: &Tiles, key: Option<&PublicKey>) -> Result<Checkpoint, MirrorError> {
    let path = dir.place().to_owned();
    let bad = |why: String| MirrorError::Checkpoint {
        path: path.clone(),
        why,
    };
    let text = dir
        .checkpoint()
        .await?
        .ok_or_else(|| MirrorError::NoCheckpoint { path: path.clone() })?;
    match key {
        Some(k) => {
            note::open(&text, k).map_err(|e| bad(format!("{e} (is --public-key the log's key?)")))
        }
        None => note::claimed(&text).map_err(|e| bad(e.to_string())),
    }
}

/// The mirror's entries, read bundle by bundle in leaf order and rebuilt into its
/// checkpoint's root; the first bundle missing, unreadable or malformed ends the read.
async fn entries(dir: &Tiles, cp: &Checkpoint) -> Result<Vec<Hash>, MirrorError> {
    let path = || dir.place().to_owned();
    let mut out = Vec::new();
    let mut tree = TileBuilder::new();
    for id in tiles_between(0, cp.size).filter(|t| t.kind == Kind::Entries) {
        let bytes = dir.read(&id).await?.ok_or_else(|| TilesError::Missing {
            path: path(),
            tile: id.path(),
            size: cp.size,
        })?;
        for e in parse_bundle(&id, &bytes).map_err(TilesError::from)? {
            let hash = Hash::try_from(e).map_err(|_| MirrorError::Entry {
                path: dir.shown(&id.path()),
                leaf: tree.size(),
                len: e.len(),
            })?;
            tree.push(e).map_err(TilesError::from)?;
            out.push(hash);
        }
    }
    if tree.root() != cp.root {
        return Err(MirrorError::Damaged {
            path: path(),
            size: cp.size,
        });
    }
    Ok(out)
}

/// The mirror at `dir` (a directory, or `s3://bucket/prefix` read with `store`): the log's
/// copy in it, its checkpoint (opened with the key in `key_file` when there is one) and its
/// entries, rebuilt into the checkpoint's root.
pub(crate) async fn read(
    dir: &Path,
    key_file: Option<&Path>,
    store: &crate::config::ObjectStoreSettings,
) -> Result<Mirror, MirrorError> {
    let key = match key_file {
        Some(p) => Some(crate::witnessed::signer::load_public_key(p)?),
        None => None,
    };
    let at = match dir.to_str().map(Location::parse) {
        Some(Ok(s3 @ Location::S3 { .. })) => Some(s3),
        _ => None,
    };
    let tiles = match at {
        Some(s3) => {
            // A bucket is not listed: the prefix is the log's copy, or the key names its folder.
            let at = Tiles::new(Store::open(&s3, store).map_err(TilesError::from)?);
            let found = at.log_in(key.as_ref().map(|k| k.name.as_str())).await?;
            found.ok_or_else(|| MirrorError::NoCheckpoint {
                path: format!("{} (pass --public-key)", at.place()),
            })?
        }
        None => Tiles::dir(log_dir(dir, key.as_ref())?),
    };
    let cp = checkpoint(&tiles, key.as_ref()).await?;
    let entries = entries(&tiles, &cp).await?;
    Ok(Mirror {
        root: tiles.place().to_owned(),
        cp,
        signature_checked: key.is_some(),
        entries,
    })
}

/// The database's rows against the mirror's leaves, aligned: what differs, in leaf order.
#[derive(Debug, Default)]
struct Aligned {
    changed: u64,
    deleted: u64,
    inserted: u64,
    /// The first [`NAMED_LEAVES`]: (kind, mirror leaf, database position).
    named: Vec<(Change, u64, usize)>,
}

/// Walks the mirror's leaves and the database's rows side by side: equal hashes match; a
/// mirror leaf the database does not hold, beside a row that is a later leaf, is a deleted row
/// (only the mirror moves on); a row that is no leaf of the mirror, beside a leaf the database
/// holds elsewhere, is an inserted row (only the database moves on); anything else at a leaf
/// is a changed row. The sets of hashes are built only once something differs.
fn align(mirror: &[Hash], rows: &[Hash]) -> Aligned {
    let mut out = Aligned::default();
    let mut sets: Option<(HashSet<&Hash>, HashSet<&Hash>)> = None;
    let (mut i, mut j) = (0usize, 0usize);
    let note = |out: &mut Aligned, kind, leaf: usize, at: usize| {
        if out.named.len() < NAMED_LEAVES {
            out.named.push((kind, leaf as u64, at));
        }
    };
    while i < mirror.len() {
        let Some(row) = rows.get(j) else {
            out.deleted += 1;
            note(&mut out, Change::Deleted, i, j);
            i += 1;
            continue;
        };
        if mirror[i] == *row {
            (i, j) = (i + 1, j + 1);
            continue;
        }
        let (in_db, in_mirror) =
            sets.get_or_insert_with(|| (rows.iter().collect(), mirror.iter().collect()));
        match (in_db.contains(&mirror[i]), in_mirror.contains(row)) {
            (false, true) => {
                out.deleted += 1;
                note(&mut out, Change::Deleted, i, j);
                i += 1;
            }
            (true, false) => {
                out.inserted += 1;
                note(&mut out, Change::Inserted, i, j);
                j += 1;
            }
            _ => {
                out.changed += 1;
                note(&mut out, Change::Changed, i, j);
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    out
}

/// Checks the database against `mirror` (read beforehand with [`read`]).
pub(crate) async fn check(
    store: &Reader,
    trees: &TreeStore,
    mirror: &Mirror,
) -> Result<MirrorReport, MirrorError> {
    let (_, head) = trees.head().await?;
    let head = u64::try_from(head).unwrap_or(0);
    // The database's row hashes in log order. Rows deleted under their links make the read
    // end short (an error once it is done): what was read is compared, the rest is missing.
    let mut rows: Vec<Hash> = Vec::new();
    let read = trees
        .rows_between(0, head, |row| {
            rows.push(Hash::try_from(row).unwrap_or([0; 32]));
        })
        .await;
    match read {
        Ok(()) | Err(crate::db::DbError::Corrupt { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let cp = &mirror.cp;
    let aligned = align(&mirror.entries, &rows);
    let differences = name(store, &mirror.entries, &rows, &aligned.named).await?;
    Ok(MirrorReport {
        dir: mirror.root.clone(),
        origin: cp.origin.clone(),
        mirror_size: cp.size,
        signature_checked: mirror.signature_checked,
        trusts: if mirror.signature_checked {
            "its checkpoint's signature checked with the log's key".into()
        } else {
            "its checkpoint NOT checked with a key (no --public-key): the copy is compared as it describes itself, its entries rebuilt into its own root".into()
        },
        database_size: rows.len() as u64,
        compared: (rows.len() as u64).min(cp.size),
        changed: aligned.changed,
        lost: aligned.deleted,
        inserted: aligned.inserted,
        differences,
    })
}

/// The named differences with the rows the database holds for each hash involved.
async fn name(
    store: &Reader,
    mirror: &[Hash],
    rows: &[Hash],
    named: &[(Change, u64, usize)],
) -> Result<Vec<Difference>, MirrorError> {
    let leaf = |i: u64| usize::try_from(i).ok().and_then(|i| mirror.get(i));
    let before = |j: usize| j.checked_sub(1).and_then(|j| rows.get(j));
    let mut hashes: Vec<Vec<u8>> = Vec::new();
    for &(_, i, j) in named {
        let around = [leaf(i), rows.get(j), before(j)];
        hashes.extend(around.into_iter().flatten().map(|h| h.to_vec()));
    }
    hashes.sort();
    hashes.dedup();
    let found = if hashes.is_empty() {
        Vec::new()
    } else {
        store.rows_by_hash(&hashes).await?
    };
    let row_of = |h: Option<&Hash>| {
        let h = h?;
        found
            .iter()
            .find(|(r, _, _)| r.as_slice() == h.as_slice())
            .map(|(_, stream, seq)| RowName {
                stream: stream.clone(),
                stream_seq: *seq,
            })
    };
    Ok(named
        .iter()
        .map(|&(kind, i, j)| {
            let (m, d) = match kind {
                Change::Changed => (leaf(i), rows.get(j)),
                Change::Deleted => (leaf(i), None),
                Change::Inserted => (None, rows.get(j)),
            };
            let deleted = kind == Change::Deleted;
            Difference {
                leaf_index: i,
                kind,
                mirror_entry: m.map(|h| hex(h)),
                database_entry: d.map(|h| hex(h)),
                mirror_row: row_of(m),
                database_row: row_of(d),
                after_row: deleted.then(|| row_of(before(j))).flatten(),
                before_row: deleted.then(|| row_of(rows.get(j))).flatten(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u8) -> Hash {
        [n; 32]
    }

    fn counts(m: &[u8], d: &[u8]) -> (u64, u64, u64, Vec<(Change, u64, usize)>) {
        let m: Vec<Hash> = m.iter().map(|&n| h(n)).collect();
        let d: Vec<Hash> = d.iter().map(|&n| h(n)).collect();
        let a = align(&m, &d);
        (a.changed, a.deleted, a.inserted, a.named)
    }

    #[test]
    fn each_difference_is_counted_once_and_the_rest_align() {
        use Change::*;
        assert_eq!(counts(&[1, 2, 3], &[1, 2, 3, 4]), (0, 0, 0, vec![]));
        // One row hash changed: one changed, nothing lost.
        assert_eq!(
            counts(&[1, 2, 3], &[1, 9, 3]),
            (1, 0, 0, vec![(Changed, 1, 1)])
        );
        // One row deleted: the rows after it are not counted again.
        let (c, l, i, named) = counts(&[1, 2, 3, 4, 5], &[1, 2, 4, 5]);
        assert_eq!((c, l, i), (0, 1, 0));
        assert_eq!(named, vec![(Deleted, 2, 2)]);
        // Both, and a row inserted.
        let (c, l, i, _) = counts(&[1, 2, 3, 4, 5, 6], &[1, 9, 3, 5, 7, 6]);
        assert_eq!((c, l, i), (1, 1, 1));
        // The database wiped, or cut short.
        assert_eq!(counts(&[1, 2, 3], &[]).1, 3);
        assert_eq!(counts(&[1, 2, 3], &[1]).1, 2);
        // Two rows swapped: both leaves changed.
        assert_eq!(counts(&[1, 2, 3], &[2, 1, 3]).0, 2);
    }
}
