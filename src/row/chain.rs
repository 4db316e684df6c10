//! The hash chain's link: `SHA-256(prev ‖ link_seq ‖ batch_id ‖ row_count ‖ batch digest)`
//! (version 1), then `‖ tree_size ‖ tree_root` (version 2, every link written since the Merkle
//! tree), shared by the writer and `verify`.

use sha2::{Digest, Sha256};

/// The link hash, as the writer's SQL computes it.
pub(crate) fn link_hash(
    prev: &[u8],
    link_seq: i64,
    batch_id: i64,
    row_count: i32,
    digest: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(link_seq.to_be_bytes());
    h.update(batch_id.to_be_bytes());
    h.update(row_count.to_be_bytes());
    h.update(digest);
    h.finalize().into()
}

/// The digest of a batch: SHA-256 over its row hashes in log order.
pub fn batch_digest<'a>(row_hashes: impl IntoIterator<Item = &'a [u8; 32]>) -> [u8; 32] {
    row_hashes
        .into_iter()
        .fold(Sha256::new(), |h, r| h.chain_update(r))
        .finalize()
        .into()
}

/// Version 2 of the link hash: version 1's fields, then the tree's size and root after the
/// batch (`‖ tree_size ‖ tree_root`), so the link covers the Merkle root.
#[allow(clippy::too_many_arguments)]
pub fn link_hash_v2(
    prev: &[u8],
    link_seq: i64,
    batch_id: i64,
    row_count: i32,
    digest: &[u8],
    tree_size: i64,
    tree_root: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(link_seq.to_be_bytes());
    h.update(batch_id.to_be_bytes());
    h.update(row_count.to_be_bytes());
    h.update(digest);
    h.update(tree_size.to_be_bytes());
    h.update(tree_root);
    h.finalize().into()
}

/// The hash a stored link must have, by its version (1: without the tree, 2: with it; a
/// version 2 link without a tree never matches).
#[allow(clippy::too_many_arguments)]
pub(crate) fn stored_link_hash(
    version: i16,
    prev: &[u8],
    link_seq: i64,
    batch_id: i64,
    row_count: i32,
    digest: &[u8],
    tree: Option<(i64, &[u8])>,
) -> Option<[u8; 32]> {
    match (version, tree) {
        (1, _) => Some(link_hash(prev, link_seq, batch_id, row_count, digest)),
        (2, Some((size, root))) => Some(link_hash_v2(
            prev, link_seq, batch_id, row_count, digest, size, root,
        )),
        _ => None,
    }
}
