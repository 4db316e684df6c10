//! The batch's chain link: one per committed batch, appended under the chain head's row lock
//! (held until the commit, so links are serialized while rows are written concurrently). The
//! link also extends the Merkle tree over the rows: the head keeps the tree's right edge, the
//! link records the tree's size and root (and its hash covers them, version 2), and every
//! perfect subtree of height 8, 16, … the batch completes is stored in `audit.tree_nodes`.

use sqlx::PgConnection;

use crate::db::{Ctx, DbError};
use crate::row::chain::link_hash_v2;
use crate::tlog::merkle::{leaf_hash, Frontier, Hash};

/// Appends the link covering `batch_id` (whose rows have `row_hashes`, in log order) and moves
/// the head; returns the link's sequence.
pub(super) async fn link(
    tx: &mut PgConnection,
    batch_id: i64,
    row_hashes: &[Hash],
    digest: &[u8; 32],
    instance: &str,
) -> Result<i64, DbError> {
    let row_count = i32::try_from(row_hashes.len()).unwrap_or(i32::MAX);
    let (head_seq, prev, tree_size, front): (i64, Vec<u8>, i64, Vec<u8>) = sqlx::query_as(
        "SELECT link_seq, hash, tree_size, frontier FROM audit.chain_head WHERE id FOR UPDATE",
    )
    .fetch_one(&mut *tx)
    .await
    .ctx("lock the chain head")?;
    let mut tree = u64::try_from(tree_size)
        .ok()
        .and_then(|n| Frontier::from_bytes(n, &front))
        .ok_or(DbError::Corrupt {
            what: "audit.chain_head.frontier",
            why: "does not hold one hash per set bit of the tree size",
        })?;
    let (mut heights, mut idxs, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for r in row_hashes {
        tree.append(leaf_hash(r), |node, h| {
            if crate::tlog::tile::is_stored(&node) {
                heights.push(node.level as i16);
                idxs.push(i64::try_from(node.index).unwrap_or(i64::MAX));
                hashes.push(h.to_vec());
            }
        });
    }
    let size = i64::try_from(tree.size()).unwrap_or(i64::MAX);
    let root = tree.root();
    let link_seq = head_seq + 1;
    let hash = link_hash_v2(&prev, link_seq, batch_id, row_count, digest, size, &root);
    // The head's trigger checks at commit that it moved onto this link.
    sqlx::query(
        "WITH ins AS (INSERT INTO audit.chain_links \
            (link_seq, batch_id, row_count, batch_digest, prev_hash, hash, instance, tree_size, tree_root, version) \
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 2)), \
         nodes AS (INSERT INTO audit.tree_nodes (height, idx, hash) \
            SELECT * FROM unnest($10::int2[], $11::int8[], $12::bytea[])) \
         UPDATE audit.chain_head SET link_seq = $1, hash = $6, tree_size = $8, frontier = $13 WHERE id",
    )
    .bind(link_seq)
    .bind(batch_id)
    .bind(row_count)
    .bind(&digest[..])
    .bind(&prev)
    .bind(&hash[..])
    .bind(instance)
    .bind(size)
    .bind(&root[..])
    .bind(&heights)
    .bind(&idxs)
    .bind(&hashes)
    .bind(tree.to_bytes())
    .execute(&mut *tx)
    .await
    .ctx("link chain")?;
    Ok(link_seq)
}
