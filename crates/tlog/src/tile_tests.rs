//! The tile geometry and formats against the examples of C2SP tlog-tiles and against the
//! Merkle tree computed leaf by leaf.

use std::collections::HashMap;

use super::build::TileBuilder;
use super::read::{tiles_for, TileReader};
use super::*;
use crate::merkle::{self, leaf_hash, root_of, Node};

#[test]
fn only_tile_roots_above_the_leaves_are_stored() {
    let at = |level, index| Node { level, index };
    assert!(!is_stored(&at(0, 0)));
    assert!(!is_stored(&at(7, 3)));
    assert!(is_stored(&at(8, 0)));
    assert!(is_stored(&at(16, 1)));
}

#[test]
fn paths_are_spelled_as_the_spec_spells_them() {
    assert_eq!(index_path(1234067), "x001/x234/067");
    assert_eq!(index_path(0), "000");
    assert_eq!(index_path(1000), "x001/000");
    assert_eq!(
        TileId::hashes(0, 1234067, 256).path(),
        "tile/0/x001/x234/067"
    );
    assert_eq!(TileId::hashes(2, 3, 17).path(), "tile/2/003.p/17");
    assert_eq!(TileId::entries(5, 256).path(), "tile/entries/005");
    assert_eq!(TileId::entries(5, 1).path(), "tile/entries/005.p/1");
    for id in [
        TileId::hashes(0, 1234067, 256),
        TileId::hashes(63, 0, 255),
        TileId::entries(u64::MAX, 9),
        TileId::entries(999, 256),
    ] {
        assert_eq!(TileId::parse(&id.path()), Ok(id), "{}", id.path());
    }
}

#[test]
fn only_the_one_spelling_parses() {
    for bad in [
        "tile/01/000",
        "tile/64/000",
        "tile/0/1",
        "tile/0/0000",
        "tile/0/x000/001",
        "tile/0/001/002",
        "tile/0/x1/002",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/007",
        "tile/0/000/",
        "tile/../000",
        "tile/entries/../0/000",
        "tile/0/000.p/",
        "tile/0",
        "checkpoint",
        "tile/0/x018/x446/x744/x073/x709/x551/616",
    ] {
        assert!(TileId::parse(bad).is_err(), "{bad} parsed");
    }
}

#[test]
fn a_tree_of_70000_has_the_spec_s_tiles() {
    let all: Vec<TileId> = tiles_between(0, 70_000).collect();
    let count = |f: &dyn Fn(&TileId) -> bool| all.iter().filter(|t| f(t)).count();
    assert_eq!(count(&|t| t.kind == Kind::Hashes(0) && t.is_full()), 273);
    assert!(all.contains(&TileId::hashes(0, 273, 112)));
    assert_eq!(count(&|t| t.kind == Kind::Hashes(1) && t.is_full()), 1);
    assert!(all.contains(&TileId::hashes(1, 1, 17)));
    assert!(all.contains(&TileId::hashes(2, 0, 1)));
    assert_eq!(count(&|t| t.kind == Kind::Entries), 274);
    // A tree of 256: one full level-0 tile and a level-1 tile of width 1.
    assert_eq!(
        tiles_between(0, 256).collect::<Vec<_>>(),
        vec![
            TileId::hashes(0, 0, 256),
            TileId::entries(0, 256),
            TileId::hashes(1, 0, 1)
        ]
    );
    assert!(TileId::hashes(1, 0, 1).within(256));
    assert!(!TileId::hashes(1, 0, 2).within(256));
    assert!(!TileId::hashes(0, 1, 1).within(256));
    assert!(TileId::hashes(0, 0, 3).within(256));
}

#[test]
fn the_tiles_of_a_claimed_size_are_made_as_they_are_asked_for() {
    // A signed checkpoint may claim any size: naming its first tiles costs nothing more.
    let first: Vec<TileId> = tiles_between(0, 1 << 62).take(3).collect();
    assert_eq!(
        first,
        vec![
            TileId::hashes(0, 0, 256),
            TileId::entries(0, 256),
            TileId::hashes(0, 1, 256)
        ]
    );
    let last = tiles_between(u64::MAX - 5, u64::MAX).last();
    assert_eq!(last, Some(TileId::entries(u64::MAX / 256, 255)));
    assert_eq!(tiles_between(700, 300).count(), 0);
}

#[test]
fn bundles_hold_exactly_their_width() {
    let id = TileId::entries(0, 2);
    let mut b = Vec::new();
    push_entry(&mut b, b"ab").unwrap();
    push_entry(&mut b, b"").unwrap();
    assert_eq!(parse_bundle(&id, &b).unwrap(), vec![&b"ab"[..], &b""[..]]);
    let mut extra = b.clone();
    push_entry(&mut extra, b"c").unwrap();
    assert!(matches!(
        parse_bundle(&id, &extra),
        Err(TileError::ExtraEntries { .. })
    ));
    assert!(matches!(
        parse_bundle(&id, &b[..b.len() - 2]),
        Err(TileError::FewerEntries { .. })
    ));
    assert!(matches!(
        parse_bundle(&id, &b[..3]),
        Err(TileError::Truncated { .. })
    ));
    assert!(matches!(
        parse_bundle(&id, &b[..1]),
        Err(TileError::Truncated { .. })
    ));
    assert!(push_entry(&mut b, &vec![0; 70_000]).is_err());
    assert!(parse_hashes(&TileId::hashes(0, 0, 2), &[0; 63]).is_err());
}

fn entry(i: u64) -> [u8; 32] {
    leaf_hash(&i.to_be_bytes())
}

#[test]
fn the_builder_s_root_is_the_tree_s_at_every_size() {
    let mut b = TileBuilder::new();
    let mut leaves = Vec::new();
    for i in 0..1100u64 {
        b.push(&entry(i)).unwrap();
        leaves.push(leaf_hash(&entry(i)));
        if i < 70 || i % 97 == 0 || (i + 1) % 256 == 0 {
            assert_eq!(b.root(), root_of(&leaves), "size {}", i + 1);
        }
    }
}

/// Every tile of a tree of `n` leaves from one builder.
fn tiles(n: u64) -> (HashMap<TileId, Vec<u8>>, Vec<merkle::Hash>) {
    let mut b = TileBuilder::new();
    let mut files = HashMap::new();
    let mut leaves = Vec::new();
    for i in 0..n {
        leaves.push(b.push(&entry(i)).unwrap());
        files.extend(b.take_full());
    }
    files.extend(b.partials());
    (files, leaves)
}

#[test]
fn the_builder_writes_what_the_geometry_names() {
    for n in [1u64, 255, 256, 257, 65_536, 65_537, 70_000] {
        let (files, leaves) = tiles(n);
        let mut names: Vec<TileId> = files.keys().copied().collect();
        names.sort();
        let mut want: Vec<TileId> = tiles_between(0, n).collect();
        want.sort();
        assert_eq!(names, want, "size {n}");
        // Every level-l hash is the root of its 256^l leaves.
        for (id, bytes) in &files {
            if let Kind::Hashes(l) = id.kind {
                let hashes = parse_hashes(id, bytes).unwrap();
                let (start, _) = id.leaves();
                let span = 1usize << (8 * u32::from(l));
                for (i, h) in hashes.iter().enumerate() {
                    let s = start as usize + i * span;
                    assert_eq!(*h, root_of(&leaves[s..s + span]), "{} hash {i}", id.path());
                }
            }
        }
    }
}

#[test]
fn a_resumed_builder_writes_the_same_tiles() {
    let (all, _) = tiles(70_000);
    for at in [0u64, 1, 255, 256, 300, 65_536, 66_000] {
        let (before, _) = tiles(at);
        let mut rows = Vec::new();
        let mut bundle = Vec::new();
        for (id, bytes) in before.iter() {
            if !id.is_full() {
                match id.kind {
                    Kind::Hashes(l) => {
                        let l = usize::from(l);
                        if rows.len() <= l {
                            rows.resize_with(l + 1, Vec::new);
                        }
                        rows[l] = parse_hashes(id, bytes).unwrap();
                    }
                    Kind::Entries => bundle = bytes.clone(),
                }
            }
        }
        let mut b = TileBuilder::resume(at, rows, bundle).unwrap();
        let mut files = HashMap::new();
        for i in at..70_000 {
            b.push(&entry(i)).unwrap();
            files.extend(b.take_full());
        }
        files.extend(b.partials());
        for (id, bytes) in &files {
            assert_eq!(all.get(id), Some(bytes), "{} resumed at {at}", id.path());
        }
    }
    assert!(TileBuilder::resume(300, vec![vec![[0; 32]; 3]], Vec::new()).is_err());
}

#[test]
fn the_reader_reads_roots_and_proofs_from_the_tiles() {
    let n = 70_000u64;
    let (files, leaves) = tiles(n);
    let hashes: HashMap<TileId, Vec<merkle::Hash>> = files
        .iter()
        .filter(|(id, _)| id.kind != Kind::Entries)
        .map(|(id, b)| (*id, parse_hashes(id, b).unwrap()))
        .collect();
    let r = TileReader::new(n, &hashes);
    for m in [1u64, 255, 256, 257, 4096, 65_536, 69_999, 70_000] {
        assert_eq!(
            r.root(m).unwrap(),
            root_of(&leaves[..m as usize]),
            "root {m}"
        );
    }
    let root = root_of(&leaves);
    for i in [0u64, 255, 256, 65_535, 69_999] {
        let proof = r.inclusion(i, n).unwrap();
        assert!(merkle::verify_inclusion(i, n, &leaves[i as usize], &proof, &root).is_ok());
    }
    for m in [1u64, 256, 1000, 65_536] {
        let proof = r.consistency(m, n).unwrap();
        let old = root_of(&leaves[..m as usize]);
        assert!(merkle::verify_consistency(m, n, &old, &root, &proof).is_ok());
    }
    // Only the tiles a computation names are needed.
    let nodes = super::read::nodes_of_inclusion(300, n);
    for t in tiles_for(&nodes, n).unwrap() {
        assert!(hashes.contains_key(&t), "{}", t.path());
    }
    assert!(r
        .node(Node {
            level: 17,
            index: 0
        })
        .is_err());
}

/// Found by the `tile_path` fuzz target: a path may name the largest index at the highest
/// level, and its leaves then overflowed (a panic in debug builds, a wrapped range otherwise).
#[test]
fn the_leaves_of_any_parsable_path_saturate() {
    let far = TileId::parse("tile/63/x018/x446/x744/x073/x709/x551/615").unwrap();
    assert_eq!(far.index, u64::MAX);
    assert_eq!(far.leaves(), (u64::MAX, u64::MAX));
    let entries = TileId::parse("tile/entries/x018/x446/x744/x073/x709/x551/615").unwrap();
    assert_eq!(entries.leaves(), (u64::MAX, u64::MAX));
    // Level 1, index 2^55: 2^71 leaves in; the shift used to drop the high bits (start 0).
    let past = TileId::hashes(1, 1 << 55, 256);
    assert_eq!(past.leaves(), (u64::MAX, u64::MAX));
    assert_eq!(TileId::hashes(8, 0, 1).leaves(), (0, u64::MAX));
    assert_eq!(
        TileId::hashes(1, 3, 2).leaves(),
        (3 * 65_536, 3 * 65_536 + 512)
    );
}
