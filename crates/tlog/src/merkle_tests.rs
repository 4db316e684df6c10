//! Property tests of the Merkle tree against a straightforward reference (RFC 6962's MTH,
//! PATH and SUBPROOF, literally).
use super::*;
use proptest::prelude::*;

fn leaves(n: usize) -> Vec<Hash> {
    (0..n as u64).map(|i| leaf_hash(&i.to_be_bytes())).collect()
}

/// RFC 6962 PATH, literally.
fn ref_path(m: usize, d: &[Hash]) -> Vec<Hash> {
    if d.len() <= 1 {
        return vec![];
    }
    let k = split(d.len() as u64) as usize;
    if m < k {
        let mut p = ref_path(m, &d[..k]);
        p.push(root_of(&d[k..]));
        p
    } else {
        let mut p = ref_path(m - k, &d[k..]);
        p.push(root_of(&d[..k]));
        p
    }
}

/// RFC 6962 SUBPROOF, literally.
fn ref_subproof(m: usize, d: &[Hash], b: bool) -> Vec<Hash> {
    let n = d.len();
    if m == n {
        return if b { vec![] } else { vec![root_of(d)] };
    }
    let k = split(n as u64) as usize;
    if m <= k {
        let mut p = ref_subproof(m, &d[..k], b);
        p.push(root_of(&d[k..]));
        p
    } else {
        let mut p = ref_subproof(m - k, &d[k..], false);
        p.push(root_of(&d[..k]));
        p
    }
}

#[test]
fn known_roots() {
    assert_eq!(
        hex(&empty_root()),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // RFC 6962 test vector: the leaf hash of the empty leaf.
    assert_eq!(
        hex(&leaf_hash(&[])),
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    );
}

fn hex(h: &Hash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn frontier_matches_reference(n in 0usize..300) {
        let l = leaves(n);
        let mut f = Frontier::new();
        let mut completed = Vec::new();
        for h in &l {
            f.append(*h, |node, h| completed.push((node, *h)));
            prop_assert_eq!(f.root(), root_of(&l[..f.size() as usize]));
        }
        let t = MemTree { leaves: l.clone() };
        for (node, h) in completed {
            prop_assert_eq!(t.node(node), h);
        }
        let back = Frontier::from_bytes(f.size(), &f.to_bytes());
        prop_assert_eq!(back.as_ref(), Some(&f));
        for (node, h) in f.nodes() {
            prop_assert_eq!(&t.node(node), h);
        }
    }

    #[test]
    fn inclusion_matches_reference_and_verifies(n in 1usize..300, m in 0usize..300) {
        let m = m % n;
        let l = leaves(n);
        let t = MemTree { leaves: l.clone() };
        let p = t.inclusion(m as u64, n as u64);
        prop_assert_eq!(&p, &ref_path(m, &l));
        let root = root_of(&l);
        prop_assert_eq!(verify_inclusion(m as u64, n as u64, &l[m], &p, &root), Ok(()));
        // Any other leaf, index or a changed proof hash fails.
        let other = leaf_hash(b"other");
        prop_assert!(verify_inclusion(m as u64, n as u64, &other, &p, &root).is_err());
        if n > 1 {
            let m2 = (m + 1) % n;
            prop_assert!(verify_inclusion(m2 as u64, n as u64, &l[m], &p, &root).is_err());
            let mut bad = p.clone();
            bad[0][0] ^= 1;
            prop_assert!(verify_inclusion(m as u64, n as u64, &l[m], &bad, &root).is_err());
        }
    }

    #[test]
    fn consistency_matches_reference_and_verifies(n in 1usize..300, m in 1usize..300) {
        let m = 1 + (m - 1) % n;
        let l = leaves(n);
        let t = MemTree { leaves: l.clone() };
        let p = t.consistency(m as u64, n as u64);
        prop_assert_eq!(&p, &ref_subproof(m, &l, true));
        let (r1, r2) = (root_of(&l[..m]), root_of(&l));
        prop_assert_eq!(verify_consistency(m as u64, n as u64, &r1, &r2, &p), Ok(()));
        // A different history fails.
        let mut l2 = l.clone();
        l2[m - 1] = leaf_hash(b"forged");
        let r1f = root_of(&l2[..m]);
        prop_assert!(verify_consistency(m as u64, n as u64, &r1f, &r2, &p).is_err());
        if !p.is_empty() {
            let mut bad = p.clone();
            let last = bad.len() - 1;
            bad[last][5] ^= 0x80;
            prop_assert!(verify_consistency(m as u64, n as u64, &r1, &r2, &bad).is_err());
        }
        if m < n {
            prop_assert!(verify_consistency(m as u64 + 1, n as u64, &r1, &r2, &p).is_err());
        }
    }
}
