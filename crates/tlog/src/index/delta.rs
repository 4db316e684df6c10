//! An account index update as bytes (`event-audit-account-index/1` delta): what one update
//! added, the leaves of the log it indexed with each one's labels, and the row of the log that
//! records the update (its leaf index, its leaf data, whose SHA-256 is the row hash the log's
//! tiles hold at that leaf, and the opening of the leaf's commitment, which holds the record's
//! JSON). The database keeps it (`audit.index_versions.delta`), the tiles
//! publish it (`index/<N>`, N the record's number) and a mirror copies it; whoever holds every
//! delta and the log's tiles rebuilds the index and each root the log recorded. Read strictly
//! and bounded. Pure.
//!
//! Layout (integers big-endian):
//! ```text
//! "event-audit-account-index/1 delta\n"
//! u64 record_leaf ‖ u32 n ‖ n bytes: the record row's leaf data
//! u32 m ‖ m bytes: the opening of its commitment
//! u64 pairs ‖ pairs × (u64 leaf ‖ 32-byte label), sorted by (leaf, label), no repeats
//! ```

use super::Label;

/// Where update `seq`'s delta is kept beside a log's tiles (`index/delta/` and the tiles' path
/// of the number, `x001/234`).
pub fn path(seq: u64) -> String {
    format!("index/delta/{}", crate::tile::index_path(seq))
}

/// The file beside a log's tiles that says how many deltas are published, as a decimal number:
/// a hint of how far to read (each delta is checked against the log by its record).
pub const LATEST: &str = "index/latest";

/// The longest delta read: an update indexes at most about 100,000 rows.
pub const MAX_DELTA: u64 = 64 << 20;

/// The update number a delta path names (`index/delta/x001/234` is 1234), if it is one.
pub fn parse_path(rel: &str) -> Option<u64> {
    let rest = rel.strip_prefix("index/delta/")?;
    let n = crate::tile::parse_index_path(rest)?;
    (path(n) == rel).then_some(n)
}

/// What a delta starts with.
pub const MAGIC: &[u8] = b"event-audit-account-index/1 delta\n";

/// The longest record leaf data or opening read (a record's take a few hundred bytes).
pub const MAX_RECORD: usize = 64 << 10;

/// One pair's bytes.
pub const PAIR_LEN: usize = 8 + 32;

/// An update as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// The leaf of the row recording the update.
    pub record_leaf: u64,
    /// That row's leaf data (its canonical encoding).
    pub record: Vec<u8>,
    /// The opening of the leaf's commitment (row encoding 3): the record's JSON is in it.
    pub opening: Vec<u8>,
    /// Each indexed leaf with each of its labels, sorted by (leaf, label).
    pub pairs: Vec<(u64, Label)>,
}

/// Why bytes are not a delta.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    #[error("does not start with {MAGIC:?}")]
    Magic,
    #[error("ends early ({0})")]
    Short(&'static str),
    #[error("its record or opening is {0} bytes, more than {MAX_RECORD}")]
    RecordTooLong(u64),
    #[error("claims {claimed} pairs, more than the {max} its size allows")]
    TooManyPairs { claimed: u64, max: u64 },
    #[error("pair {0} is not after the one before it (sorted by leaf, then label, no repeats)")]
    Order(usize),
    #[error("{0} bytes after the last pair")]
    Trailing(usize),
}

impl Delta {
    /// The bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            MAGIC.len() + 24 + self.record.len() + self.opening.len() + self.pairs.len() * PAIR_LEN,
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.record_leaf.to_be_bytes());
        for part in [&self.record, &self.opening] {
            out.extend_from_slice(&(part.len() as u32).to_be_bytes());
            out.extend_from_slice(part);
        }
        out.extend_from_slice(&(self.pairs.len() as u64).to_be_bytes());
        for (leaf, label) in &self.pairs {
            out.extend_from_slice(&leaf.to_be_bytes());
            out.extend_from_slice(label);
        }
        out
    }

    /// Reads a delta: exactly its layout, pairs in order, nothing after; the pairs claimed are
    /// bounded by the bytes given before any is allocated.
    pub fn parse(b: &[u8]) -> Result<Delta, DeltaError> {
        let rest = b.strip_prefix(MAGIC).ok_or(DeltaError::Magic)?;
        let (leaf, rest) = take::<8>(rest, "record leaf")?;
        let record_leaf = u64::from_be_bytes(leaf);
        let (record, rest) = part(rest, "record")?;
        let (opening, rest) = part(rest, "opening")?;
        let (count, rest) = take::<8>(rest, "pair count")?;
        let claimed = u64::from_be_bytes(count);
        let max = (rest.len() / PAIR_LEN) as u64;
        if claimed > max {
            return Err(DeltaError::TooManyPairs { claimed, max });
        }
        let body = claimed as usize * PAIR_LEN;
        if rest.len() > body {
            return Err(DeltaError::Trailing(rest.len() - body));
        }
        let mut pairs: Vec<(u64, Label)> = Vec::with_capacity(claimed as usize);
        for (i, chunk) in rest.chunks_exact(PAIR_LEN).enumerate() {
            let mut leaf = [0u8; 8];
            leaf.copy_from_slice(&chunk[..8]);
            let mut label = [0u8; 32];
            label.copy_from_slice(&chunk[8..]);
            let pair = (u64::from_be_bytes(leaf), label);
            if pairs.last().is_some_and(|p| *p >= pair) {
                return Err(DeltaError::Order(i));
            }
            pairs.push(pair);
        }
        Ok(Delta {
            record_leaf,
            record: record.to_vec(),
            opening: opening.to_vec(),
            pairs,
        })
    }
}

/// A length-prefixed part: `u32 n ‖ n bytes`, at most [`MAX_RECORD`].
fn part<'a>(b: &'a [u8], what: &'static str) -> Result<(&'a [u8], &'a [u8]), DeltaError> {
    let (n, rest) = take::<4>(b, what)?;
    let n = u32::from_be_bytes(n) as usize;
    if n > MAX_RECORD {
        return Err(DeltaError::RecordTooLong(n as u64));
    }
    if rest.len() < n {
        return Err(DeltaError::Short(what));
    }
    Ok(rest.split_at(n))
}

fn take<'a, const N: usize>(
    b: &'a [u8],
    what: &'static str,
) -> Result<([u8; N], &'a [u8]), DeltaError> {
    if b.len() < N {
        return Err(DeltaError::Short(what));
    }
    let (head, rest) = b.split_at(N);
    let mut out = [0u8; N];
    out.copy_from_slice(head);
    Ok((out, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Delta {
        Delta {
            record_leaf: 41,
            record: b"row".to_vec(),
            opening: b"open".to_vec(),
            pairs: vec![(3, [1; 32]), (3, [2; 32]), (7, [0; 32])],
        }
    }

    #[test]
    fn a_delta_reads_back() {
        let d = sample();
        assert_eq!(Delta::parse(&d.encode()), Ok(d));
        let empty = Delta {
            record_leaf: 0,
            record: Vec::new(),
            opening: Vec::new(),
            pairs: Vec::new(),
        };
        assert_eq!(Delta::parse(&empty.encode()), Ok(empty));
    }

    #[test]
    fn anything_else_is_refused() {
        let b = sample().encode();
        assert_eq!(Delta::parse(&b[1..]), Err(DeltaError::Magic));
        for cut in MAGIC.len()..b.len() {
            assert!(Delta::parse(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut more = b.clone();
        more.push(0);
        assert_eq!(Delta::parse(&more), Err(DeltaError::Trailing(1)));
        let mut swapped = sample();
        swapped.pairs.swap(0, 1);
        assert_eq!(Delta::parse(&swapped.encode()), Err(DeltaError::Order(1)));
        let mut repeated = sample();
        repeated.pairs[1] = repeated.pairs[0];
        assert_eq!(Delta::parse(&repeated.encode()), Err(DeltaError::Order(1)));
        // A count larger than the bytes: refused before anything is allocated.
        let mut huge = b.clone();
        let at = MAGIC.len() + 8 + 4 + 3 + 4 + 4;
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(
            Delta::parse(&huge),
            Err(DeltaError::TooManyPairs { .. })
        ));
        let mut long = b;
        long[MAGIC.len() + 8..MAGIC.len() + 12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Delta::parse(&long),
            Err(DeltaError::RecordTooLong(_))
        ));
    }
}
