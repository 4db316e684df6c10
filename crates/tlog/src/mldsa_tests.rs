//! Tests of the ML-DSA-44 cosignatures: keys, the `subtree/v1` message, signing and verifying
//! on checkpoints, and Wycheproof's ML-DSA-44 and Ed25519 vectors run through our verifiers.

use super::*;
use crate::cosign::{ed25519_verifies, AnyWitnessSigner, WitnessKey, WitnessSigner};
use crate::note::{open, PrivateKey};

fn signer(name: &str, b: u8) -> MlDsaSigner {
    MlDsaSigner::from_seed(name, &[b; 32]).unwrap()
}

fn note() -> (PrivateKey, Checkpoint, String) {
    let log = PrivateKey::from_seed("log.example/a", &[1; 32]).unwrap();
    let cp = Checkpoint {
        origin: "log.example/a".into(),
        size: 12,
        root: [7; 32],
    };
    let n = log.sign(&cp);
    (log, cp, n)
}

#[test]
fn keys_round_trip_with_type_6() {
    let k = signer("w.example/pq", 2);
    let vkey = k.public().encode();
    let p = MlDsaKey::parse(&vkey).unwrap();
    assert_eq!(p, k.public());
    assert_eq!(
        B64.decode(vkey.splitn(3, '+').nth(2).unwrap())
            .unwrap()
            .len(),
        1 + PUBLIC_LEN
    );
    assert_eq!(p.id, key_id_of("w.example/pq", ALG_MLDSA44, &p.raw[..]));
    let again = MlDsaSigner::parse(&k.encode()).unwrap();
    assert_eq!(again.public(), p);
    // Through the witness types: the type byte chooses the algorithm.
    let w = WitnessKey::parse(&vkey).unwrap();
    assert_eq!(w.algorithm(), ALG_MLDSA44);
    assert_eq!(w.encode(), vkey);
    let any = AnyWitnessSigner::parse(&k.encode()).unwrap();
    assert_eq!(any.public(), w);
    assert!(w.same_key(&WitnessKey::from(signer("renamed.example", 2).public())));
    // An Ed25519 key of either kind is no ML-DSA-44 key, nor the reverse.
    let (log, _, _) = note();
    let ed = WitnessSigner::from_seed("w.example/ed", &[2; 32]).unwrap();
    assert!(MlDsaKey::parse(&log.public().encode()).is_err());
    assert!(MlDsaKey::parse(&ed.public().encode()).is_err());
    assert!(MlDsaSigner::parse(&ed.encode()).is_err());
    assert!(WitnessSigner::parse(&k.encode()).is_err());
    assert!(PrivateKey::parse(&k.encode()).is_err());
    assert!(!w.same_key(&ed.public()));
    // Another name with the same id, or an altered key, is refused.
    assert!(MlDsaKey::parse(&vkey.replacen("w.example/pq", "w.example/pr", 1)).is_err());
    let debug = format!("{k:?} {any:?}");
    assert!(debug.contains("redacted") && !debug.contains(&k.encode()[30..60]));
}

#[test]
fn the_message_is_the_spec_structure() {
    let s = Subtree {
        cosigner: "w.example/pq",
        time: 1_679_315_147,
        origin: "example.com/log",
        start: 0,
        end: 20_852_163,
        hash: [9; 32],
    };
    // The label as tlog-cosignature spells it: "subtree/v1", a newline and a NUL.
    let mut want = b"subtree/v1".to_vec();
    want.extend_from_slice(&[b'\n', 0]);
    want.push(12);
    want.extend_from_slice(b"w.example/pq");
    want.extend_from_slice(&1_679_315_147u64.to_be_bytes());
    want.push(15);
    want.extend_from_slice(b"example.com/log");
    want.extend_from_slice(&0u64.to_be_bytes());
    want.extend_from_slice(&20_852_163u64.to_be_bytes());
    want.extend_from_slice(&[9; 32]);
    assert_eq!(s.message().unwrap(), want);
    // A subtree starting after 0 claims no time; names are 1 to 255 bytes.
    let later = Subtree {
        start: 8,
        end: 12,
        ..s.clone()
    };
    assert!(later.message().is_err());
    assert!(Subtree { time: 0, ..later }.message().is_ok());
    let long = "o".repeat(256);
    assert!(Subtree {
        origin: &long,
        ..s.clone()
    }
    .message()
    .is_err());
    assert!(Subtree {
        cosigner: "",
        ..s.clone()
    }
    .message()
    .is_err());
    assert!(Subtree { time: 1 << 63, ..s }.message().is_err());
}

#[test]
fn cosignatures_verify_and_bind_the_checkpoint() {
    let (log, cp, n) = note();
    let k = signer("w.example/pq", 2);
    let text = Note::parse(&n).unwrap().text.to_owned();
    let line = k.cosign(&text, 1_700_000_000).unwrap();
    let cosigned = format!("{n}{line}");
    let parsed = Note::parse(&cosigned).unwrap();
    assert_eq!(k.public().cosigned(&parsed), Ok(Some(1_700_000_000)));
    assert_eq!(
        WitnessKey::from(k.public()).cosigned(&parsed),
        Ok(Some(1_700_000_000))
    );
    // The signature line is the key id, the time and 2420 bytes.
    let blob = &parsed.sigs[1].blob;
    assert_eq!(blob.len(), 4 + 8 + SIGNATURE_LEN);
    assert_eq!(blob[..4], k.public().id);
    // The same statement as a subtree: [0, size) with the root.
    let sub = Subtree::of_checkpoint("w.example/pq", 0, &cp);
    assert_eq!(
        k.public().verify_blob(&blob[4..], sub.clone()),
        Some(1_700_000_000)
    );
    // The log's Ed25519 signature still opens the note: the ML-DSA line is another key's.
    assert_eq!(open(&cosigned, &log.public()), Ok(cp.clone()));
    // Another tree: the same line does not verify, and rejects the note.
    let other = format!("{}{line}", n.replacen("\n12\n", "\n13\n", 1));
    assert!(k.public().cosigned(&Note::parse(&other).unwrap()).is_err());
    // Another time under the same signature does not verify.
    let mut moved = blob[4..].to_vec();
    moved[7] ^= 1;
    assert_eq!(k.public().verify_blob(&moved, sub.clone()), None);
    // Another key of the same name: its id differs, so the line is not its own.
    let v = signer("w.example/pq", 3);
    assert_eq!(v.public().cosigned(&parsed), Ok(None));
    // A flipped signature byte is rejected.
    let mut forged = blob.clone();
    forged[100] ^= 0x40;
    let forged = format!("{n}{DASH}w.example/pq {}\n", B64.encode(forged));
    assert!(k.public().cosigned(&Note::parse(&forged).unwrap()).is_err());
    // Signing another cosigner's statement is refused.
    assert!(k
        .blob(&Subtree::of_checkpoint("w.example/other", 0, &cp))
        .is_err());
}

#[test]
fn wycheproof_ml_dsa_44_verify() {
    use wycheproof::mldsa_verify::{TestName, TestSet};
    let set = TestSet::load(TestName::MlDsa44Verify).unwrap();
    let mut checked = 0;
    for g in &set.test_groups {
        let raw = <[u8; PUBLIC_LEN]>::try_from(&g.pubkey[..]);
        let key = raw.ok().and_then(|raw| MlDsaKey::new("w".into(), raw).ok());
        for t in &g.tests {
            // Our cosignatures use the empty context; a test with another is not ours to run.
            if t.ctx.as_ref().is_some_and(|c| !c.is_empty()) {
                continue;
            }
            let ok = key.as_ref().is_some_and(|k| k.verify(&t.msg, &t.sig));
            assert_eq!(ok, !t.result.must_fail(), "tc {} ({})", t.tc_id, t.comment);
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} vectors");
}

#[test]
fn wycheproof_ml_dsa_44_keys_and_deterministic_signatures() {
    use wycheproof::mldsa_sign::{TestName, TestSet};
    use wycheproof::TestResult;
    let set = TestSet::load(TestName::MlDsa44SignSeed).unwrap();
    let (mut keys, mut sigs) = (0, 0);
    for g in &set.test_groups {
        let (Some(seed), Some(public)) = (&g.privseed, &g.pubkey) else {
            continue;
        };
        let Ok(seed) = <[u8; 32]>::try_from(&seed[..]) else {
            continue;
        };
        let k = MlDsaSigner::from_seed("w", &seed).unwrap();
        assert_eq!(&k.public.raw[..], &public[..], "the key from seed ξ");
        keys += 1;
        for t in &g.tests {
            // Ours: the message itself, the empty context, the deterministic variant.
            let (Some(msg), None) = (&t.msg, &t.rnd) else {
                continue;
            };
            if t.ctx.as_ref().is_some_and(|c| !c.is_empty()) || t.result != TestResult::Valid {
                continue;
            }
            assert_eq!(k.sign(msg).unwrap()[..], t.sig[..], "tc {}", t.tc_id);
            assert!(k.public.verify(msg, &t.sig));
            sigs += 1;
        }
    }
    assert!(keys > 0 && sigs > 0, "{keys} keys, {sigs} signatures");
}

#[test]
fn wycheproof_ed25519_verify() {
    use ed25519_dalek::VerifyingKey;
    use wycheproof::eddsa::{TestName, TestSet};
    let set = TestSet::load(TestName::Ed25519).unwrap();
    let mut checked = 0;
    for g in &set.test_groups {
        let key = <[u8; 32]>::try_from(&g.key.pk[..])
            .ok()
            .and_then(|k| VerifyingKey::from_bytes(&k).ok());
        for t in &g.tests {
            let ok = key
                .as_ref()
                .is_some_and(|k| ed25519_verifies(k, &t.msg, &t.sig));
            assert_eq!(ok, !t.result.must_fail(), "tc {} ({})", t.tc_id, t.comment);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} vectors");
}
