//! The parallel walk: the links are cut into chunks of about [`CHUNK_ROWS`] rows; workers (one
//! connection each) stream a chunk's rows with binary COPY, rehash every row and check each
//! link's row count, batch digest and hash; the chunks' results are put back in log order for
//! the report and for a [`LeafSink`] (the row hashes, link by link, in log order). At most
//! twice as many chunks as workers are in flight, so memory stays bounded.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::TryStreamExt;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use super::erasures::{Erasures, Judged, Place, Tally};
use super::rows::{self, Check};
use super::{Break, VerifyError};
use crate::db::{Ctx, DbError};
use crate::log::read::LinkRow;
use crate::log::Reader;
use crate::row::chain::{batch_digest, stored_link_hash};
use crate::row::copy::{CopyError, Tuples};

/// Rows per chunk, at most (a link is never split).
pub(crate) const CHUNK_ROWS: i64 = 5_000;

/// Receives the row hashes of each link in log order (the leaves of the Merkle tree: each row's
/// hash recomputed from its columns; the stored one where it cannot be recomputed), and beside
/// them the hashes the rows store.
pub(crate) trait LeafSink: Send {
    fn link(&mut self, link: &LinkRow, row_hashes: &[[u8; 32]], stored: &[[u8; 32]]);
}

/// The emptied rows a record accounts for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Emptied {
    /// Erased rows whose hash still holds (row encoding 3).
    pub(crate) hash_holds: i64,
    /// Erased rows whose contents can no longer be checked (row encodings 1 and 2).
    pub(crate) unverifiable: i64,
    /// Rows of leaves a restore brought back (row hashes kept, contents lost).
    pub(crate) restored: i64,
}

impl Emptied {
    fn add(&mut self, o: Emptied) {
        self.hash_holds += o.hash_holds;
        self.unverifiable += o.unverifiable;
        self.restored += o.restored;
    }
}

/// What one chunk found.
struct Chunk {
    rows: i64,
    emptied: Emptied,
    breaks: Vec<Break>,
    /// Per link of the chunk, in order: what its rows gave.
    links: Vec<LinkOut>,
}

/// What the rows of one link gave.
#[derive(Default)]
struct LinkOut {
    /// The link's place in its chunk.
    link: usize,
    /// Its row hashes as recomputed, in log order.
    leaves: Vec<[u8; 32]>,
    /// Its row hashes as stored, in log order.
    stored: Vec<[u8; 32]>,
    /// The rows an erasure by time counts: `(record, row hash)`.
    counted: Vec<(u32, [u8; 32])>,
}

/// Cuts `links` into chunks of whole links of about `target` rows.
pub(crate) fn chunks(links: &[LinkRow], target: i64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut rows) = (0usize, 0i64);
    for (i, l) in links.iter().enumerate() {
        rows += i64::from(l.row_count.max(0));
        if rows >= target {
            out.push(start..i + 1);
            start = i + 1;
            rows = 0;
        }
    }
    if start < links.len() {
        out.push(start..links.len());
    }
    out
}

/// What the walk of the rows found.
pub(crate) struct Walked {
    pub(crate) rows: i64,
    pub(crate) breaks: Vec<Break>,
    /// The emptied rows a record covers.
    pub(crate) emptied: Emptied,
}

/// Rehashes the rows of `links` (with `workers` connections), accepting the erased rows
/// `erasures` covers, and hands each link's row hashes to `sink` in log order. `complete`:
/// `links` starts at the log's first link, so each erasure by time's count and digest are
/// held against every row it covers.
pub(crate) async fn rows(
    store: &Reader,
    links: Arc<Vec<LinkRow>>,
    erasures: Arc<Erasures>,
    workers: usize,
    complete: bool,
    mut sink: Option<&mut dyn LeafSink>,
) -> Result<Walked, VerifyError> {
    let total: i64 = links.iter().map(|l| i64::from(l.row_count.max(0))).sum();
    let workers = workers.max(1);
    let target = (total / (workers as i64 * 4)).clamp(500, CHUNK_ROWS);
    let ranges = Arc::new(chunks(&links, target));
    let next = Arc::new(AtomicUsize::new(0));
    let window = Arc::new(Semaphore::new(workers * 2));
    let (tx, mut rx) =
        mpsc::channel::<(usize, Result<Chunk, VerifyError>, OwnedSemaphorePermit)>(workers * 2);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.min(ranges.len()) {
        let (store, links, ranges, next, window, tx, erasures) = (
            store.clone(),
            links.clone(),
            ranges.clone(),
            next.clone(),
            window.clone(),
            tx.clone(),
            erasures.clone(),
        );
        tasks.spawn(async move {
            loop {
                // The permit first: chunks are handed out in order, so the earliest one not yet
                // delivered is always being worked on.
                let Ok(permit) = window.clone().acquire_owned().await else {
                    return;
                };
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(range) = ranges.get(i) else {
                    return;
                };
                let res = chunk(&store, &links[range.clone()], &erasures).await;
                if tx.send((i, res, permit)).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    let (mut rows, mut breaks, mut emptied) = (0i64, Vec::new(), Emptied::default());
    let records = erasures.records.len() + erasures.restores.len();
    let mut tally = Tally::new(&links, records, complete);
    let mut pending = BTreeMap::new();
    let mut expect = 0usize;
    while let Some((i, res, permit)) = rx.recv().await {
        pending.insert(i, (res?, permit));
        while let Some((c, permit)) = pending.remove(&expect) {
            let range = ranges[expect].clone();
            rows += c.rows;
            breaks.extend(c.breaks);
            emptied.add(c.emptied);
            for w in c.links {
                let l = &links[range.start + w.link];
                if let Some(s) = sink.as_deref_mut() {
                    s.link(l, &w.leaves, &w.stored);
                }
                tally.link(l.link_seq, w.counted);
            }
            drop(permit);
            expect += 1;
        }
    }
    while tasks.join_next().await.is_some() {}
    breaks.extend(tally.finish(&erasures));
    Ok(Walked {
        rows,
        breaks,
        emptied,
    })
}

/// The state of the link being read.
struct Open {
    idx: usize,
    out: LinkOut,
    stored: Vec<[u8; 32]>,
}

/// Streams and checks the rows of `links` (contiguous, in order).
async fn chunk(
    store: &Reader,
    links: &[LinkRow],
    erasures: &Erasures,
) -> Result<Chunk, VerifyError> {
    let (Some(first), Some(last)) = (links.first(), links.last()) else {
        return Ok(Chunk {
            rows: 0,
            emptied: Emptied::default(),
            breaks: Vec::new(),
            links: Vec::new(),
        });
    };
    let lo = links.iter().map(|l| l.batch_id).min().unwrap_or(0);
    let hi = links.iter().map(|l| l.batch_id).max().unwrap_or(0);
    let place = || format!("links {}..{}", first.link_seq, last.link_seq);
    let mut stream = store
        .link_rows(first.link_seq, last.link_seq, (lo, hi))
        .await?;
    let mut t = Tuples::new();
    let mut out = Chunk {
        rows: 0,
        emptied: Emptied::default(),
        breaks: Vec::new(),
        links: Vec::with_capacity(links.len()),
    };
    let mut open = Open {
        idx: 0,
        out: LinkOut {
            leaves: Vec::with_capacity(row_cap(&links[0])),
            ..LinkOut::default()
        },
        stored: Vec::with_capacity(row_cap(&links[0])),
    };
    let bad = |e: CopyError| VerifyError::Copy {
        place: place(),
        source: e,
    };
    while let Some(bytes) = stream.try_next().await.ctx("stream rows with COPY")? {
        t.push(&bytes);
        while let Some((link_seq, row)) = t.next_row().map_err(bad)? {
            while links[open.idx].link_seq < link_seq && open.idx + 1 < links.len() {
                close(&mut open, links, &mut out);
            }
            out.rows += 1;
            let stored: [u8; 32] = row.row_hash.try_into().unwrap_or([0; 32]);
            open.stored.push(stored);
            let check = rows::check(&row);
            let place = Place {
                stream: row.stream,
                stream_seq: row.stream_seq,
                published_us: row.published_at_us,
                row_hash: row.row_hash,
                link: link_seq,
                emptied: matches!(check, Check::Erased { .. }),
                leaf: leaf_index(&links[open.idx], open.out.leaves.len()),
            };
            let judged = erasures.judge(&place, &mut open.out.counted);
            let leaves = &mut open.out.leaves;
            let why: std::borrow::Cow<'static, str> = match check {
                Check::Ok(h) => {
                    leaves.push(h);
                    continue;
                }
                Check::PayloadDiffers { hash, .. } => {
                    leaves.push(hash);
                    // Ask PostgreSQL itself before calling it an edit: never a false alarm.
                    let text = rows::payload_of(row.raw).unwrap_or_default();
                    if store.jsonb_equal(text, row.payload).await? {
                        continue;
                    }
                    "payload column does not match the raw message (payload edited)".into()
                }
                Check::Erased { hash, verified } => {
                    leaves.push(hash);
                    match emptied(judged, verified, row.stream, &mut out) {
                        Some(why) => why,
                        None => continue,
                    }
                }
                Check::Broken(why) => {
                    leaves.push(rows::recomputed(&row).unwrap_or(stored));
                    why.into()
                }
            };
            out.breaks.push(Break {
                link: Some(link_seq),
                batch: Some(row.batch_id),
                stream: Some(row.stream.to_owned()),
                stream_seq: Some(row.stream_seq),
                why: format!(
                    "row stream={} stream_seq={} (batch {}, link {link_seq}): {why}",
                    row.stream, row.stream_seq, row.batch_id
                ),
            });
        }
    }
    t.finish().map_err(bad)?;
    while out.links.len() < links.len() {
        close(&mut open, links, &mut out);
    }
    Ok(out)
}

/// The leaf index of the row at `position` in `link`, when the link has a tree.
fn leaf_index(link: &LinkRow, position: usize) -> Option<u64> {
    let size = u64::try_from(link.tree_size?).ok()?;
    let first = size.checked_sub(u64::try_from(link.row_count).ok()?)?;
    Some(first + position as u64)
}

/// What the records make of an emptied row: counted (`None`), or why it is a break.
fn emptied(
    judged: Judged,
    verified: bool,
    stream: &str,
    out: &mut Chunk,
) -> Option<std::borrow::Cow<'static, str>> {
    match judged {
        Judged::Covered if verified => {
            out.emptied.hash_holds += 1;
            None
        }
        Judged::Covered => {
            out.emptied.unverifiable += 1;
            None
        }
        Judged::Restored => {
            out.emptied.restored += 1;
            None
        }
        Judged::EmptiedAfter(n) => Some(format!("personal data removed after erasure {n} was recorded, which covers only the rows recorded before it (row edited)").into()),
        Judged::Uncovered if stream == crate::row::restore::LEAVES => Some(
            "a restored leaf's row that no restore record placed after it covers at this leaf index (row inserted or moved)".into(),
        ),
        Judged::Uncovered => {
            Some("personal data removed without a recorded erasure (row edited)".into())
        }
    }
}

/// The hash of a broken row as recomputed from its columns, when it can be.
fn row_cap(l: &LinkRow) -> usize {
    usize::try_from(l.row_count).unwrap_or(0).min(100_000)
}

/// Ends the open link: its row count, digest (over the stored row hashes, which the rows were
/// checked against) and hash; opens the next.
fn close(open: &mut Open, links: &[LinkRow], out: &mut Chunk) {
    let link = &links[open.idx];
    let LinkRow {
        link_seq,
        batch_id,
        row_count,
        ..
    } = *link;
    let n = i32::try_from(open.stored.len()).unwrap_or(i32::MAX);
    let why = if n != row_count {
        Some(format!("batch {batch_id} (link {link_seq}): {n} rows found, the link covers {row_count} (rows deleted or added)"))
    } else if batch_digest(&open.stored)[..] != link.batch_digest[..] {
        Some(format!("batch {batch_id} (link {link_seq}): row hashes do not match the link's digest (row hash edited)"))
    } else if stored_link_hash(
        link.version,
        &link.prev_hash,
        link_seq,
        batch_id,
        row_count,
        &link.batch_digest,
        link.tree_size.zip(link.tree_root.as_deref()),
    )
    .is_none_or(|h| h[..] != link.hash[..])
    {
        Some(format!(
            "link {link_seq}: hash does not match its contents (link edited)"
        ))
    } else {
        None
    };
    if let Some(why) = why {
        out.breaks.push(Break {
            link: Some(link_seq),
            batch: Some(batch_id),
            stream: None,
            stream_seq: None,
            why,
        });
    }
    let mut done = std::mem::take(&mut open.out);
    done.link = open.idx;
    done.stored = std::mem::take(&mut open.stored);
    out.links.push(done);
    open.idx += 1;
    if let Some(next) = links.get(open.idx) {
        open.out.leaves.reserve(row_cap(next));
        open.stored.reserve(row_cap(next));
    }
}

/// Only a database error or a stream that is not binary COPY stops the walk.
impl From<DbError> for VerifyError {
    fn from(e: DbError) -> Self {
        VerifyError::Db(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(seq: i64, rows: i32) -> LinkRow {
        LinkRow {
            link_seq: seq,
            batch_id: seq,
            row_count: rows,
            batch_digest: Vec::new(),
            prev_hash: Vec::new(),
            hash: Vec::new(),
            version: 2,
            tree_size: None,
            tree_root: None,
        }
    }

    #[test]
    fn chunks_hold_whole_links_and_cover_all() {
        let links: Vec<LinkRow> = (1..=10).map(|i| link(i, 3)).collect();
        let c = chunks(&links, 7);
        assert_eq!(c, vec![0..3, 3..6, 6..9, 9..10]);
        assert_eq!(chunks(&links[..0], 7), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(chunks(&links, 1_000), vec![0..10]);
    }
}
