//! The transparency log's text and byte formats: tile paths, hash tiles and entry bundles,
//! signed notes and checkpoints with their keys, cosignatures and the witness policy, and the
//! witness's `add-checkpoint` request body. Each has one spelling per value, so whatever parses
//! must encode back to the bytes it was read from.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use event_audit::test_support::witnessed::witness::add;
use event_audit::tlog::cosign::WitnessKey;
use event_audit::tlog::note::{claimed, open, Note, PrivateKey, PublicKey};
use event_audit::tlog::policy::WitnessPolicy;
use event_audit::tlog::tile::{parse_bundle, parse_hashes, push_entry, TileId, TILE_WIDTH};

use super::{log_key, policy};

/// A tile path (`tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`): what parses is written
/// back the same, and its geometry does not overflow.
pub fn tile_path(data: &[u8]) -> bool {
    let Ok(path) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(id) = TileId::parse(path) else {
        return false;
    };
    assert_eq!(id.path(), path, "a tile path read back as another");
    assert!((1..=TILE_WIDTH).contains(&u64::from(id.width)), "{id:?}");
    let (start, end) = id.leaves();
    assert!(start <= end, "{id:?}: leaves {start}..{end}");
    for size in [0, end, u64::MAX] {
        let _ = id.within(size);
    }
    true
}

/// A hash tile or an entry bundle: the first byte picks the kind and level (bit 0: a bundle),
/// the second the width (1 to 256), the rest is the tile. What parses has exactly the width's
/// hashes or entries and encodes back to the same bytes; a refusal names the tile's path.
pub fn tile_data(data: &[u8]) -> bool {
    let [kind, width, body @ ..] = data else {
        return false;
    };
    let width = u16::from(*width) + 1;
    let id = if kind & 1 == 1 {
        TileId::entries(u64::from(kind >> 1), width)
    } else {
        TileId::hashes((kind >> 1) % 64, 7, width)
    };
    let read = if kind & 1 == 1 {
        parse_bundle(&id, body).map(|entries| {
            assert_eq!(entries.len(), usize::from(width));
            let mut again = Vec::new();
            for e in entries {
                push_entry(&mut again, e).expect("an entry read from a bundle fits in one");
            }
            again
        })
    } else {
        parse_hashes(&id, body).map(|hashes| {
            assert_eq!(hashes.len(), usize::from(width));
            hashes.concat()
        })
    };
    match read {
        Ok(again) => {
            assert_eq!(again, body, "{}: read back as other bytes", id.path());
            true
        }
        Err(e) => {
            assert!(e.to_string().contains(&id.path()), "{e}");
            false
        }
    }
}

/// A signed note (and the checkpoint it signs) and key lines: a note is its text, a blank line
/// and its signature lines, each `— <name> <base64>` in canonical base64, so it reassembles to
/// the input; the checkpoint it claims is its text's first three lines; it opens with the
/// fixtures' key only to the checkpoint it claims. A key line read encodes to a key that reads
/// back the same.
pub fn note(data: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(data) else {
        return false;
    };
    let parsed = Note::parse(s);
    if let Ok(n) = &parsed {
        assert!(
            (1..=64).contains(&n.sigs.len()),
            "{} signatures",
            n.sigs.len()
        );
        let mut again = format!("{}\n", n.text);
        for sig in &n.sigs {
            let line = format!("\u{2014} {} {}", sig.name, B64.encode(&sig.blob));
            assert_eq!(sig.line, line, "a signature line read back as another");
            again.push_str(sig.line);
            again.push('\n');
        }
        assert_eq!(again, s, "a note read back as another");
    }
    let cp = claimed(s);
    if let (Ok(cp), Ok(n)) = (&cp, &parsed) {
        let body = format!("{}\n{}\n{}\n", cp.origin, cp.size, B64.encode(cp.root));
        assert!(
            n.text.starts_with(&body),
            "{cp:?} is not what {:?} says",
            n.text
        );
    }
    assert!(
        cp.is_err() || parsed.is_ok(),
        "a checkpoint claimed without a note"
    );
    if let Ok(opened) = open(s, &log_key().public()) {
        assert_eq!(
            Ok(opened),
            cp,
            "opened to another checkpoint than it claims"
        );
    }
    let mut key = false;
    if let Ok(k) = PublicKey::parse(s) {
        assert_eq!(PublicKey::parse(&k.encode()), Ok(k));
        key = true;
    }
    if let Ok(k) = PrivateKey::parse(s) {
        let again = PrivateKey::parse(&k.encode()).map(|p| p.public());
        assert_eq!(again, Ok(k.public()));
        key = true;
    }
    parsed.is_ok() || key
}

/// A witness policy, a witness key line, and a note held against the fixtures' policy: a
/// policy read has a quorum within its witnesses and reads back the same from its own lines;
/// a note that meets the policy is a note, cosigned by at least the quorum.
pub fn cosign(data: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(data) else {
        return false;
    };
    let mut accepted = false;
    if let Ok(p) = WitnessPolicy::parse(s) {
        // Every witness cosigning meets any quorum (1 <= k <= n in every group), and the policy
        // reads back the same from the tlog-policy lines it writes.
        let all = (0..p.witnesses.len()).collect();
        assert!(p.met_by(&all), "{p:?}");
        let again = p.encode();
        assert_eq!(
            WitnessPolicy::parse(&again),
            Ok(WitnessPolicy { legacy: false, ..p }),
            "{again}"
        );
        accepted = true;
    }
    if let Ok(k) = WitnessKey::parse(s) {
        assert_eq!(WitnessKey::parse(&k.encode()), Ok(k));
        accepted = true;
    }
    if let Ok(by) = policy().check(s) {
        assert!(!by.is_empty(), "{by:?}");
        assert!(Note::parse(s).is_ok());
        accepted = true;
    }
    accepted
}

/// The witness's request body (`old <size>`, at most 63 proof lines, a blank line, the note):
/// what parses encodes back to the same body, and its note opens, if at all, to the checkpoint
/// it claims.
pub fn witness_request(data: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(req) = add::parse(s) else {
        return false;
    };
    assert_eq!(req.body(), s, "a request read back as another");
    let proof = s.lines().skip(1).take_while(|l| !l.is_empty()).count();
    assert!(proof <= 63, "{proof} proof lines accepted");
    let note = &s[s.find("\n\n").map_or(s.len(), |i| i + 2)..];
    if let Ok(cp) = open(note, &log_key().public()) {
        assert_eq!(claimed(note), Ok(cp));
    }
    true
}

/// `index_delta`: an account index update's delta (`tlog::index::delta`), as a mirror fetches
/// it from a log's tiles: refused or read, and what is read is the one spelling of its bytes.
pub fn index_delta(data: &[u8]) -> bool {
    use event_audit::tlog::index::delta::Delta;
    match Delta::parse(data) {
        Ok(d) => {
            assert_eq!(d.encode(), data, "a delta read back as other bytes");
            assert!(
                d.pairs.windows(2).all(|w| w[0] < w[1]),
                "pairs out of order"
            );
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

/// `vrf_proof`: an account index label's VRF proof (RFC 9381 ECVRF-EDWARDS25519-SHA512-TAI) as a
/// bundle carries it, verified under the fixtures' index key for identifier `A-1`: refused, or
/// the label its output makes is the one the key's own proof makes.
pub fn vrf_proof(data: &[u8]) -> bool {
    use event_audit::tlog::index::{alpha, label_of, vrf_key};
    use event_audit::tlog::vrf;
    let key = vrf_key(log_key());
    match vrf::verify(&key.public(), &alpha("A-1"), data) {
        Ok(beta) => {
            assert_eq!(
                label_of(&beta),
                label_of(&key.output(&alpha("A-1"))),
                "another output"
            );
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}
