//! Hostile input for every parser the crate reads untrusted bytes with, as bounded, seeded
//! property tests (issue 27, the ordinary-suite half of the fuzz targets): signed notes and
//! checkpoints and their keys, cosignatures and the witness policy, evidence bundles and leaf
//! data, the COPY row parser and the decoder. Each gets arbitrary input and mutations of a valid
//! input (a bit flipped, a byte inserted or deleted, a truncation, a line duplicated, bytes
//! spliced in): none may panic, and each keeps a property of its own (a signed input that no
//! longer opens, a parse that round-trips, a stream read the same in any chunking). The
//! witness's request body has its own file, `tests/it/hostile_witness_request.rs`.

use std::sync::LazyLock;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chrono::DateTime;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use crate::support::bundle::{bundle, cosign, flip, policy};
use crate::support::mutate::{config, mutation_with, Mutation};
use crate::support::records::records;
use event_audit::decode::verdict::{decode, Status};
use event_audit::evidence::bundle::{self, leaf, Expect, Proven};
use event_audit::test_support::dev::sample::realistic_mix;
use event_audit::test_support::row::pgcopy::CopyBuf;
use event_audit::test_support::verify::copy::Tuples;
use event_audit::tlog::cosign::{WitnessKey, WitnessSigner};
use event_audit::tlog::note::{claimed, open, Checkpoint, Note, PrivateKey, PublicKey};
use event_audit::tlog::policy::WitnessPolicy;

const ORIGIN: &str = "event-audit/hostile";

/// Mutations splicing in any bytes.
fn mutation() -> impl Strategy<Value = Mutation> {
    mutation_with(prop::collection::vec(any::<u8>(), 1..12))
}

/// Text shaped like notes, keys and policies, and any text at all.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,200}",
        "[a-zA-Z0-9+/=. \n#:—]{0,300}",
        prop::collection::vec(any::<u8>(), 0..300)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

struct Notes {
    log: PrivateKey,
    cp: Checkpoint,
    note: String,
    /// The note cosigned by both witnesses of `policy` (quorum 2).
    cosigned: String,
    policy: WitnessPolicy,
    witnesses: [WitnessSigner; 2],
}

static NOTES: LazyLock<Notes> = LazyLock::new(|| {
    let log = PrivateKey::from_seed(ORIGIN, &[1; 32]).expect("log key");
    let cp = Checkpoint {
        origin: ORIGIN.into(),
        size: 1234,
        root: [7; 32],
    };
    let note = log.sign(&cp);
    let witnesses = [
        WitnessSigner::from_seed("w.example/1", &[2; 32]).expect("witness key"),
        WitnessSigner::from_seed("w.example/2", &[3; 32]).expect("witness key"),
    ];
    let once = cosign(&note, &witnesses[0], 1_700_000_000);
    let cosigned = cosign(&once, &witnesses[1], 1_700_000_001);
    let policy =
        WitnessPolicy::parse(&policy(&[&witnesses[0], &witnesses[1]], Some(2))).expect("policy");
    Notes {
        log,
        cp,
        note,
        cosigned,
        policy,
        witnesses,
    }
});

proptest! {
    #![proptest_config(config(256))]

    /// Any text: key parsers round-trip what they accept; no note opens with the log's key.
    #[test]
    fn keys_and_notes_from_any_text(s in hostile_text()) {
        let n = &*NOTES;
        if let Ok(k) = PublicKey::parse(&s) {
            prop_assert_eq!(PublicKey::parse(&k.encode()), Ok(k));
        }
        if let Ok(k) = WitnessKey::parse(&s) {
            prop_assert_eq!(WitnessKey::parse(&k.encode()), Ok(k));
        }
        if let Ok(k) = PrivateKey::parse(&s) {
            prop_assert_eq!(PrivateKey::parse(&k.encode()).map(|p| p.public()), Ok(k.public()));
        }
        let _ = WitnessSigner::parse(&s);
        let _ = claimed(&s);
        prop_assert!(open(&s, &n.log.public()).is_err(), "arbitrary text opened: {s:?}");
        prop_assert!(n.policy.check(&s).is_err(), "arbitrary text met the policy: {s:?}");
    }

    /// A well-formed note with a made-up signature under the log's name and key id: it claims
    /// its checkpoint, and does not open.
    #[test]
    fn a_forged_signature_never_opens(
        origin in "[a-z][a-z0-9./-]{0,30}",
        size in any::<u64>(),
        root in any::<[u8; 32]>(),
        sig in prop::collection::vec(any::<u8>(), 0..80),
    ) {
        let key = NOTES.log.public();
        let text = format!("{origin}\n{size}\n{}\n", B64.encode(root));
        let blob: Vec<u8> = key.id.iter().copied().chain(sig).collect();
        let note = format!("{text}\n\u{2014} {} {}\n", key.name, B64.encode(blob));
        let cp = Checkpoint { origin, size, root };
        prop_assert_eq!(claimed(&note), Ok(cp));
        prop_assert!(open(&note, &key).is_err());
    }

    /// A valid signed note opens; a small change anywhere does not (a duplicated signature line
    /// may, to the same checkpoint); nothing opens to another checkpoint.
    #[test]
    fn a_changed_note_does_not_open(m in mutation()) {
        let n = &*NOTES;
        prop_assert_eq!(open(&n.note, &n.log.public()), Ok(n.cp.clone()));
        let (s, _) = m.apply_str(&n.note);
        let got = open(&s, &n.log.public());
        if s != n.note && m.is_small() {
            prop_assert!(got.is_err(), "{m:?} still opens: {s:?}");
        }
        if let Ok(cp) = got {
            prop_assert_eq!(cp, n.cp.clone());
        }
    }

    /// Keys: a changed key line parses, if at all, to the same key (trimmed space, or hex case).
    #[test]
    fn a_changed_key_is_refused_or_the_same(m in mutation()) {
        let n = &*NOTES;
        let (public, private) = (n.log.public(), n.log.encode());
        let (w, wp) = (n.witnesses[0].public(), n.witnesses[0].encode());
        if let Ok(k) = PublicKey::parse(&m.apply_str(&public.encode()).0) {
            prop_assert_eq!(k, public.clone());
        }
        if let Ok(k) = PrivateKey::parse(&m.apply_str(&private).0) {
            prop_assert_eq!(k.public(), public);
        }
        if let Ok(k) = WitnessKey::parse(&m.apply_str(&w.encode()).0) {
            prop_assert_eq!(k, w.clone());
        }
        if let Ok(k) = WitnessSigner::parse(&m.apply_str(&wp).0) {
            prop_assert_eq!(k.public(), w);
        }
    }

}

proptest! {
    // Two Ed25519 verifications a case, slow in debug builds: fewer cases.
    #![proptest_config(config(128))]

    /// Cosignatures bind the text: the policy's check passes on the cosigned note, and on a
    /// changed one only when its text is the same; a small change in the text fails it.
    #[test]
    fn a_changed_cosigned_note_fails_the_policy(m in mutation()) {
        let n = &*NOTES;
        let names = vec!["w.example/1".to_owned(), "w.example/2".to_owned()];
        prop_assert_eq!(n.policy.check(&n.cosigned), Ok(names.clone()));
        let text = Note::parse(&n.cosigned).expect("note").text;
        let (s, at) = m.apply_str(&n.cosigned);
        let got = n.policy.check(&s);
        if m.is_small() && at < text.len() {
            prop_assert!(got.is_err(), "{m:?} in the text still meets the policy: {s:?}");
        }
        if let Ok(by) = got {
            prop_assert_eq!(by, names);
            prop_assert_eq!(Note::parse(&s).map(|x| x.text.to_owned()), Ok(text.to_owned()));
        }
    }

    /// Policies: any text or a changed valid policy parses, if at all, to a policy whose
    /// quorum is within its witnesses and that reads back the same from its own lines.
    #[test]
    fn policies_parse_consistently(s in hostile_text(), m in mutation()) {
        let n = &*NOTES;
        let valid = policy(&[&n.witnesses[0], &n.witnesses[1]], Some(2));
        for text in [s, m.apply_str(&valid).0] {
            if let Ok(p) = WitnessPolicy::parse(&text) {
                // Every witness cosigning meets any quorum (1 <= k <= n in every group), and
                // the policy reads back the same from the tlog-policy lines it writes.
                let all = (0..p.witnesses.len()).collect();
                prop_assert!(p.met_by(&all));
                let again = p.encode();
                prop_assert_eq!(WitnessPolicy::parse(&again), Ok(WitnessPolicy { legacy: false, ..p }));
            }
        }
    }
}

struct Bundles {
    key: PublicKey,
    expect: Expect,
    value: Value,
    proven: Proven,
    leaves: Vec<Vec<u8>>,
}

static BUNDLES: LazyLock<Bundles> = LazyLock::new(|| {
    let t0 = DateTime::from_timestamp_micros(1_764_000_000_000_000).expect("t0");
    let recs = records("HOSTILE", 5, 1, t0);
    let leaves: Vec<Vec<u8>> = recs.iter().map(|r| r.canon().encode()).collect();
    let (log, w) = (&NOTES.log, &NOTES.witnesses[0]);
    // Row encoding 3: the entries open their leaves' commitments (raw and personal columns).
    let (one, four) = (recs[1].canon(), recs[4].canon());
    let mut value = bundle(ORIGIN, log, &leaves, &[(1, &one), (4, &four)]);
    let note = value["checkpoint"].as_str().expect("checkpoint").to_owned();
    value["checkpoint"] = cosign(&note, w, 1_700_000_000).into();
    let expect = Expect {
        origin: Some(ORIGIN.into()),
        policy: Some(WitnessPolicy::parse(&policy(&[w], None)).expect("policy")),
    };
    let proven =
        bundle::check(&value.to_string(), Some(&log.public()), &expect).expect("a valid bundle");
    assert_eq!(proven.entries, 2);
    Bundles {
        key: log.public(),
        expect,
        value,
        proven,
        leaves,
    }
});

proptest! {
    // Each case verifies signatures and JSON in debug builds: fewer cases.
    #![proptest_config(config(128))]

    /// Any text is refused; a changed bundle is refused or proves exactly what the valid one
    /// proves (JSON whitespace, say).
    #[test]
    fn bundles_from_hostile_text(s in hostile_text(), m in mutation()) {
        let b = &*BUNDLES;
        prop_assert!(bundle::check(&s, Some(&b.key), &b.expect).is_err());
        let _ = bundle::check(&s, None, &Expect::default());
        let (changed, _) = m.apply_str(&b.value.to_string());
        if let Ok(p) = bundle::check(&changed, Some(&b.key), &b.expect) {
            prop_assert_eq!(p, b.proven.clone(), "{:?} proves something else", m);
        }
        let _ = bundle::check(&changed, None, &Expect::default());
    }

    /// One byte changed inside any piece of evidence of an entry, or its place or sequence
    /// number changed: the bundle is rejected.
    #[test]
    fn changed_evidence_is_rejected(entry in 0usize..2, what in 0u8..6, at in any::<Index>()) {
        let b = &*BUNDLES;
        let mut v = b.value.clone();
        let e = &mut v["entries"][entry];
        let field = |e: &Value, k: &str| e[k].as_str().expect("a string").to_owned();
        match what {
            0 | 1 => {
                let k = ["leaf_data", "raw"][what as usize];
                let len = B64.decode(field(e, k)).expect("base64").len();
                e[k] = flip(&field(e, k), at.index(len)).into();
            }
            2 => {
                let proof = e["inclusion_proof"].as_array_mut().expect("proof");
                let i = at.index(proof.len());
                proof[i] = flip(proof[i].as_str().expect("hash"), at.index(32)).into();
            }
            3 => {
                let (mut h, p) = (field(e, "row_hash").into_bytes(), at.index(64));
                h[p] = if h[p] == b'0' { b'1' } else { b'0' };
                e["row_hash"] = String::from_utf8(h).expect("hex").into();
            }
            4 => e["leaf_index"] = (e["leaf_index"].as_u64().expect("index") + 1 + at.index(3) as u64).into(),
            _ => e["stream_seq"] = (e["stream_seq"].as_i64().expect("seq") + 1 + at.index(3) as i64).into(),
        }
        prop_assert!(bundle::check(&v.to_string(), Some(&b.key), &b.expect).is_err());
    }

    /// Leaf data is read strictly: whatever it accepts (from any bytes, or a changed valid
    /// leaf) is exactly the encoding of the row it reads.
    #[test]
    fn leaf_data_reads_back_to_itself(
        tail in prop::collection::vec(any::<u8>(), 0..300),
        tag in 0u8..3,
        which in any::<Index>(),
        m in mutation(),
    ) {
        let tags: [&[u8]; 3] = [b"", b"event-audit row v1\0", b"event-audit row v2\0"];
        let any_bytes: Vec<u8> = tags[tag as usize].iter().copied().chain(tail).collect();
        let valid = &BUNDLES.leaves[which.index(BUNDLES.leaves.len())];
        prop_assert_eq!(leaf::parse(valid).map(|c| c.encode()), Ok(valid.clone()));
        for data in [any_bytes, m.apply(valid).0] {
            if let Ok(c) = leaf::parse(&data) {
                prop_assert_eq!(c.encode(), data);
            }
        }
    }
}

const HEADER_LEN: usize = 19;

/// A verify stream (`link_seq`, then the row) of the rows of `records`.
static COPY: LazyLock<(Vec<u8>, Vec<String>)> = LazyLock::new(|| {
    let t0 = DateTime::from_timestamp_micros(1_764_000_000_000_000).expect("t0");
    let recs = records("HOSTILE", 4, 2, t0);
    let mut out = CopyBuf::with_capacity(0).finish();
    out.truncate(HEADER_LEN);
    let mut shown = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let view = r.view(3);
        let mut one = CopyBuf::with_capacity(0);
        view.encode(&mut one);
        let one = one.finish();
        let fields = &one[HEADER_LEN + 2..one.len() - 2];
        let count = i16::from_be_bytes([one[HEADER_LEN], one[HEADER_LEN + 1]]) + 1;
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&8i32.to_be_bytes());
        out.extend_from_slice(&(i as i64 * 10).to_be_bytes());
        out.extend_from_slice(fields);
        shown.push(format!("{} {view:?}", i * 10));
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    (out, shown)
});

/// Every row `Tuples` reads from `data` pushed in chunks ending at `cuts`, and how it ended.
fn read_copy(data: &[u8], cuts: &[Index]) -> (Vec<String>, Result<(), String>) {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
    ends.push(data.len());
    ends.sort_unstable();
    let (mut t, mut rows, mut start) = (Tuples::new(), Vec::new(), 0);
    for end in ends {
        t.push(&data[start..end]);
        start = end;
        loop {
            match t.next_row() {
                Ok(Some((seq, r))) => rows.push(format!("{seq} {r:?}")),
                Ok(None) => break,
                Err(e) => return (rows, Err(e.to_string())),
            }
        }
    }
    (rows, t.finish().map_err(|e| e.to_string()))
}

proptest! {
    #![proptest_config(config(256))]

    /// The valid stream reads back the rows written, in any chunking.
    #[test]
    fn copy_rows_read_back_in_any_chunking(cuts in prop::collection::vec(any::<Index>(), 0..12)) {
        let (data, shown) = &*COPY;
        prop_assert_eq!(read_copy(data, &cuts), (shown.clone(), Ok(())));
    }

    /// Any bytes (after a valid header or not) and any change of the valid stream: no panic,
    /// and the same rows and ending whether pushed whole or in chunks.
    #[test]
    fn copy_streams_read_the_same_whole_or_in_chunks(
        tail in prop::collection::vec(any::<u8>(), 0..400),
        header in any::<bool>(),
        m in mutation(),
        cuts in prop::collection::vec(any::<Index>(), 1..8),
    ) {
        let (data, _) = &*COPY;
        let start = if header { &data[..HEADER_LEN + 2] } else { &[][..] };
        let any_bytes: Vec<u8> = start.iter().copied().chain(tail).collect();
        for bytes in [any_bytes, m.apply(data).0] {
            let whole = read_copy(&bytes, &[]);
            prop_assert_eq!(read_copy(&bytes, &cuts), whole);
        }
    }
}

/// Realistic messages, most of them valid: the inputs the decoder's mutations start from.
static MESSAGES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let all = realistic_mix(24, 27);
    let decoded = all
        .iter()
        .filter(|m| decode(m, None).status == Status::Decoded);
    assert!(
        decoded.count() * 2 > all.len(),
        "most realistic messages decode"
    );
    all
});

/// The verdict's status invariants, and that the same bytes get the same verdict.
fn check_decode(bytes: &[u8]) -> Result<(), TestCaseError> {
    let v = decode(bytes, None);
    prop_assert_eq!(Status::parse(v.status.as_str()), Some(v.status));
    match v.status {
        Status::Decoded => prop_assert!(v.errors.is_empty() && v.event.is_some()),
        Status::Invalid => prop_assert!(!v.errors.is_empty() && v.event.is_none()),
        Status::Malformed => prop_assert!(v.errors.len() == 1 && v.event.is_none()),
        Status::UnknownType | Status::UnknownVersion => {
            prop_assert!(v.errors.is_empty() && v.name.is_some())
        }
    }
    prop_assert_eq!(format!("{v:?}"), format!("{:?}", decode(bytes, None)));
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes, and any change of a realistic message: no panic, and a consistent verdict.
    #[test]
    fn the_decoder_under_hostile_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        which in any::<Index>(),
        m in mutation(),
    ) {
        check_decode(&bytes)?;
        let msg = &MESSAGES[which.index(MESSAGES.len())];
        check_decode(msg)?;
        check_decode(&m.apply(msg).0)?;
    }
}
