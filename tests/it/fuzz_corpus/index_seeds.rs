//! The account index's seeds: an update's delta and a label's VRF proof, valid and spoiled.

use super::seeds::{add, Seed};
use super::targets::log_key;

/// The account index's delta and a label's VRF proof.
pub(super) fn index(out: &mut Vec<Seed>) {
    use event_audit::tlog::index::delta::Delta;
    use event_audit::tlog::index::{alpha, vrf_key};
    let d = Delta {
        record_leaf: 9,
        record: b"leaf data".to_vec(),
        opening: b"opening".to_vec(),
        pairs: vec![(2, [1; 32]), (2, [3; 32]), (5, [0; 32])],
    }
    .encode();
    add(out, "index_delta", "delta", d.clone(), true);
    add(out, "index_delta", "cut", &d[..d.len() - 1], false);
    let mut swapped = d.clone();
    let n = swapped.len();
    swapped[n - 80..].rotate_left(40);
    add(out, "index_delta", "pairs-out-of-order", swapped, false);
    let (proof, _) = vrf_key(log_key()).prove(&alpha("A-1"));
    add(out, "vrf_proof", "proof", proof.to_vec(), true);
    add(out, "vrf_proof", "cut", &proof[..79], false);
    let mut other = proof;
    other[40] ^= 1;
    add(out, "vrf_proof", "c-changed", other.to_vec(), false);
}
