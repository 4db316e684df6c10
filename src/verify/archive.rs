//! `verify --archive DIR`: an archive directory (`event-audit archive --out`) against the log.
//! Every file must have the manifest's digest; every line must parse; every archived row's
//! columns must make its row hash again (for a version 3 row, through its commitment), and
//! that hash must be the one the database keeps for the row at that place (the hash the
//! chain, the tree and the witnessed checkpoints cover, which the rest of `verify` checks); a
//! pruned partition's archive must be the file its prune record names; with a mirror, each row's
//! hash must be the mirror's entry at its leaf index. What differs is named by file, line and
//! row, never by value.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::rows::{self, Check};
use crate::archive::{read, ArchiveError};
use crate::db::DbError;
use crate::log::Reader;
use crate::row::erasure::Erasure;
use crate::row::hex;

/// How many problems the report names (all are counted).
pub(crate) const NAMED: usize = 20;

/// What the archive check found.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct ArchiveReport {
    pub dir: PathBuf,
    pub files: usize,
    /// Rows read from the files.
    pub rows: u64,
    /// Of them, rows whose partition a recorded prune dropped from the database.
    pub rows_pruned: u64,
    /// With a mirror (`--mirror`): the rows whose hash is the mirror's entry at their leaf
    /// index, and the rows past the mirror's checkpoint (not yet in it).
    pub rows_in_mirror: Option<u64>,
    pub rows_past_mirror: Option<u64>,
    /// Problems found (each named up to [`NAMED`]).
    pub problems: u64,
    pub named: Vec<String>,
}

impl ArchiveReport {
    pub(crate) fn holds(&self) -> bool {
        self.problems == 0
    }

    fn problem(&mut self, why: String) {
        self.problems += 1;
        if self.named.len() < NAMED {
            self.named.push(why);
        }
    }

    pub(crate) fn line(&self) -> String {
        if self.holds() {
            format!(
                "archive {}: {} files, {} rows, every row makes its row hash and matches the log ({} of them pruned from the database){}",
                self.dir.display(),
                self.files,
                self.rows,
                self.rows_pruned,
                match (self.rows_in_mirror, self.rows_past_mirror) {
                    (Some(n), Some(past)) => format!(
                        "; {n} at their leaf index in the mirror's tiles, {past} past its checkpoint"
                    ),
                    _ => String::new(),
                }
            )
        } else {
            format!(
                "archive {}: {} problem(s) in {} rows of {} files; first: {}",
                self.dir.display(),
                self.problems,
                self.rows,
                self.files,
                self.named.first().map(String::as_str).unwrap_or("")
            )
        }
    }
}

/// The prunes the log records, by partition: the archive file's SHA-256 and the rows' digest.
async fn prunes(store: &Reader) -> Result<HashMap<String, (String, String)>, DbError> {
    let mut out = HashMap::new();
    for r in store.erasure_rows().await?.iter().filter(|r| r.linked) {
        if let Some(e) = Erasure::parse(&r.raw) {
            if let (Some(a), Some(p)) = (e.archive, e.published) {
                out.insert(a.partition, (a.file_sha256, p.row_hashes_sha256));
            }
        }
    }
    Ok(out)
}

/// Checks the archive in `dir` against the log (see the module).
/// With `mirror` (a mirror's entries in leaf order), each archived row's hash must also be the
/// mirror's entry at the row's leaf index.
pub(crate) async fn check(
    store: &Reader,
    dir: &Path,
    mirror: Option<&[crate::tlog::merkle::Hash]>,
) -> Result<ArchiveReport, ArchiveError> {
    let manifest = read::manifest(dir)?;
    let prunes = prunes(store).await?;
    let mut rep = ArchiveReport {
        dir: dir.to_owned(),
        files: manifest.partitions.len(),
        rows_in_mirror: mirror.map(|_| 0),
        rows_past_mirror: mirror.map(|_| 0),
        ..ArchiveReport::default()
    };
    let (mut in_mirror, mut past_mirror) = (0u64, 0u64);
    for entry in &manifest.partitions {
        let db = store
            .range_hashes(&entry.published_from, &entry.published_to)
            .await?;
        let pruned = prunes.get(&entry.partition);
        let mut found = Vec::new();
        let read = read::partition(dir, entry, |n, row| {
            let v = row.view();
            let at = format!(
                "{} line {n} (stream={} stream_seq={})",
                entry.file, v.stream, v.stream_seq
            );
            let hash = match rows::check(&v) {
                Check::Ok(h) | Check::Erased { hash: h, .. } => Some(h),
                Check::PayloadDiffers { .. } => {
                    found.push(format!(
                        "{at}: its payload is not the payload its raw message carries (row edited)"
                    ));
                    None
                }
                Check::Broken(why) => {
                    found.push(format!("{at}: {why}"));
                    None
                }
            };
            if let Some(h) = hash {
                if h[..] != *v.row_hash {
                    found.push(format!(
                        "{at}: its columns do not make its row hash (row edited)"
                    ));
                }
            }
            if let Some(m) = mirror {
                let leaf = row.leaf_index();
                match usize::try_from(leaf).ok().and_then(|i| m.get(i)) {
                    Some(e) if e[..] == *v.row_hash => in_mirror += 1,
                    Some(e) => found.push(format!(
                        "{at}: the mirror's entry at leaf {leaf} is {}, the archive's row hash {}",
                        hex(e),
                        hex(v.row_hash)
                    )),
                    None => past_mirror += 1,
                }
            }
            match db.get(&(v.stream.to_owned(), v.stream_seq)) {
                Some(kept) if kept[..] == *v.row_hash => {}
                Some(kept) => found.push(format!(
                    "{at}: the log has row hash {} there, the archive {}",
                    hex(kept),
                    hex(v.row_hash)
                )),
                None => found.push(format!("{at}: the log has no such row")),
            }
            true
        })?;
        rep.rows += read.rows;
        if pruned.is_some() {
            rep.rows_pruned += read.rows;
        }
        for why in found {
            rep.problem(why);
        }
        for (n, e) in &read.bad_lines {
            rep.problem(format!("{} line {n}: {e}", entry.file));
        }
        if read.sha256 != entry.sha256 {
            rep.problem(format!(
                "{}: its SHA-256 is not the manifest's (the file changed)",
                entry.file
            ));
        }
        if read.rows != entry.rows || read.row_hashes_sha256 != entry.row_hashes_sha256 {
            rep.problem(format!(
                "{}: {} rows whose hashes are not the ones the manifest states ({} rows)",
                entry.file, read.rows, entry.rows
            ));
        }
        if let Some((file_sha, hashes_sha)) = pruned {
            if *file_sha != read.sha256 || *hashes_sha != read.row_hashes_sha256 {
                rep.problem(format!(
                    "{}: not the archive the log's prune record of partition {} names",
                    entry.file, entry.partition
                ));
            }
        }
    }
    if mirror.is_some() {
        (rep.rows_in_mirror, rep.rows_past_mirror) = (Some(in_mirror), Some(past_mirror));
    }
    Ok(rep)
}
