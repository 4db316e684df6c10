//! The account index's tests: the incremental index against the tree computed whole, every
//! label's proof (present, absent beside another label, absent in an empty subtree, paths that
//! end above the stored depths), and proofs changed in each part rejected.

use proptest::prelude::*;
use sha2::{Digest, Sha256};

use super::memory::Index;
use super::*;

fn label(seed: u64) -> Label {
    Sha256::digest(seed.to_be_bytes()).into()
}

fn value(n: u64) -> Value {
    let hashes: Vec<Hash> = (0..n).map(|i| [i as u8; 32]).collect();
    Value::of(hashes.iter().enumerate().map(|(i, h)| (i as u64 * 3, h)))
}

fn whole(idx: &Index, labels: &[Label]) -> Hash {
    let mut all: Vec<(Label, Value)> = labels
        .iter()
        .filter_map(|l| idx.get(l).map(|v| (*l, v)))
        .collect();
    all.sort_by_key(|(l, _)| *l);
    all.dedup_by_key(|(l, _)| *l);
    subtree(&all, 0).hash
}

/// Labels sharing long prefixes: `n` of them under one bucket, some sharing 20 bits and more.
fn crowded(n: u64) -> Vec<Label> {
    (0..n)
        .map(|i| {
            let mut l = label(i);
            l[0] = 0x5a;
            l[1] = 0xa5;
            if i % 2 == 0 {
                l[2] = 0x0f;
            }
            l
        })
        .collect()
}

#[test]
fn an_empty_index_has_the_empty_root_and_proves_every_label_absent() {
    let idx = Index::new();
    assert_eq!(idx.root(), EMPTY);
    let p = idx.prove(&label(1));
    assert_eq!(p.terminal, Terminal::Empty);
    assert_eq!(verify(&EMPTY, &label(1), &p), Ok(None));
}

#[test]
fn one_label_is_the_root_itself() {
    let mut idx = Index::new();
    idx.update([(label(7), value(2))]);
    assert_eq!(idx.root(), leaf_hash(&label(7), &value(2)));
    let p = idx.prove(&label(7));
    assert!(p.siblings.is_empty());
    assert_eq!(verify(&idx.root(), &label(7), &p), Ok(Some(value(2))));
    // Another label: absent, the path ending at the lone label.
    let q = idx.prove(&label(8));
    assert_eq!(verify(&idx.root(), &label(8), &q), Ok(None));
}

#[test]
fn every_label_proves_its_value_and_strangers_prove_absent() {
    let mut idx = Index::new();
    let mut labels: Vec<Label> = (0..300).map(label).collect();
    labels.extend(crowded(40));
    for chunk in labels.chunks(37) {
        idx.update(
            chunk
                .iter()
                .enumerate()
                .map(|(i, l)| (*l, value(1 + i as u64 % 5))),
        );
        assert_eq!(idx.root(), whole(&idx, &labels));
    }
    for l in &labels {
        let p = idx.prove(l);
        assert_eq!(verify(&idx.root(), l, &p), Ok(idx.get(l)), "{l:?}");
    }
    for s in 1000..1100 {
        let l = label(s);
        assert_eq!(verify(&idx.root(), &l, &idx.prove(&l)), Ok(None));
    }
    // A stranger in the crowded bucket, sharing 24 bits with some.
    let mut near = crowded(1)[0];
    near[31] ^= 1;
    assert_eq!(verify(&idx.root(), &near, &idx.prove(&near)), Ok(None));
}

#[test]
fn a_changed_proof_is_rejected() {
    let mut idx = Index::new();
    let labels: Vec<Label> = (0..200).map(label).chain(crowded(10)).collect();
    idx.update(labels.iter().map(|l| (*l, value(3))));
    let root = idx.root();
    let l = labels[5];
    let p = idx.prove(&l);
    // Another value: one leaf more, or the fold of other leaves.
    let mut more = p.clone();
    more.terminal = Terminal::Leaf {
        label: l,
        value: value(4),
    };
    assert_eq!(verify(&root, &l, &more), Err(IndexError::Root));
    // Claimed absent: an empty subtree where its node is.
    let mut gone = p.clone();
    gone.terminal = Terminal::Empty;
    assert_eq!(verify(&root, &l, &gone), Err(IndexError::Root));
    // A sibling changed, left out or added.
    for i in 0..p.siblings.len() {
        let mut s = p.clone();
        s.siblings[i][0] ^= 1;
        assert_eq!(verify(&root, &l, &s), Err(IndexError::Root));
    }
    let mut short = p.clone();
    short.siblings.pop();
    assert!(verify(&root, &l, &short).is_err());
    let mut long = p.clone();
    long.siblings.push(EMPTY);
    assert!(verify(&root, &l, &long).is_err());
    // Another label's node shown for this one: off its path, or its own proof relabelled.
    let other = labels[6];
    let mut off = idx.prove(&other);
    off.terminal = Terminal::Leaf {
        label: other,
        value: value(3),
    };
    assert!(verify(&root, &l, &off).is_err());
    let too_deep = Proof {
        siblings: vec![EMPTY; 257],
        terminal: Terminal::Empty,
    };
    assert_eq!(verify(&root, &l, &too_deep), Err(IndexError::TooDeep(257)));
}

#[test]
fn the_hashes_are_the_documented_ones() {
    // SHA-256(0x02 ‖ 32 zero bytes ‖ u64be(5) ‖ 32 bytes 0x11), then the label's node.
    let v = Value::NONE.push(5, &[0x11; 32]);
    let mut pre = vec![0x02];
    pre.extend([0; 32]);
    pre.extend(5u64.to_be_bytes());
    pre.extend([0x11; 32]);
    assert_eq!(v.acc, <[u8; 32]>::from(Sha256::digest(&pre)));
    assert_eq!(v.count, 1);
    let mut node = vec![0x00];
    node.extend([0x22; 32]);
    node.extend(1u64.to_be_bytes());
    node.extend(v.acc);
    assert_eq!(
        leaf_hash(&[0x22; 32], &v),
        <[u8; 32]>::from(Sha256::digest(&node))
    );
    let mut inner = vec![0x01];
    inner.extend([0x33; 32]);
    inner.extend([0x44; 32]);
    assert_eq!(
        interior(&[0x33; 32], &[0x44; 32]),
        <[u8; 32]>::from(Sha256::digest(&inner))
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn incremental_updates_make_the_whole_trees_root(
        seeds in proptest::collection::vec(0u64..5000, 1..120),
        rounds in 1usize..6,
    ) {
        let mut idx = Index::new();
        let labels: Vec<Label> = seeds.iter().map(|s| label(*s)).collect();
        let per = labels.len().div_ceil(rounds);
        for (r, chunk) in labels.chunks(per).enumerate() {
            idx.update(chunk.iter().map(|l| (*l, value(1 + r as u64))));
        }
        prop_assert_eq!(idx.root(), whole(&idx, &labels));
        for l in labels.iter().take(20) {
            prop_assert_eq!(verify(&idx.root(), l, &idx.prove(l)), Ok(idx.get(l)));
        }
    }
}

#[test]
fn exactly_the_indexed_leaves_are_complete() {
    let hashes: Vec<Hash> = (0..6u8).map(|i| [i; 32]).collect();
    let leaves: Vec<(u64, Hash)> = [2u64, 5, 9]
        .iter()
        .map(|i| (*i, hashes[*i as usize % 6]))
        .collect();
    let mut idx = Index::new();
    let l = label(1);
    idx.update([
        (l, Value::of(leaves.iter().map(|(i, h)| (*i, h)))),
        (label(2), value(1)),
    ]);
    let (root, p) = (idx.root(), idx.prove(&l));
    assert_eq!(check_complete(&root, &l, &p, &leaves, 10), Ok(()));
    // One left out, one added, one replaced, out of order, beyond the index's size.
    assert_eq!(
        check_complete(&root, &l, &p, &leaves[..2], 10),
        Err(CompleteError::Count {
            indexed: 3,
            listed: 2
        })
    );
    let mut more = leaves.clone();
    more.push((9, [9; 32]));
    assert!(matches!(
        check_complete(&root, &l, &p, &more, 10),
        Err(CompleteError::Order(9))
    ));
    more.pop();
    more.push((11, [9; 32]));
    assert_eq!(
        check_complete(&root, &l, &p, &more, 20),
        Err(CompleteError::Count {
            indexed: 3,
            listed: 4
        })
    );
    let mut other = leaves.clone();
    other[1].1 = [7; 32];
    assert_eq!(
        check_complete(&root, &l, &p, &other, 10),
        Err(CompleteError::Fold)
    );
    other[1] = (6, leaves[1].1);
    assert_eq!(
        check_complete(&root, &l, &p, &other, 10),
        Err(CompleteError::Fold)
    );
    assert_eq!(
        check_complete(&root, &l, &p, &leaves, 9),
        Err(CompleteError::Beyond { leaf: 9, size: 9 })
    );
    // A label the index does not hold: complete with no leaf, and with any leaf not.
    let stranger = label(3);
    let q = idx.prove(&stranger);
    assert_eq!(check_complete(&root, &stranger, &q, &[], 10), Ok(()));
    assert!(check_complete(&root, &stranger, &q, &leaves[..1], 10).is_err());
    // Another label's proof shown for this one.
    assert!(check_complete(&root, &stranger, &p, &leaves, 10).is_err());
}
