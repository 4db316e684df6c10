//! `verify --mirror DIR`: the database against an auditor's copy of the log (`event-audit
//! mirror`'s directory, or any copy of the log's tiles). The mirror's entries are rebuilt into
//! its checkpoint's root first (a copy that does not hold together is not evidence); then every
//! row hash the database holds, in log order, is compared with the mirror's entry at its leaf
//! index, and the leaves the mirror holds beyond the database's tree are lost rows. What
//! differs is named: the leaf index, both hashes, and the rows they are in the database, where
//! the database still holds them. Needs no witness and no NATS.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::row::hex;
use crate::tlog::note::{self, Checkpoint, Note, PublicKey};
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::{parse_bundle, tiles_between, Kind};
use crate::verify::store::VerifyStore;
use crate::witnessed::tiles::{TileDir, TilesError};
use crate::witnessed::tree::TreeStore;

/// How many differing leaves the report names (all are counted).
pub const NAMED_LEAVES: usize = 20;

/// Why the mirror could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("{path}: no checkpoint (a mirror's directory holds one per log, under the hex SHA-256 of the log's origin; pass the directory `event-audit mirror --dir` wrote, and --public-key to pick the log)")]
    NoCheckpoint { path: String },
    #[error("{path}: {why}")]
    Checkpoint { path: String, why: String },
    #[error("{path}: holds several logs ({count}); pass --public-key to pick this log's")]
    Several { path: String, count: usize },
    #[error(transparent)]
    Tiles(#[from] TilesError),
    #[error("{path}: the entries do not make the mirror's checkpoint root at size {size}: the copy is damaged; pull it again with `event-audit mirror`")]
    Damaged { path: String, size: u64 },
    #[error("public key {path}: {why}")]
    Key { path: String, why: String },
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
}

/// A row as the database holds it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RowName {
    pub stream: String,
    pub stream_seq: i64,
}

/// One leaf where the database and the mirror differ.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub leaf_index: u64,
    /// The mirror's entry (hex).
    pub mirror_entry: String,
    /// The database's row hash at that leaf (hex), `None` past the database's tree.
    pub database_entry: Option<String>,
    /// Where the database holds the mirror's entry now, if anywhere.
    pub mirror_row: Option<RowName>,
    /// The row the database has at that leaf.
    pub database_row: Option<RowName>,
}

/// What `verify --mirror` found.
#[derive(Debug, Clone, Serialize)]
pub struct MirrorReport {
    pub dir: String,
    pub origin: String,
    /// The mirror's checkpoint size.
    pub mirror_size: u64,
    /// Whether the mirror's checkpoint was checked with the log's key.
    pub signature_checked: bool,
    /// The database's tree size.
    pub database_size: u64,
    /// Leaves compared (the smaller of the two sizes).
    pub compared: u64,
    /// Leaves (of those compared) whose hashes differ.
    pub changed: u64,
    /// Leaves the mirror holds whose hash no row of the database has: rows lost.
    pub lost: u64,
    /// The first differing leaves, named.
    pub differences: Vec<Difference>,
}

impl MirrorReport {
    pub fn holds(&self) -> bool {
        self.changed == 0 && self.lost == 0
    }

    /// The one-line summary.
    pub fn line(&self) -> String {
        if self.holds() {
            format!(
                "mirror holds: the database's first {} leaves are the mirror's ({} at size {})",
                self.compared, self.origin, self.mirror_size
            )
        } else {
            format!(
                "mirror DIFFERS: {} leaves changed and {} lost of the mirror's {} (database tree: {}); first at leaf {}",
                self.changed,
                self.lost,
                self.mirror_size,
                self.database_size,
                self.differences.first().map_or(0, |d| d.leaf_index)
            )
        }
    }
}

/// The log's directory in `dir`: `dir` itself when it holds a checkpoint, else the subdirectory
/// of the key's origin, else the one subdirectory holding a checkpoint.
fn log_dir(dir: &Path, key: Option<&PublicKey>) -> Result<PathBuf, MirrorError> {
    if dir.join("checkpoint").exists() {
        return Ok(dir.to_owned());
    }
    if let Some(k) = key {
        let sub = dir.join(crate::witnessed::tiles::origin_dir(&k.name));
        if sub.join("checkpoint").exists() {
            return Ok(sub);
        }
    } else if let Ok(entries) = std::fs::read_dir(dir) {
        let subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("checkpoint").exists())
            .collect();
        match subs.len() {
            1 => return Ok(subs[0].clone()),
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

/// The mirror's checkpoint, opened with the key when there is one.
fn checkpoint(dir: &TileDir, key: Option<&PublicKey>) -> Result<Checkpoint, MirrorError> {
    let path = dir.root().display().to_string();
    let bad = |why: String| MirrorError::Checkpoint {
        path: path.clone(),
        why,
    };
    let text = dir
        .checkpoint()?
        .ok_or_else(|| MirrorError::NoCheckpoint { path: path.clone() })?;
    match key {
        Some(k) => note::open(&text, k).map_err(|e| bad(e.to_string())),
        None => Note::parse(&text)
            .and_then(|n| Checkpoint::parse_body(n.text))
            .map_err(|e| bad(e.to_string())),
    }
}

/// The mirror's entries, rebuilt into its checkpoint's root.
fn entries(dir: &TileDir, cp: &Checkpoint) -> Result<Vec<Vec<u8>>, MirrorError> {
    let mut out = Vec::with_capacity(usize::try_from(cp.size).unwrap_or(0));
    let mut tree = TileBuilder::new();
    for id in tiles_between(0, cp.size)
        .into_iter()
        .filter(|t| t.kind == Kind::Entries)
    {
        let bytes = dir.read(&id)?.ok_or_else(|| TilesError::Missing {
            path: dir.root().display().to_string(),
            tile: id.path(),
            size: cp.size,
        })?;
        for e in parse_bundle(&id, &bytes).map_err(TilesError::from)? {
            tree.push(e).map_err(TilesError::from)?;
            out.push(e.to_vec());
        }
    }
    if tree.root() != cp.root {
        return Err(MirrorError::Damaged {
            path: dir.root().display().to_string(),
            size: cp.size,
        });
    }
    Ok(out)
}

/// The mirror in `dir`: the log's directory in it, its checkpoint (opened with the key in
/// `key_file` when there is one) and its entries, rebuilt into the checkpoint's root.
fn read(
    dir: &Path,
    key_file: Option<&Path>,
) -> Result<(PathBuf, Checkpoint, Vec<Vec<u8>>), MirrorError> {
    let key =
        match key_file {
            Some(p) => Some(crate::witnessed::signer::load_public_key(p).map_err(|e| {
                MirrorError::Key {
                    path: p.display().to_string(),
                    why: e.to_string(),
                }
            })?),
            None => None,
        };
    let root = log_dir(dir, key.as_ref())?;
    let tiles = TileDir::new(root.clone());
    let cp = checkpoint(&tiles, key.as_ref())?;
    let mirror = entries(&tiles, &cp)?;
    Ok((root, cp, mirror))
}

/// The mirror's entries in leaf order (what `verify --archive` checks archived rows against).
pub(crate) fn read_entries(
    dir: &Path,
    key_file: Option<&Path>,
) -> Result<Vec<Vec<u8>>, MirrorError> {
    read(dir, key_file).map(|(_, _, entries)| entries)
}

/// Checks the database against the mirror in `dir`.
pub(crate) async fn check(
    store: &VerifyStore,
    trees: &TreeStore,
    dir: &Path,
    key_file: Option<&Path>,
) -> Result<MirrorReport, MirrorError> {
    let (root, cp, mirror) = read(dir, key_file)?;
    let (_, head) = trees.head().await?;
    let head = u64::try_from(head).unwrap_or(0);
    // The database's row hashes in log order. Rows deleted under their links make the read
    // end short (an error once it is done): what was read is compared, the rest is missing.
    let mut rows: Vec<[u8; 32]> = Vec::new();
    let read = trees
        .rows_between(0, head, |row| {
            rows.push(<[u8; 32]>::try_from(row).unwrap_or([0; 32]));
        })
        .await;
    match read {
        Ok(()) => {}
        Err(crate::db::DbError::Corrupt { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let database_size = rows.len() as u64;
    let compared = database_size.min(cp.size);
    let held: std::collections::HashSet<&[u8]> = rows.iter().map(|r| &r[..]).collect();
    let changed: Vec<u64> = (0..compared)
        .filter(|&i| mirror[i as usize] != rows[i as usize])
        .collect();
    let lost: Vec<u64> = (0..cp.size)
        .filter(|&i| !held.contains(mirror[i as usize].as_slice()))
        .collect();
    // Lost leaves first (the rows the database no longer holds), then changed ones.
    let mut named: Vec<u64> = lost.iter().chain(&changed).copied().collect();
    named.dedup();
    named.truncate(NAMED_LEAVES);
    named.sort_unstable();
    named.dedup();
    let leaves: Vec<(u64, Option<Vec<u8>>)> = named
        .into_iter()
        .map(|i| (i, rows.get(i as usize).map(|r| r.to_vec())))
        .collect();
    let differences = name(store, &mirror, &leaves).await?;
    Ok(MirrorReport {
        dir: root.display().to_string(),
        origin: cp.origin.clone(),
        mirror_size: cp.size,
        signature_checked: key_file.is_some(),
        database_size,
        compared,
        changed: changed.len() as u64,
        lost: lost.len() as u64,
        differences,
    })
}

/// The differing leaves with the rows the database holds for either hash.
async fn name(
    store: &VerifyStore,
    mirror: &[Vec<u8>],
    leaves: &[(u64, Option<Vec<u8>>)],
) -> Result<Vec<Difference>, MirrorError> {
    let mut hashes: Vec<Vec<u8>> = Vec::new();
    for (i, db) in leaves {
        hashes.extend(mirror.get(*i as usize).cloned());
        hashes.extend(db.clone());
    }
    let rows = if hashes.is_empty() {
        Vec::new()
    } else {
        store.rows_by_hash(&hashes).await?
    };
    let row_of = |h: &[u8]| {
        rows.iter()
            .find(|(r, _, _)| r.as_slice() == h)
            .map(|(_, stream, seq)| RowName {
                stream: stream.clone(),
                stream_seq: *seq,
            })
    };
    Ok(leaves
        .iter()
        .map(|(i, db)| {
            let m: &[u8] = mirror.get(*i as usize).map_or(&[], Vec::as_slice);
            Difference {
                leaf_index: *i,
                mirror_entry: hex(m),
                database_entry: db.as_deref().map(hex),
                mirror_row: row_of(m),
                database_row: db.as_deref().and_then(row_of),
            }
        })
        .collect())
}
