//! Reading an archive directory back: its manifest, each partition file checked against the
//! manifest's digest while its lines are parsed, and one row found by its place (what `prove
//! --archive` serves). Files only: no database. An archive is handed to auditors by the log's
//! operators, who choose its paths and bytes, so every read is bounded: the manifest and each
//! file it names are regular files inside the archive's folder (a name with a folder, `..` or
//! an absolute path, a symlink leading out, a device or a FIFO is refused before anything is
//! read), the manifest at most [`MAX_MANIFEST`] bytes, each line at most [`MAX_LINE`].

use std::io::{BufRead, BufReader};
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::line::{parse_line, ArchivedRow, LineError};
use super::manifest::{Manifest, PartitionFile};
use super::write::MANIFEST;
use super::ArchiveError;
use crate::files::bounded;
use crate::row::hex;

/// The largest manifest read: an entry of about 400 bytes a partition, one partition a month.
pub(crate) const MAX_MANIFEST: u64 = 16 << 20;

/// The longest line read: a row whose raw message is as large as a NATS message can be (64
/// MiB, the server's own ceiling), written as hex, beside its payload as JSON.
pub(crate) const MAX_LINE: usize = 256 << 20;

fn refused(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why)
}

/// The manifest of an archive directory; an error when there is none.
pub(crate) fn manifest(dir: &Path) -> Result<Manifest, ArchiveError> {
    let path = dir.join(MANIFEST);
    let bytes = bounded::read_beneath(dir, Path::new(MANIFEST), MAX_MANIFEST, "manifest")
        .map_err(|e| ArchiveError::Io(path.clone(), e))?
        .ok_or_else(|| {
            ArchiveError::Io(
                path.clone(),
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no manifest: pass the directory `event-audit archive --out` wrote",
                ),
            )
        })?;
    let m = Manifest::parse(&bytes).map_err(|e| ArchiveError::Manifest(path.clone(), e))?;
    disjoint(&m).map_err(|why| ArchiveError::Io(path, refused(why)))?;
    Ok(m)
}

/// Each partition's range in order, none overlapping another, each file named once: what the
/// archive writes (a month a file), and what bounds the work of reading an archive to one
/// pass over its files and one over the log's rows.
fn disjoint(m: &Manifest) -> Result<(), String> {
    let us = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .map(|d| d.timestamp_micros())
            .ok()
    };
    let mut ranges = Vec::with_capacity(m.partitions.len());
    let mut files = std::collections::HashSet::new();
    for p in &m.partitions {
        let (Some(from), Some(to)) = (us(&p.published_from), us(&p.published_to)) else {
            return Err(format!(
                "partition {}: its range is not two RFC 3339 times",
                p.partition
            ));
        };
        if from >= to {
            return Err(format!(
                "partition {}: its range ends before it starts",
                p.partition
            ));
        }
        if !files.insert(p.file.as_str()) {
            return Err(format!(
                "partition {}: its file {:?} is named twice",
                p.partition, p.file
            ));
        }
        ranges.push((from, to, p.partition.as_str()));
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(format!(
                "partitions {} and {} overlap in time (an archive holds each month once)",
                w[0].2, w[1].2
            ));
        }
    }
    Ok(())
}

/// Opens the file `entry` names in `dir`: a plain file name, a regular file inside the folder.
fn open(dir: &Path, entry: &PartitionFile) -> Result<std::fs::File, ArchiveError> {
    let rel = Path::new(&entry.file);
    let mut parts = rel.components();
    let plain = matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none();
    let io = |e| ArchiveError::Io(dir.join(MANIFEST), e);
    if !plain {
        return Err(io(refused(format!(
            "partition {}: its file {:?} is not a file name inside the archive's folder (a folder, `..` or an absolute path): refused",
            entry.partition, entry.file
        ))));
    }
    let (f, _) = bounded::open_beneath(dir, rel, u64::MAX, "archive file")
        .map_err(|e| ArchiveError::Io(dir.join(rel), e))?;
    Ok(f)
}

/// The manifest of the archive in `dir`, and every file it names opened once (each a plain
/// name, a regular file inside the folder): what `verify --archive` refuses before it reads
/// the database.
pub(crate) fn preflight(dir: &Path) -> Result<Manifest, ArchiveError> {
    let m = manifest(dir)?;
    for entry in &m.partitions {
        open(dir, entry)?;
    }
    Ok(m)
}

/// Reads one line (up to and with its `\n`) into `line`, at most `cap` bytes; 0 at the end.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<usize> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > cap {
            return Err(refused(format!(
                "a line longer than {cap} bytes, longer than any row's line can be: refused"
            )));
        }
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            return Ok(line.len());
        }
    }
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
    let mut r = BufReader::with_capacity(1 << 20, open(dir, entry)?);
    let (mut file_sha, mut hashes_sha) = (Sha256::new(), Sha256::new());
    let mut out = FileRead::default();
    let mut line = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        line.clear();
        let read = read_line(&mut r, &mut line, MAX_LINE).map_err(|e| {
            let at = format!("line {}: {e}", n + 1);
            ArchiveError::Io(path.clone(), refused(at))
        })?;
        if read == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_read_up_to_its_bound_and_no_further() {
        let mut r = BufReader::with_capacity(4, &b"ab\ncdefgh\n\nxyz"[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut r, &mut line, 8).unwrap(), 3);
        assert_eq!(line, b"ab\n");
        line.clear();
        let e = read_line(&mut r, &mut line, 6).unwrap_err();
        assert!(e.to_string().contains("longer than 6 bytes"), "{e}");
        assert!(line.len() <= 6, "held no more than the bound");
        let mut r = BufReader::with_capacity(4, &b"\nxyz"[..]);
        line.clear();
        assert_eq!(read_line(&mut r, &mut line, 8).unwrap(), 1);
        line.clear();
        assert_eq!(
            read_line(&mut r, &mut line, 8).unwrap(),
            3,
            "a last line without \\n"
        );
        line.clear();
        assert_eq!(read_line(&mut r, &mut line, 8).unwrap(), 0);
    }

    fn entry(partition: &str, from: &str, to: &str, file: &str) -> PartitionFile {
        PartitionFile {
            partition: partition.into(),
            published_from: from.into(),
            published_to: to.into(),
            rows: 0,
            file: file.into(),
            sha256: "0".repeat(64),
            row_hashes_sha256: "0".repeat(64),
            first_leaf: None,
            last_leaf: None,
        }
    }

    #[test]
    fn partitions_are_read_once_each() {
        let (jan, feb, mar) = (
            "2026-01-01T00:00:00Z",
            "2026-02-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
        );
        let m = |partitions| Manifest {
            format: super::super::manifest::FORMAT.into(),
            origin: None,
            created_at: jan.into(),
            checkpoint: None,
            partitions,
        };
        let ok = m(vec![entry("b", feb, mar, "b"), entry("a", jan, feb, "a")]);
        assert!(disjoint(&ok).is_ok());
        for (bad, says) in [
            (
                m(vec![entry("a", jan, mar, "a"), entry("b", feb, mar, "b")]),
                "overlap",
            ),
            (
                m(vec![entry("a", jan, feb, "x"), entry("b", feb, mar, "x")]),
                "named twice",
            ),
            (m(vec![entry("a", feb, jan, "a")]), "ends before"),
            (m(vec![entry("a", "soon", jan, "a")]), "RFC 3339"),
        ] {
            let e = disjoint(&bad).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
