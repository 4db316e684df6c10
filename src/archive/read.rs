//! Reading an archive directory back: its manifest, each partition file checked against the
//! manifest's digest while its lines are parsed, and one row found by its place (what `prove
//! --archive` serves). Files only: no database.

use std::io::{BufRead, BufReader};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::line::{parse_line, ArchivedRow, LineError};
use super::manifest::{Manifest, PartitionFile};
use super::write::{read_manifest, MANIFEST};
use super::ArchiveError;
use crate::row::hex;

/// The manifest of an archive directory; an error when there is none.
pub(crate) fn manifest(dir: &Path) -> Result<Manifest, ArchiveError> {
    read_manifest(dir)?.ok_or_else(|| {
        ArchiveError::Io(
            dir.join(MANIFEST),
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no manifest: pass the directory `event-audit archive --out` wrote",
            ),
        )
    })
}

/// What reading one partition file found, besides its rows.
#[derive(Debug, Default)]
pub(crate) struct FileRead {
    /// SHA-256 of the file's bytes, lowercase hex.
    pub(crate) sha256: String,
    /// SHA-256 of the rows' hashes as the lines state them, in file order.
    pub(crate) row_hashes_sha256: String,
    pub(crate) rows: u64,
    /// Lines that did not parse: their number (from 1) and why.
    pub(crate) bad_lines: Vec<(u64, LineError)>,
}

/// Reads `entry`'s file in `dir`, handing each row to `each` (with its line number); stops
/// early when `each` returns false.
pub(crate) fn partition(
    dir: &Path,
    entry: &PartitionFile,
    mut each: impl FnMut(u64, &ArchivedRow) -> bool,
) -> Result<FileRead, ArchiveError> {
    let path = dir.join(&entry.file);
    let io = |e: std::io::Error| ArchiveError::Io(path.clone(), e);
    let mut r = BufReader::with_capacity(1 << 20, std::fs::File::open(&path).map_err(io)?);
    let (mut file_sha, mut hashes_sha) = (Sha256::new(), Sha256::new());
    let mut out = FileRead::default();
    let mut line = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        n += 1;
        file_sha.update(&line);
        match parse_line(&line) {
            Ok(row) => {
                out.rows += 1;
                hashes_sha.update(row.view().row_hash);
                if !each(n, &row) {
                    return Ok(out);
                }
            }
            Err(e) => out.bad_lines.push((n, e)),
        }
    }
    out.sha256 = hex(&file_sha.finalize());
    out.row_hashes_sha256 = hex(&hashes_sha.finalize());
    Ok(out)
}

/// The archived row `stream`/`seq` published at `published_us`, from the partition file whose
/// range holds that time.
pub(crate) fn find(
    dir: &Path,
    stream: &str,
    seq: i64,
    published_us: i64,
) -> Result<Option<ArchivedRow>, ArchiveError> {
    let m = manifest(dir)?;
    let us = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .map(|d| d.timestamp_micros())
            .ok()
    };
    for entry in &m.partitions {
        let (Some(from), Some(to)) = (us(&entry.published_from), us(&entry.published_to)) else {
            continue;
        };
        if published_us < from || published_us >= to {
            continue;
        }
        let mut found = None;
        partition(dir, entry, |_, row| {
            let v = row.view();
            if v.stream == stream && v.stream_seq == seq {
                found = Some(row.clone());
                return false;
            }
            true
        })?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}
