//! The stored Merkle tree against real PostgreSQL, checked against an in-memory reference tree
//! built from the same rows in log order: roots, inclusion and consistency proofs at sizes on
//! and around the stored subtrees' boundaries (every 256 leaves), and each row's leaf index.

use crate::support::records::{now_us, records};
use crate::support::TestDb;
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;
use event_audit::test_support::log::tree::TreeStore;
use event_audit::tlog::merkle::{self, MemTree};

#[tokio::test]
async fn stored_tree_proofs_equal_a_reference_tree() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    // Two streams, batches of uneven sizes, so links and tiles do not line up.
    let t0 = now_us();
    let mut a = records("TA", 700, 1, t0);
    let mut b = records("TB", 600, 1, t0);
    let (mut ia, mut ib) = (0usize, 0usize);
    for (i, size) in [37usize, 250, 1, 300, 19, 256, 2, 180, 255, 64]
        .iter()
        .cycle()
        .enumerate()
    {
        if ia == a.len() && ib == b.len() {
            break;
        }
        let (recs, at) = if i % 2 == 0 && ia < a.len() || ib == b.len() {
            (&mut a, &mut ia)
        } else {
            (&mut b, &mut ib)
        };
        let end = (*at + size).min(recs.len());
        sink.write_batch(&mut recs[*at..end]).await.expect("write");
        *at = end;
    }
    let rows: Vec<(String, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT e.stream, e.stream_seq, e.row_hash FROM audit.chain_links l \
         JOIN audit.events e ON e.batch_id = l.batch_id \
         ORDER BY l.link_seq, e.stream COLLATE \"C\", e.stream_seq, e.published_at",
    )
    .fetch_all(&db.pool)
    .await
    .expect("rows in log order");
    assert_eq!(rows.len(), 1300);
    let mem = MemTree {
        leaves: rows.iter().map(|(_, _, h)| merkle::leaf_hash(h)).collect(),
    };
    let store = TreeStore::new(Db::from_pool(db.pool.clone()));

    let sizes = [1u64, 2, 255, 256, 257, 511, 512, 513, 1000, 1299, 1300];
    for &n in &sizes {
        assert_eq!(store.root(n).await.expect("root"), mem.root(n), "root({n})");
        for m in [0, 1, 127, 255, 256, 300, n / 2, n - 1] {
            if m < n {
                assert_eq!(
                    store.inclusion(m, n).await.expect("inclusion"),
                    mem.inclusion(m, n),
                    "inclusion({m}, {n})"
                );
            }
        }
        for &m in &sizes {
            if m < n {
                assert_eq!(
                    store.consistency(m, n).await.expect("consistency"),
                    mem.consistency(m, n),
                    "consistency({m}, {n})"
                );
            }
        }
    }
    // Each row's leaf index is its place in log order.
    for i in [0usize, 1, 36, 37, 255, 256, 700, 1299] {
        let (stream, seq, _) = &rows[i];
        let place = store
            .place(stream, *seq)
            .await
            .expect("place")
            .expect("the row is in the tree");
        assert_eq!(place.leaf_index, i as i64, "{stream}:{seq}");
    }
}
