//! The Merkle tree over every row (RFC 6962 / RFC 9162 §2.1), pure: leaf and node hashing, the
//! root of a list, the compact right edge ("frontier") that appends in O(log n) state, and
//! inclusion and consistency proofs, built from perfect subtree hashes and verified with the
//! RFC 9162 algorithms (§2.1.3.2, §2.1.4.2). Leaf data of a row is its row hash.

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// `SHA-256(0x00 ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0u8])
        .chain_update(data)
        .finalize()
        .into()
}

/// `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new()
        .chain_update([1u8])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The largest power of two strictly below `n` (`n >= 2`).
fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1u64 << (63 - (n - 1).leading_zeros())
}

/// The root over leaf hashes (RFC 6962 MTH), by recursion: the reference, used by tests and
/// small ranges.
pub fn root_of(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n as u64) as usize;
            node_hash(&root_of(&leaves[..k]), &root_of(&leaves[k..]))
        }
    }
}

/// A perfect subtree: the `2^level` leaves from `index * 2^level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub level: u32,
    pub index: u64,
}

impl Node {
    pub fn start(self) -> u64 {
        self.index << self.level
    }
    pub fn end(self) -> u64 {
        (self.index + 1) << self.level
    }
}

/// The perfect subtrees whose hashes make the hash of leaves `[start, end)`, left to right, as
/// MTH splits it (`start` aligned to the largest power of two not above `end - start`, as every
/// range of a proof is).
pub fn range_nodes(start: u64, end: u64) -> Vec<Node> {
    let mut out = Vec::new();
    let mut s = start;
    while s < end {
        let len = end - s;
        let level = 63 - len.leading_zeros();
        // The largest aligned perfect subtree from s that fits.
        let level = level.min(s.trailing_zeros());
        out.push(Node {
            level,
            index: s >> level,
        });
        s += 1u64 << level;
    }
    out
}

/// The hash of leaves `[start, end)` from the hashes of its [`range_nodes`], in that order.
pub fn range_hash(parts: &[Hash]) -> Hash {
    let mut it = parts.iter().rev();
    let Some(last) = it.next() else {
        return empty_root();
    };
    it.fold(*last, |acc, h| node_hash(h, &acc))
}

/// The ranges whose hashes make the inclusion proof of leaf `m` in a tree of `n` (RFC 6962
/// PATH), in proof order.
pub fn inclusion_ranges(m: u64, n: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let (mut lo, mut hi) = (0u64, n);
    // Collected top-down; the proof lists them bottom-up.
    while hi - lo > 1 {
        let k = split(hi - lo);
        if m - lo < k {
            out.push((lo + k, hi));
            hi = lo + k;
        } else {
            out.push((lo, lo + k));
            lo += k;
        }
    }
    out.reverse();
    out
}

/// The ranges whose hashes make the consistency proof from size `m` to size `n` (RFC 6962
/// PROOF), in proof order. Empty when `m == 0` or `m == n`.
pub fn consistency_ranges(m: u64, n: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if m == 0 || m >= n {
        return out;
    }
    let (mut lo, mut hi) = (0u64, n);
    let mut whole = true;
    let mut mm = m;
    while mm != hi - lo {
        let k = split(hi - lo);
        if mm <= k {
            out.push((lo + k, hi));
            hi = lo + k;
        } else {
            out.push((lo, lo + k));
            mm -= k;
            lo += k;
            whole = false;
        }
    }
    if !whole {
        out.push((lo, hi));
    }
    out.reverse();
    out
}

/// Every perfect subtree a list of ranges needs, deduplicated and sorted.
pub fn nodes_needed(ranges: &[(u64, u64)]) -> Vec<Node> {
    let mut v: Vec<Node> = ranges
        .iter()
        .flat_map(|&(s, e)| range_nodes(s, e))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Builds the hashes of `ranges` from perfect subtree hashes (`get` answers every node of
/// [`nodes_needed`]).
pub fn assemble<E>(
    ranges: &[(u64, u64)],
    mut get: impl FnMut(Node) -> Result<Hash, E>,
) -> Result<Vec<Hash>, E> {
    ranges
        .iter()
        .map(|&(s, e)| {
            let parts = range_nodes(s, e)
                .into_iter()
                .map(&mut get)
                .collect::<Result<Vec<_>, E>>()?;
            Ok(range_hash(&parts))
        })
        .collect()
}

/// Why a proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("leaf index {index} is not below the tree size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("the proof has the wrong number of hashes")]
    WrongLength,
    #[error("the proof does not hash to the root")]
    RootMismatch,
    #[error("the second tree is smaller than the first ({first} > {second})")]
    Shrunk { first: u64, second: u64 },
}

/// RFC 9162 §2.1.3.2: checks that `leaf` (a leaf hash) is leaf `index` of the tree of `size`
/// with `root`.
pub fn verify_inclusion(
    index: u64,
    size: u64,
    leaf: &Hash,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return Err(ProofError::WrongLength);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err(ProofError::WrongLength);
    }
    if &r != root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// RFC 9162 §2.1.4.2: checks that the tree of `size2` with `root2` extends the tree of `size1`
/// with `root1`.
pub fn verify_consistency(
    size1: u64,
    size2: u64,
    root1: &Hash,
    root2: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if size1 > size2 {
        return Err(ProofError::Shrunk {
            first: size1,
            second: size2,
        });
    }
    if size1 == size2 {
        return match (proof.is_empty(), root1 == root2) {
            (false, _) => Err(ProofError::WrongLength),
            (true, true) => Ok(()),
            (true, false) => Err(ProofError::RootMismatch),
        };
    }
    if size1 == 0 {
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(ProofError::WrongLength)
        };
    }
    let mut path: Vec<Hash> = proof.to_vec();
    if size1.is_power_of_two() {
        path.insert(0, *root1);
    }
    let Some((first, rest)) = path.split_first() else {
        return Err(ProofError::WrongLength);
    };
    let (mut fn_, mut sn) = (size1 - 1, size2 - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if sn == 0 {
            return Err(ProofError::WrongLength);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err(ProofError::WrongLength);
    }
    if &fr != root1 || &sr != root2 {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// The right edge of a tree: the roots of its perfect subtrees, largest (leftmost) first, one
/// per set bit of the size. Appending a leaf and computing the root take O(log n).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    nodes: Vec<Hash>,
}

impl Frontier {
    pub fn new() -> Frontier {
        Frontier::default()
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The frontier's perfect subtrees, left to right.
    pub fn nodes(&self) -> impl Iterator<Item = (Node, &Hash)> {
        let mut start = 0u64;
        let size = self.size;
        (0..64u32)
            .rev()
            .filter(move |b| size >> b & 1 == 1)
            .zip(self.nodes.iter())
            .map(move |(level, h)| {
                let n = Node {
                    level,
                    index: start >> level,
                };
                start += 1u64 << level;
                (n, h)
            })
    }

    /// Appends a leaf hash; calls `completed` with every perfect subtree it completes (the
    /// leaf itself at level 0, then each merge).
    pub fn append(&mut self, leaf: Hash, mut completed: impl FnMut(Node, &Hash)) {
        let mut h = leaf;
        let mut level = 0u32;
        let mut s = self.size;
        completed(
            Node {
                level: 0,
                index: self.size,
            },
            &h,
        );
        while s & 1 == 1 {
            // The popped node is the left sibling; a frontier is never shorter than its bits.
            let Some(left) = self.nodes.pop() else { break };
            h = node_hash(&left, &h);
            s >>= 1;
            level += 1;
            completed(
                Node {
                    level,
                    index: self.size >> level,
                },
                &h,
            );
        }
        self.nodes.push(h);
        self.size += 1;
    }

    /// The tree's root.
    pub fn root(&self) -> Hash {
        range_hash(&self.nodes)
    }

    /// The stored form: the hashes concatenated.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.nodes.concat()
    }

    /// The frontier of a tree of `size` from its stored form, or `None` when the bytes do not
    /// hold one hash per set bit of `size`.
    pub fn from_bytes(size: u64, bytes: &[u8]) -> Option<Frontier> {
        if bytes.len() != 32 * size.count_ones() as usize {
            return None;
        }
        let nodes = bytes
            .chunks_exact(32)
            .map(|c| {
                let mut h = [0u8; 32];
                h.copy_from_slice(c);
                h
            })
            .collect();
        Some(Frontier { size, nodes })
    }
}

/// A whole tree in memory (every leaf hash): proofs by [`assemble`], for tests and small logs.
#[derive(Debug, Clone, Default)]
pub struct MemTree {
    pub leaves: Vec<Hash>,
}

impl MemTree {
    pub fn node(&self, n: Node) -> Hash {
        root_of(&self.leaves[n.start() as usize..n.end() as usize])
    }

    fn ranges(&self, ranges: &[(u64, u64)]) -> Vec<Hash> {
        let r: Result<Vec<Hash>, std::convert::Infallible> = assemble(ranges, |n| Ok(self.node(n)));
        r.unwrap_or_default()
    }

    pub fn root(&self, size: u64) -> Hash {
        root_of(&self.leaves[..size as usize])
    }

    pub fn inclusion(&self, m: u64, n: u64) -> Vec<Hash> {
        self.ranges(&inclusion_ranges(m, n))
    }

    pub fn consistency(&self, m: u64, n: u64) -> Vec<Hash> {
        self.ranges(&consistency_ranges(m, n))
    }
}

#[cfg(test)]
#[path = "merkle_tests.rs"]
mod tests;
