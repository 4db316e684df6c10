//! The consistency proof's tests: two updates of an index (new labels, labels gaining leaves,
//! labels in crowded buckets), the proof made from the first and checked against the second;
//! a label left out, a leaf removed, a value rewritten, a pruned tree changed or hiding a path
//! are each refused; the bytes read back.

use proptest::prelude::*;
use sha2::{Digest, Sha256};

use super::super::memory::Index;
use super::super::{Label, Value};
use super::*;

fn label(seed: u64) -> Label {
    Sha256::digest(seed.to_be_bytes()).into()
}

fn h(i: u64) -> Hash {
    Sha256::digest(i.to_le_bytes()).into()
}

/// The first index: labels 0..n with leaves 0..n (one each); the changes: labels `touched`
/// (old and new) gaining leaves from `size` on.
/// Two indexes, the first's labels sorted, and the changes between them.
type Case = (
    Index,
    Index,
    Vec<(Label, Value)>,
    Vec<(Label, Vec<(u64, Hash)>)>,
);

fn case(n: u64, touched: &[u64], size: u64) -> Case {
    let mut first = Index::new();
    let all: Vec<(Label, Value)> = (0..n)
        .map(|i| (label(i), Value::NONE.push(i, &h(i))))
        .collect();
    first.update(all.clone());
    let mut second = first.clone();
    let mut changes: Vec<(Label, Vec<(u64, Hash)>)> = touched
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let leaf = size + k as u64 * 2;
            (label(*t), vec![(leaf, h(leaf)), (leaf + 1, h(leaf + 1))])
        })
        .collect();
    changes.sort_by_key(|c| c.0);
    changes.dedup_by_key(|c| c.0);
    second.update(changes.iter().map(|(l, leaves)| {
        let old = first.get(l).unwrap_or(Value::NONE);
        (*l, leaves.iter().fold(old, |v, (i, x)| v.push(*i, x)))
    }));
    let mut sorted = all;
    sorted.sort_by_key(|(l, _)| *l);
    (first, second, sorted, changes)
}

fn side(idx: &Index, size: u64) -> Side {
    Side {
        root: idx.root(),
        size,
        labels: idx.len() as u64,
    }
}

fn proof(sorted: &[(Label, Value)], changes: &[(Label, Vec<(u64, Hash)>)]) -> Pruned {
    let changed: Vec<Label> = changes.iter().map(|c| c.0).collect();
    Pruned::of(sorted, &changed, 0)
}

#[test]
fn an_index_that_only_grew_is_proven_so() {
    let (first, second, sorted, changes) = case(300, &[3, 7, 1000, 1001, 250], 400);
    let t = proof(&sorted, &changes);
    assert_eq!(
        check(&side(&first, 400), &side(&second, 500), t.clone(), &changes),
        Ok(())
    );
    // The bytes read back to the same tree.
    let mut b = Vec::new();
    t.encode(&mut b);
    assert_eq!(Pruned::parse(&b), Ok(t));
    // No change at all.
    let none = proof(&sorted, &[]);
    assert_eq!(
        check(&side(&first, 400), &side(&first, 400), none, &[]),
        Ok(())
    );
}

#[test]
fn a_change_left_out_or_a_history_rewritten_is_refused() {
    let (first, second, sorted, changes) = case(200, &[3, 7, 900], 300);
    let (a, b) = (side(&first, 300), side(&second, 400));
    let t = proof(&sorted, &changes);
    // A changed label left out (the tree still open along its path).
    assert_eq!(
        check(&a, &b, t.clone(), &changes[1..]),
        Err(ConsistencyError::SecondRoot)
    );
    // A leaf dropped from a change, or one the second update did not index.
    let mut fewer = changes.clone();
    fewer[0].1.pop();
    assert_eq!(
        check(&a, &b, t.clone(), &fewer),
        Err(ConsistencyError::SecondRoot)
    );
    let mut early = changes.clone();
    early[0].1[0].0 = 10;
    assert_eq!(
        check(&a, &b, t.clone(), &early),
        Err(ConsistencyError::Leaves(0))
    );
    // The second index with one label's old leaves rewritten: no fold of added leaves makes it.
    let mut rewritten = second.clone();
    rewritten.update([(label(5), Value::NONE.push(5, &[9; 32]))]);
    let c = side(&rewritten, 400);
    assert_eq!(
        check(&a, &c, t.clone(), &changes),
        Err(ConsistencyError::SecondRoot)
    );
    let mut with5 = changes.clone();
    with5.push((label(5), vec![(399, [9; 32])]));
    with5.sort_by_key(|c| c.0);
    let t5 = proof(&sorted, &with5);
    assert_eq!(check(&a, &c, t5, &with5), Err(ConsistencyError::SecondRoot));
    // A pruned tree that hides a changed label's path, or is not the first index.
    let hidden = Pruned::Off(first.root_node());
    assert_eq!(
        check(&a, &b, hidden, &changes),
        Err(ConsistencyError::Hidden(0))
    );
    let mut other = t.clone();
    if let Pruned::Split(l, _) = &mut other {
        **l = Pruned::Off(Node {
            hash: [1; 32],
            count: 2,
        });
    }
    assert_eq!(
        check(&a, &b, other, &changes),
        Err(ConsistencyError::FirstRoot)
    );
    // Out of order, and the label count the records state.
    let mut swapped = changes.clone();
    swapped.swap(0, 1);
    assert_eq!(
        check(&a, &b, t.clone(), &swapped),
        Err(ConsistencyError::Order(1))
    );
    let more = Side {
        labels: b.labels + 1,
        ..b
    };
    assert!(matches!(
        check(&a, &more, t, &changes),
        Err(ConsistencyError::Labels { .. })
    ));
}

#[test]
fn the_bytes_are_read_strictly() {
    let (_, _, sorted, changes) = case(50, &[1, 99], 60);
    let mut b = Vec::new();
    proof(&sorted, &changes).encode(&mut b);
    for cut in 0..b.len() {
        assert!(Pruned::parse(&b[..cut]).is_err(), "cut at {cut}");
    }
    let mut more = b.clone();
    more.push(0);
    assert!(Pruned::parse(&more).is_err());
    assert!(Pruned::parse(&[3]).is_err());
    // Splits deeper than a label's bits.
    let deep = vec![2u8; 300];
    assert!(Pruned::parse(&deep).is_err());
    // An empty subtree whose hash is not the empty one.
    let mut e = vec![0u8];
    e.extend([1; 32]);
    e.extend(0u64.to_be_bytes());
    assert!(Pruned::parse(&e).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn any_growth_is_proven(n in 1u64..200, touched in proptest::collection::vec(0u64..400, 0..40)) {
        let (first, second, sorted, changes) = case(n, &touched, 1000);
        let t = proof(&sorted, &changes);
        prop_assert_eq!(check(&side(&first, 1000), &side(&second, 2000), t, &changes), Ok(()));
    }
}
