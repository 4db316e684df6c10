//! Evidence bundles checked by both verifiers, `event-audit verify-proof` and the independent
//! `tools/verify_bundle.py`, with the same verdicts: bundles over an in-memory tree (genuine;
//! one byte changed in a raw event, a leaf's data, a proof hash, the signature or the tree size;
//! a leaf whose raw field ends like a length-prefixed field, a leaf with bytes after its raw
//! field; leaf indexes that are not integers from 0; no entries; another origin; witness
//! policies met or not; each column left out, `columns` left out, a column added, for leaves of
//! versions 1 and 2 and format 1), and `prove`'s own bundles of real rows (real PostgreSQL and
//! NATS) with each field it shows relabelled or left out, and proven against the checkpoint a
//! witness policy accepts.
//! Subprocesses: the exit codes and messages are the point.

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::support::app::{run_until_idle, settings};
use crate::support::bundle::{bundle, cosign, flip, incomplete_columns, policy, row, Cases};
use crate::support::cli::{event_audit, Run};
use crate::support::records::{now_us, records};
use crate::support::witness::{write_keys, Witness};
use crate::support::{TestDb, TestStream};
use event_audit::config::{Dur, Settings};
use event_audit::evidence::bundle::fields::{time_text, time_us};
use event_audit::evidence::bundle::json::{self, Json, Keys};
use event_audit::tlog::cosign::WitnessSigner;
use event_audit::tlog::note::PrivateKey;

const ORIGIN: &str = "event-audit/ea_bundle_test";

/// A malformed message whose tail looks like a length-prefixed field: `… ‖ 5u64 ‖ "hello"`.
fn suffix_trick() -> Vec<u8> {
    let mut raw = b"not json ".to_vec();
    raw.extend_from_slice(&5u64.to_be_bytes());
    raw.extend_from_slice(b"hello");
    raw
}

/// Seven rows as ingest builds them, a leaf holding the suffix trick (index 7), a valid
/// encoding with one byte after it (index 8) and a row of encoding version 1 (index 9).
fn leaves() -> Vec<Vec<u8>> {
    // Row encoding 2 (its raw message inside the leaf): what the suffix trick is about.
    fn v2(
        r: &event_audit::test_support::row::record::Record,
    ) -> event_audit::test_support::row::canon::Canon<'_> {
        let mut c = r.canon();
        c.commitment = None;
        c
    }
    let recs = records("BUNDLE", 7, 1, now_us());
    let mut out: Vec<Vec<u8>> = recs.iter().map(|r| v2(r).encode()).collect();
    let raw = suffix_trick();
    let mut c = v2(&recs[0]);
    (c.raw, c.payload, c.status, c.stream_seq) = (&raw, None, "malformed", 8);
    out.push(c.encode());
    let mut trailing = v2(&recs[1]).encode();
    trailing.push(0);
    out.push(trailing);
    let mut v1 = v2(&recs[2]);
    (v1.catalogue, v1.stream_seq) = (None, 10);
    out.push(v1.encode());
    out
}

#[test]
fn both_verifiers_accept_a_genuine_bundle_and_reject_each_tampering() {
    let mut cases = Cases::default();
    let leaves = leaves();
    let key = PrivateKey::from_seed(ORIGIN, &rand::random()).expect("key");
    let k = key.public().encode();
    let (two, six) = (row(&leaves[2]), row(&leaves[6]));
    let good = bundle(ORIGIN, &key, &leaves, &[(2, &two), (6, &six)]);
    cases.expect(
        &good,
        &k,
        &[],
        &[],
        0,
        "OK: 2 entries proven against event-audit/ea_bundle_test at tree size 10",
    );
    cases.expect(&good, &k, &["--origin", ORIGIN], &[], 0, "tree size 10");
    cases.expect(
        &good,
        &k,
        &["--origin", "event-audit/another"],
        &[],
        1,
        "origin",
    );

    // One byte of a raw event; of a leaf's data; of a proof hash.
    let mut b = good.clone();
    b["entries"][1]["raw"] = flip(b["entries"][1]["raw"].as_str().expect("raw"), 3).into();
    cases.expect(&b, &k, &[], &[], 1, "entry 1 (stream BUNDLE seq 7): raw");
    let mut b = good.clone();
    b["entries"][0]["leaf_data"] =
        flip(b["entries"][0]["leaf_data"].as_str().expect("leaf"), 30).into();
    cases.expect(&b, &k, &[], &[], 1, "row hash");
    let mut b = good.clone();
    let proof = b["entries"][0]["inclusion_proof"][1]
        .as_str()
        .expect("proof")
        .to_owned();
    b["entries"][0]["inclusion_proof"][1] = flip(&proof, 0).into();
    cases.expect(&b, &k, &[], &[], 1, "inclusion proof");

    // The signature (a byte after the key id), the tree size it covers, another key.
    let note = good["checkpoint"].as_str().expect("note");
    let (body, sig) = note.trim_end().rsplit_once(' ').expect("signature line");
    let mut b = good.clone();
    b["checkpoint"] = format!("{body} {}\n", flip(sig, 10)).into();
    cases.expect(&b, &k, &[], &[], 1, "signature");
    let mut b = good.clone();
    b["checkpoint"] = note.replacen("\n10\n", "\n9\n", 1).into();
    cases.expect(&b, &k, &[], &[], 1, "signature");
    let other = PrivateKey::from_seed(ORIGIN, &rand::random()).expect("key");
    cases.expect(&good, &other.public().encode(), &[], &[], 1, "signature");

    // The suffix trick: the leaf ends with 5u64 ‖ "hello", but its raw field is the whole
    // message; a bundle showing only "hello" as the raw event is rejected.
    assert!(leaves[7].ends_with(&[&5u64.to_be_bytes()[..], b"hello"].concat()));
    let seven = row(&leaves[7]);
    let mut b = bundle(ORIGIN, &key, &leaves, &[(7, &seven)]);
    cases.expect(&b, &k, &[], &[], 0, "OK: 1 entry");
    b["entries"][0]["raw"] = B64.encode(b"hello").into();
    cases.expect(&b, &k, &[], &[], 1, "entry 0 (stream BUNDLE seq 8): raw");
    // A leaf with a byte after its raw field (its hash is in the tree all the same).
    let eight = &leaves[8];
    let shown = row(&eight[..eight.len() - 1]);
    let b = bundle(ORIGIN, &key, &leaves, &[(8, &shown)]);
    cases.expect(
        &b,
        &k,
        &[],
        &[],
        1,
        "leaf data: raw: bytes follow the raw message",
    );

    // Every column its format defines, no other: each one left out, `columns` left out, or one
    // more (even `null` for a column a version 1 leaf does not cover) is unusable input.
    assert_eq!(incomplete_columns(&mut cases, &good, &k), 18);
    let nine = row(&leaves[9]);
    let mut b = bundle(ORIGIN, &key, &leaves, &[(9, &nine)]);
    cases.expect(&b, &k, &[], &[], 0, "OK: 1 entry");
    assert_eq!(incomplete_columns(&mut cases, &b, &k), 14);
    b["entries"][0]["columns"]["catalogue"] = Value::Null;
    let what = "columns.catalogue: not a column of an event-audit-bundle/3 entry with a version 1";
    cases.expect(&b, &k, &[], &[], 2, what);

    // Not a usable bundle: leaf indexes that are not integers from 0, no entries, not JSON,
    // a repeated key, an unknown format.
    let bad = [
        json!(-1),
        json!(true),
        json!(2.0),
        json!(2.5),
        json!("2"),
        json!(null),
    ];
    for bad in bad {
        let mut b = good.clone();
        b["entries"][0]["leaf_index"] = bad;
        cases.expect(&b, &k, &[], &[], 2, "entries[0].leaf_index");
    }
    let mut b = good.clone();
    b["entries"] = json!([]);
    cases.expect(&b, &k, &[], &[], 2, "entries: none");
    let text = good.to_string();
    cases.expect_text(&text[..text.len() - 1], &k, &[], &[], 2, "not JSON");
    let twice = text.replacen('{', &format!("{{\"format\":{},", good["format"]), 1);
    cases.expect_text(&twice, &k, &[], &[], 2, "not JSON");
    let mut b = good.clone();
    b["format"] = "event-audit-bundle/9".into();
    cases.expect(&b, &k, &[], &[], 2, "format");

    // Format 1 is still read, with the same checks (its columns also held stream and seq, and
    // no payload place), and all of its columns too.
    let mut b = good.clone();
    b["format"] = "event-audit-bundle/1".into();
    for e in b["entries"].as_array_mut().expect("entries") {
        e.as_object_mut().expect("entry").remove("opening");
        let (stream, seq) = (e["stream"].clone(), e["stream_seq"].clone());
        let c = e["columns"].as_object_mut().expect("columns");
        c.remove("payload_place");
        c.extend([("stream".into(), stream), ("stream_seq".into(), seq)]);
    }
    cases.expect(&b, &k, &[], &[], 0, "OK: 2 entries");
    assert_eq!(incomplete_columns(&mut cases, &b, &k), 19);
    b["entries"][0]["columns"]["stream_seq"] = 99.into();
    cases.expect(&b, &k, &[], &[], 1, "field columns.stream_seq");
    cases.run();
}

#[test]
fn both_verifiers_hold_the_checkpoint_to_a_witness_policy() {
    let mut cases = Cases::default();
    let leaves = leaves();
    let key = PrivateKey::from_seed(ORIGIN, &rand::random()).expect("key");
    let k = key.public().encode();
    let three = row(&leaves[3]);
    let good = bundle(ORIGIN, &key, &leaves, &[(3, &three)]);
    let note = good["checkpoint"].as_str().expect("note").to_owned();
    let w = |name: &str, b: u8| WitnessSigner::from_seed(name, &[b; 32]).expect("witness");
    let (a, b, c) = (
        w("witness-a.example", 1),
        w("witness-b.example", 2),
        w("witness-c.example", 3),
    );
    let mut check = |note: &str, policy: &str, code: i32, what: &str| {
        let mut x = good.clone();
        x["checkpoint"] = note.into();
        let args = ["--witness-policy", "{dir}/witnesses"];
        cases.expect(&x, &k, &args, &[("witnesses", policy)], code, what);
    };
    // No cosignature; below the quorum (every witness by default); by a witness not in the
    // policy; a forged one (a byte of its signature).
    check(
        &note,
        &policy(&[&a], None),
        1,
        "(1 of 1) (cosigned by: none)",
    );
    check(
        &cosign(&note, &a, 7),
        &policy(&[&a, &b], None),
        1,
        "(2 of 2) (cosigned by: witness-a.example)",
    );
    check(
        &cosign(&note, &c, 7),
        &policy(&[&a], None),
        1,
        "(1 of 1) (cosigned by: none)",
    );
    let line = cosign(&note, &a, 7)[note.len()..].to_owned();
    let (name, sig) = line.trim_end().rsplit_once(' ').expect("cosignature line");
    let forged = format!("{note}{name} {}\n", flip(sig, 20));
    check(&forged, &policy(&[&a], None), 1, "does not verify");
    // The quorum met: two of three, a stranger's cosignature ignored.
    let two = cosign(&cosign(&cosign(&note, &a, 7), &c, 8), &w("stranger", 9), 9);
    check(
        &two,
        &policy(&[&a, &b, &c], Some(2)),
        0,
        "cosigned by witness-a.example, witness-c.example",
    );
    // A policy that cannot be read.
    check(
        &two,
        "witness nope https://x.example\n",
        2,
        "witness policy",
    );
    check(&two, &policy(&[&a], Some(2)), 2, "witness policy");
    // C2SP tlog-policy: nested groups, `quorum none`, and the log line held to the log's key.
    let (va, vb, vc) = (
        a.public().encode(),
        b.public().encode(),
        c.public().encode(),
    );
    let nested = format!(
        "log {k}\nwitness A {va}\nwitness B {vb}\nwitness C {vc}\ngroup AB all A B\ngroup top any AB C\nquorum top\n"
    );
    check(&two, &nested, 0, "cosigned by A, C");
    check(
        &cosign(&note, &a, 7),
        &nested,
        1,
        "quorum top (1 of 2) (cosigned by: A)",
    );
    check(&note, "quorum none\n", 0, "OK: 1 entry");
    let stranger_log = PrivateKey::from_seed("another/log", &[5; 32]).expect("key");
    let elsewhere = nested.replace(&k, &stranger_log.public().encode());
    check(&two, &elsewhere, 2, "do not name the log's key");
    cases.run();
}

fn signing(db: &TestDb, ts: &TestStream, key: &Path, stream: &str, dir: &Path) -> Settings {
    let mut s = settings(db, ts);
    s.ingest.batch_size = 15;
    s.witness.signing_key_file = Some(key.to_owned());
    s.witness.checkpoint_stream = stream.to_owned();
    s.witness.checkpoint_dir = Some(dir.to_owned());
    s.witness.checkpoint_interval = Dur::secs(3600);
    s
}

async fn prove(
    db: &TestDb,
    public: &Path,
    dir: &Path,
    stream: &str,
    seq: u64,
    extra: &[&str],
) -> Run {
    let (p, d, seq) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
        seq.to_string(),
    );
    let mut args = vec![
        "prove",
        "--database-url",
        &db.url,
        "--stream",
        stream,
        "--seq",
        &seq,
    ];
    args.extend(["--public-key", p, "--checkpoint-dir", d]);
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

/// The value at `path` in a bundle's JSON (an object key or an array index per step).
fn at<'a>(v: &'a mut Json, path: &str) -> &'a mut Json {
    path.split('.').fold(v, |v, step| match v {
        Json::Obj(m) => match m.iter().position(|(k, _)| k == step) {
            Some(i) => &mut m[i].1,
            None => {
                m.push((step.to_owned(), Json::Null));
                &mut m.last_mut().expect("pushed").1
            }
        },
        Json::Arr(a) => &mut a[step.parse::<usize>().expect("an index")],
        _ => panic!("no {step} in {path}"),
    })
}

const INVALID: &[u8] = br#"{"event":"account.created-v1","id":"bundle-invalid-1","time":"2026-01-02T03:04:05.123456Z","payload":{"account_number":"A-BUNDLE","account_user_emails":"not-a-list","big":123456789012345678901234567890,"f":1.50}}"#;

#[tokio::test]
async fn prove_shows_every_field_of_real_rows_and_both_verifiers_name_each_relabelled_one() {
    let mut checks = Cases::default();
    let db = TestDb::create().await;
    let ts = TestStream::create("bundles").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 5);
    let k = key.public().encode();
    let dir = tmp.path().join("checkpoints");
    // A checkpoint of 22 rows (20 of the load, an invalid event, the suffix trick), then 32.
    ts.publish_load(20, 31).await;
    let subject = ts.subject("crafted");
    let invalid = ts.publish(&subject, &[("X-Trace", "t-1")], INVALID).await;
    let malformed = ts.publish(&subject, &[], &suffix_trick()).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    ts.publish_load(10, 32).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;

    let p = prove(&db, &public, &dir, &ts.name, invalid, &[]).await;
    assert_eq!(p.code, Some(0), "{p:?}");
    let text = p.stdout;
    checks.expect_text(&text, &k, &["--origin", &origin], &[], 0, "tree size 32");
    // Every column read back from the leaf; the payload's numbers exactly as in the message.
    let bundle: Value = serde_json::from_str(&text).expect("json");
    let c = &bundle["entries"][0]["columns"];
    assert_eq!(c["status"], "invalid", "{c}");
    assert_eq!(c["account_number"], "A-BUNDLE", "{c}");
    assert_eq!(c["headers"], json!({"X-Trace": ["t-1"]}), "{c}");
    assert_eq!(c["unknown_fields"], json!(["big", "f"]), "{c}");
    assert_eq!(c["errors"][0]["path"], "account_user_emails", "{c}");
    assert_eq!(c["occurred_at"], "2026-01-02T03:04:05.123456Z", "{c}");
    assert!(
        c["payload_place"].is_array() && c["catalogue"].is_string(),
        "{c}"
    );
    assert!(
        text.contains("123456789012345678901234567890") && text.contains("1.50"),
        "{text}"
    );
    let keys: Vec<&str> = c
        .as_object()
        .expect("columns")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 18, "{keys:?}");
    // Not one of them may be left out, nor another added.
    let shown: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(incomplete_columns(&mut checks, &shown, &k), 18);

    // Each field relabelled: both verifiers reject it, naming it.
    let parsed = json::parse(&text, Keys::Unique).expect("prove writes strict JSON");
    let published = c["published_at"].as_str().expect("time");
    let later = time_text(time_us(published).expect("a bundle time") + 1).expect("in range");
    let seq = (invalid + 1).to_string();
    let cases: Vec<(&str, String)> = vec![
        ("stream", r#""OTHER""#.into()),
        ("stream_seq", seq),
        ("columns.published_at", format!("{later:?}")),
        ("columns.received_at", format!("{published:?}")),
        ("columns.subject", r#""x""#.into()),
        ("columns.delivery_count", "2".into()),
        ("columns.headers", r#"{"X-Trace":["t-2"]}"#.into()),
        ("columns.envelope", r#""cloudevents""#.into()),
        ("columns.event_id", r#""bundle-invalid-2""#.into()),
        ("columns.event_type", r#""account.deleted""#.into()),
        ("columns.event_version", r#""v2""#.into()),
        ("columns.status", r#""decoded""#.into()),
        ("columns.errors", "null".into()),
        ("columns.unknown_fields", r#"["big"]"#.into()),
        ("columns.account_number", r#""A-OTHER""#.into()),
        ("columns.occurred_at", "null".into()),
        ("columns.payload_place", "[0,1]".into()),
        ("columns.payload", "null".into()),
        ("columns.payload", r#"{"account_number":"A-BUNDLE","account_user_emails":"not-a-list","big":123456789012345678901234567891,"f":1.5}"#.into()),
        ("columns.payload_error", r#""too_deep""#.into()),
        ("columns.catalogue", r#""0000000000000000""#.into()),
    ];
    for (path, value) in cases {
        let mut b = parsed.clone();
        *at(&mut b, &format!("entries.0.{path}")) =
            json::parse(&value, Keys::Unique).expect("value");
        let what = format!("): field {path}: the bundle says");
        checks.expect_text(&b.to_string(), &k, &[], &[], 1, &what);
    }
    // The same payload written otherwise (keys reordered, 1.50 as 1.5e0) is the same JSON.
    let mut b = parsed.clone();
    *at(&mut b, "entries.0.columns.payload") = json::parse(r#"{"f":1.5e0,"big":123456789012345678901234567890,"account_user_emails":"not-a-list","account_number":"A-BUNDLE"}"#, Keys::Unique).expect("value");
    checks.expect_text(&b.to_string(), &k, &[], &[], 0, "OK: 1 entry");

    // The suffix trick in a real row: the raw event is the whole message, never its tail.
    let m = prove(&db, &public, &dir, &ts.name, malformed, &[]).await;
    assert_eq!(m.code, Some(0), "{m:?}");
    let mut b: Value = serde_json::from_str(&m.stdout).expect("json");
    assert_eq!(b["entries"][0]["columns"]["status"], "malformed");
    assert_eq!(b["entries"][0]["columns"]["payload"], Value::Null);
    b["entries"][0]["raw"] = B64.encode(b"hello").into();
    checks.expect(
        &b,
        &k,
        &[],
        &[],
        1,
        "raw: the bundle's raw bytes are not the leaf's raw field",
    );

    // A witness policy: only the checkpoint of 22 rows is cosigned. prove picks it (the newest
    // one meeting the quorum); the bundle of 32 rows does not meet the policy.
    let a = WitnessSigner::from_seed("witness-a.example", &[3; 32]).expect("witness");
    let first = dir.join(format!("{:020}.note", 22));
    let note = std::fs::read_to_string(&first).expect("the first checkpoint");
    std::fs::write(&first, cosign(&note, &a, 1_700_000_000)).expect("cosign");
    let pol = policy(&[&a], None);
    let pol_file = tmp.path().join("witnesses");
    std::fs::write(&pol_file, &pol).expect("policy");
    let pf = pol_file.to_str().expect("utf-8");
    let args = ["--witness-policy", "{dir}/w"];
    checks.expect_text(
        &text,
        &k,
        &args,
        &[("w", &pol)],
        1,
        "(1 of 1) (cosigned by: none)",
    );
    let w = prove(
        &db,
        &public,
        &dir,
        &ts.name,
        invalid,
        &["--witness-policy", pf],
    )
    .await;
    assert_eq!(w.code, Some(0), "{w:?}");
    checks.expect_text(
        &w.stdout,
        &k,
        &args,
        &[("w", &pol)],
        0,
        "tree size 22, cosigned by witness-a.example",
    );
    // A row after that checkpoint cannot be proven under the policy yet; a policy no
    // checkpoint meets gives no bundle.
    let late = prove(&db, &public, &dir, &ts.name, 25, &["--witness-policy", pf]).await;
    assert_eq!(late.code, Some(2), "{late:?}");
    assert!(
        late.stderr
            .contains("not yet covered by the checkpoint of size 22"),
        "{late:?}"
    );
    let b = WitnessSigner::from_seed("witness-b.example", &[4; 32]).expect("witness");
    std::fs::write(&pol_file, policy(&[&b], None)).expect("policy");
    let none = prove(
        &db,
        &public,
        &dir,
        &ts.name,
        invalid,
        &["--witness-policy", pf],
    )
    .await;
    assert_eq!(none.code, Some(2), "{none:?}");
    assert!(none.stderr.contains("quorum"), "{none:?}");
    checks.run();
}
