//! Tests of the tlog-proof format: written and read back byte for byte (with and without extra
//! data, a tree of one leaf), the spec's example layout, each malformed line refused, and each
//! verification step failing on its own tampering, naming its step.

use super::*;
use crate::cosign::WitnessSigner;
use crate::merkle::MemTree;
use crate::note::{Checkpoint, Note, PrivateKey};
use crate::policy::WitnessPolicy;

const ORIGIN: &str = "log.example/a";

fn log() -> PrivateKey {
    PrivateKey::from_seed(ORIGIN, &[1; 32]).unwrap()
}

fn witness(name: &str, b: u8) -> WitnessSigner {
    WitnessSigner::from_seed(name, &[b; 32]).unwrap()
}

/// Entries (row hashes) `[i; 32]` for `i < n`.
fn entries(n: u8) -> Vec<[u8; 32]> {
    (0..n).map(|i| [i; 32]).collect()
}

/// A proof of entry `index` in a tree of `n` entries, its checkpoint cosigned by `w`.
fn proof(n: u8, index: u64, w: &WitnessSigner) -> TlogProof {
    let tree = MemTree {
        leaves: entries(n).iter().map(|e| entry_leaf(e)).collect(),
    };
    let size = u64::from(n);
    let cp = Checkpoint {
        origin: ORIGIN.into(),
        size,
        root: tree.root(size),
    };
    let note = log().sign(&cp);
    let text = Note::parse(&note).unwrap().text.to_owned();
    TlogProof {
        extra: None,
        index,
        hashes: tree.inclusion(index, size),
        checkpoint: format!("{note}{}", w.cosign(&text, 1_700_000_000)),
    }
}

fn policy(w: &WitnessSigner) -> WitnessPolicy {
    let text = format!("witness w {}\ngroup g 1 w\nquorum g\n", w.public().encode());
    WitnessPolicy::parse(&text).unwrap()
}

#[test]
fn a_proof_round_trips_byte_for_byte_in_the_specs_layout() {
    let w = witness("w.example/1", 2);
    let p = proof(13, 6, &w);
    let text = p.encode();
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines[0], HEADER);
    assert_eq!(lines[1], "index 6");
    assert_eq!(
        p.hashes.len(),
        4,
        "a tree of 13: four hashes up to the root"
    );
    assert_eq!(lines[6], "", "an empty line before the checkpoint");
    assert!(text.ends_with(&p.checkpoint));
    assert!(is_tlog_proof(&text));
    assert_eq!(TlogProof::parse(&text), Ok(p.clone()));
    let extra = TlogProof {
        extra: Some(b"age-v1.2.1-darwin-arm64.tar.gz".to_vec()),
        ..p
    };
    let text = extra.encode();
    assert!(text.starts_with(&format!(
        "{HEADER}\nextra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6\nindex 6\n"
    )));
    assert_eq!(TlogProof::parse(&text), Ok(extra));
    // A tree of one leaf: no proof hash, the empty line right after the index.
    let one = proof(1, 0, &w);
    assert!(one.hashes.is_empty());
    assert!(one
        .encode()
        .starts_with(&format!("{HEADER}\nindex 0\n\n{ORIGIN}\n1\n")));
    assert_eq!(TlogProof::parse(&one.encode()), Ok(one));
}

#[test]
fn every_entry_of_a_tree_is_proven_and_only_its_own() {
    let w = witness("w.example/1", 2);
    let pol = policy(&w);
    let key = log().public();
    let accept = Accept {
        key: &key,
        origin: ORIGIN,
        policy: Some(&pol),
    };
    let all = entries(9);
    for (i, e) in all.iter().enumerate() {
        let p = TlogProof::parse(&proof(9, i as u64, &w).encode()).unwrap();
        let v = p.verify(&entry_leaf(e), &accept).unwrap();
        assert_eq!((v.index, v.checkpoint.size), (i as u64, 9));
        assert_eq!(v.cosigned_by, Some(vec!["w".to_owned()]));
        let other = &all[(i + 1) % all.len()];
        let err = p.verify(&entry_leaf(other), &accept).unwrap_err();
        assert_eq!(err.step(), 4, "{err}");
        // The entry itself is not its leaf hash: step 1 hashes it with 0x00 first.
        assert_eq!(p.verify(e, &accept).unwrap_err().step(), 4);
    }
}

#[test]
fn malformed_lines_are_refused_naming_the_line() {
    let w = witness("w.example/1", 2);
    let good = proof(5, 3, &w).encode();
    let hash1 = good.split('\n').nth(2).unwrap().to_owned();
    let cases: Vec<(String, FormatError)> = vec![
        (
            good.replacen(HEADER, "c2sp.org/tlog-proof@v2", 1),
            FormatError::Header,
        ),
        (format!("{{\"format\":1}}\n{good}"), FormatError::Header),
        (
            good.replacen("index 3\n", "extra !!\nindex 3\n", 1),
            FormatError::Extra,
        ),
        (
            good.replacen("index 3\n", "extra\nindex 3\n", 1),
            FormatError::Extra,
        ),
        (good.replacen("index 3", "index 03", 1), FormatError::Index),
        (good.replacen("index 3", "index -3", 1), FormatError::Index),
        (good.replacen("index 3", "leaf 3", 1), FormatError::Index),
        (good.replacen(&hash1, &hash1[..40], 1), FormatError::Hash(1)),
        (
            good.replacen(&hash1, &format!("{hash1}\r"), 1),
            FormatError::Control,
        ),
        (
            good.split("\n\n").next().unwrap().to_owned() + "\n",
            FormatError::NoCheckpoint,
        ),
        (
            good.split(ORIGIN).next().unwrap().to_owned(),
            FormatError::NoCheckpoint,
        ),
        (format!("{HEADER}\nindex 3"), FormatError::NoCheckpoint),
    ];
    for (text, want) in cases {
        assert_eq!(TlogProof::parse(&text), Err(want.clone()), "{text:?}");
        assert!(!want.to_string().is_empty());
    }
    let many = good.replacen(&hash1, &vec![hash1.as_str(); MAX_HASHES + 1].join("\n"), 1);
    assert_eq!(TlogProof::parse(&many), Err(FormatError::TooManyHashes));
    let long = format!("{HEADER}\nextra {}\n", "A".repeat(MAX_PROOF as usize));
    assert_eq!(TlogProof::parse(&long), Err(FormatError::TooLong));
    assert!(!is_tlog_proof("not a proof"));
}

#[test]
fn each_step_fails_on_its_own_tampering_and_names_itself() {
    let w = witness("w.example/1", 2);
    let pol = policy(&w);
    let key = log().public();
    let accept = Accept {
        key: &key,
        origin: ORIGIN,
        policy: Some(&pol),
    };
    let p = proof(6, 2, &w);
    let leaf = entry_leaf(&[2; 32]);
    assert!(p.verify(&leaf, &accept).is_ok());
    let step = |p: &TlogProof, a: &Accept<'_>| {
        let e = p.verify(&leaf, a).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("step {}", e.step())),
            "{e}"
        );
        (e.step(), e.to_string())
    };
    // Step 2: another origin asked; another key; a size the log did not sign.
    let other = Accept {
        origin: "log.example/b",
        ..accept
    };
    assert!(step(&p, &other).1.contains("(checkpoint origin)"));
    let stranger = PrivateKey::from_seed(ORIGIN, &[9; 32]).unwrap().public();
    let (n, why) = step(
        &p,
        &Accept {
            key: &stranger,
            ..accept
        },
    );
    assert!(n == 2 && why.contains("(log signature)"), "{why}");
    let resized = TlogProof {
        checkpoint: p.checkpoint.replacen("\n6\n", "\n7\n", 1),
        ..p.clone()
    };
    assert_eq!(step(&resized, &accept).0, 2);
    // Step 3: no cosignature by the policy's witness, or a cosignature that does not verify.
    let bare = TlogProof {
        checkpoint: log()
            .sign(&Checkpoint::parse_body(Note::parse(&p.checkpoint).unwrap().text).unwrap()),
        ..p.clone()
    };
    let (n, why) = step(&bare, &accept);
    assert!(n == 3 && why.contains("quorum"), "{why}");
    let other_text = format!("{ORIGIN}\n5\n{}\n", "A".repeat(43) + "=");
    let wrong = TlogProof {
        checkpoint: bare.checkpoint.clone() + &w.cosign(&other_text, 5),
        ..p.clone()
    };
    assert_eq!(step(&wrong, &accept).0, 3);
    // Without a policy, no cosignature is asked.
    let none = Accept {
        policy: None,
        ..accept
    };
    assert!(bare.verify(&leaf, &none).unwrap().cosigned_by.is_none());
    // Step 4: a proof hash flipped, one left out, another index.
    let mut flipped = p.clone();
    flipped.hashes[0][0] ^= 1;
    assert!(step(&flipped, &accept).1.contains("(inclusion proof)"));
    let mut short = p.clone();
    short.hashes.pop();
    assert_eq!(step(&short, &accept).0, 4);
    let moved = TlogProof {
        index: 3,
        ..p.clone()
    };
    assert_eq!(step(&moved, &accept).0, 4);
    let beyond = TlogProof { index: 6, ..p };
    assert_eq!(step(&beyond, &accept).0, 4);
}
