//! The account index as an auditor and the person it is about meet it: a batch played by the
//! platform simulator and recorded with checkpoints signed (each round indexing the rows first),
//! then `prove --account <external number> --complete` hands out every row about the person
//! (their platform number followed from the import events), which both verifiers accept; a row
//! left out, a row added, another identifier's VRF proof, a link to an identifier the bundle does
//! not cover are each rejected by both. A number the log never saw is proven to map to nothing
//! (with the log's key, which makes its label). `verify` rebuilds the index and finds a changed
//! update; a mirror copies the index's deltas and `tiles fsck` rebuilds every root from them;
//! an erased person's labels stop linking to their numbers while their rows stay proven complete.

use serde_json::Value;

use crate::support::bundle::expect_text;
use crate::support::cli::{event_audit, Run};
use crate::support::sim::Sim;
use crate::support::witness::{signing, write_keys, Witness};
use crate::support::{run_until_idle, verify, TestDb, TestStream};
use event_audit::config::SimRates;
use event_audit::test_support::dev::sample::native;
use event_audit::tlog::index::delta::Delta;

/// `prove --account NUMBER --complete` against the checkpoints in `dir`, with `extra`.
async fn prove_complete(db: &TestDb, number: &str, public: &str, dir: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "prove",
        "--database-url",
        &db.url,
        "--account",
        number,
        "--complete",
        "--public-key",
        public,
        "--checkpoint-dir",
        dir,
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

/// The platform account number the import events give the external one.
async fn platform_of(db: &TestDb, ext: &str) -> String {
    sqlx::query_scalar(
        "SELECT DISTINCT payload ->> 'identifier' FROM audit.events \
         WHERE event_type LIKE 'data_import.import_process.%' \
           AND payload ->> 'external_identifier' = $1 AND payload ->> 'identifier' <> ''",
    )
    .bind(ext)
    .fetch_one(&db.pool)
    .await
    .expect("the platform number of an imported account")
}

/// The leaves of the rows that name any of `ids` (as a column or a string anywhere in the
/// payload), by the tree's order.
async fn leaves_naming(db: &TestDb, ids: &[&str]) -> Vec<u64> {
    let ids: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    let leaves: Vec<i64> = sqlx::query_scalar(
        "SELECT l.tree_size - l.row_count + r.rank FROM audit.chain_links l \
         CROSS JOIN LATERAL (SELECT e.account_number, e.payload, \
             (row_number() OVER (ORDER BY e.stream COLLATE \"C\", e.stream_seq, e.published_at)) - 1 AS rank \
             FROM audit.events e WHERE e.batch_id = l.batch_id) r \
         WHERE r.account_number = ANY($1) \
            OR jsonb_path_exists(r.payload, '$.** ? (@ == $ids[*])', jsonb_build_object('ids', to_jsonb($1))) \
         ORDER BY 1",
    )
    .bind(&ids)
    .fetch_all(&db.pool)
    .await
    .expect("the rows naming the person");
    leaves.into_iter().map(|l| l as u64).collect()
}

fn entry_leaves(b: &Value) -> Vec<u64> {
    b["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["leaf_index"].as_u64().expect("leaf index"))
        .collect()
}

#[tokio::test]
async fn a_persons_history_is_proven_complete_and_a_row_left_out_or_added_is_rejected() {
    let db = TestDb::create().await;
    let ts = TestStream::create("account_index").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 12);
    let dir = tmp.path().join("checkpoints");
    let sim = Sim::start(&ts, "ACME", 6, 46, SimRates::default()).await;
    let mut s = signing(&db, &ts, &private, &cps, &dir);
    s.witness.no_account_index = false;
    run_until_idle(s).await;
    let (p, d) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
    );
    let k = key.public().encode();
    let ext1 = sim.manifest.accounts[0].clone();
    let plat1 = platform_of(&db, &ext1).await;

    // Asked by the number the supplier knows: both numbers, every row naming either.
    let run = prove_complete(&db, &ext1, p, d, &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("complete through leaf"), "{run:?}");
    let bundle = run.json();
    assert_eq!(bundle["format"], "event-audit-bundle/4");
    let ids: Vec<&str> = bundle["completeness"]["identifiers"]
        .as_array()
        .expect("identifiers")
        .iter()
        .map(|c| c["identifier"].as_str().expect("identifier"))
        .collect();
    assert!(
        ids.contains(&ext1.as_str()) && ids.contains(&plat1.as_str()),
        "{ids:?}"
    );
    let through = bundle["completeness"]["record"]["leaf_index"]
        .as_u64()
        .expect("the record's leaf");
    let mut want = leaves_naming(&db, &[&ext1, &plat1]).await;
    want.retain(|l| *l < through);
    assert!(want.len() >= 3, "the person has rows: {want:?}");
    assert_eq!(
        entry_leaves(&bundle),
        want,
        "the bundle holds every row naming the person"
    );
    let text = bundle.to_string();
    let said = format!("complete: every row about its {} identifier(s)", ids.len());
    expect_text(&text, &k, &["--origin", &origin], &[], 0, &said);

    let rejected = |b: &Value, what: &str| {
        expect_text(&b.to_string(), &k, &[], &[], 1, what);
    };
    // A row left out: its leaf is still claimed.
    let mut short = bundle.clone();
    short["entries"].as_array_mut().expect("entries").pop();
    rejected(&short, "a row left out");
    // A row left out with its leaf: the index holds more leaves than the bundle lists.
    let mut less = short.clone();
    let gone = *entry_leaves(&bundle).last().expect("a leaf");
    for c in less["completeness"]["identifiers"]
        .as_array_mut()
        .expect("identifiers")
    {
        c["leaves"]
            .as_array_mut()
            .expect("leaves")
            .retain(|l| l.as_u64() != Some(gone));
    }
    rejected(&less, "the index holds");
    // A row of another person added.
    let ext2 = sim.manifest.accounts[1].clone();
    let other = prove_complete(&db, &ext2, p, d, &[]).await;
    assert_eq!(other.code, Some(0), "{other:?}");
    let stranger = other.json()["entries"][0].clone();
    let mut more = bundle.clone();
    more["entries"]
        .as_array_mut()
        .expect("entries")
        .push(stranger);
    rejected(&more, "a row added");
    // Another identifier's VRF proof: not this identifier's label.
    let mut swapped = bundle.clone();
    let second = swapped["completeness"]["identifiers"][1]["vrf_proof"].clone();
    swapped["completeness"]["identifiers"][0]["vrf_proof"] = second;
    rejected(&swapped, "VRF proof");
    // The platform number's claim dropped with the rows only it covers: the import events
    // still link the person to it.
    let mut unlinked = bundle.clone();
    let claims = unlinked["completeness"]["identifiers"]
        .as_array_mut()
        .expect("identifiers");
    let at = claims
        .iter()
        .position(|c| c["identifier"] == plat1.as_str())
        .expect("the platform number's claim");
    claims.remove(at);
    let kept: Vec<u64> = claims
        .iter()
        .flat_map(|c| c["leaves"].as_array().expect("leaves").iter())
        .filter_map(Value::as_u64)
        .collect();
    unlinked["entries"]
        .as_array_mut()
        .expect("entries")
        .retain(|e| kept.contains(&e["leaf_index"].as_u64().expect("leaf")));
    rejected(&unlinked, "links the person to an identifier");

    // A number the log never saw: its label needs the log's key; with it, no row.
    let none = prove_complete(&db, "NO-SUCH-ACCOUNT-1", p, d, &[]).await;
    assert_eq!(none.code, Some(2), "{none:?}");
    assert!(none.stderr.contains("--signing-key-file"), "{none:?}");
    let k_file = private.to_str().expect("utf-8");
    let empty = prove_complete(
        &db,
        "NO-SUCH-ACCOUNT-1",
        p,
        d,
        &["--signing-key-file", k_file],
    )
    .await;
    assert_eq!(empty.code, Some(0), "{empty:?}");
    let e = empty.json();
    assert_eq!(e["entries"].as_array().map(Vec::len), Some(0), "{e}");
    expect_text(&e.to_string(), &k, &[], &[], 0, "OK");
}

/// `event-audit erase --account NUMBER` (the person), its messages deleted from `stream`.
async fn erase(db: &TestDb, number: &str, stream: &str) -> Run {
    let args = [
        "erase",
        "--database-url",
        &db.url,
        "--account",
        number,
        "--reason",
        "erasure request 2026-311",
    ];
    event_audit(&args, &[("EVENT_AUDIT_STREAM", stream)]).await
}

async fn stored_labels(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit.index_labels")
        .fetch_one(&db.pool)
        .await
        .expect("count the labels")
}

#[tokio::test]
async fn verify_rebuilds_the_index_a_mirror_copies_it_and_an_erased_person_stays_complete() {
    let db = TestDb::create().await;
    let ts = TestStream::create("account_index_v").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 13);
    let (dir, tiles, mdir) = (
        tmp.path().join("checkpoints"),
        tmp.path().join("tiles"),
        tmp.path().join("mirror"),
    );
    let sim = Sim::start(&ts, "ACME", 5, 47, SimRates::default()).await;
    let signed = || {
        let mut s = signing(&db, &ts, &private, &cps, &dir);
        s.witness.tiles_dir = Some(tiles.clone());
        s.witness.no_account_index = false;
        s
    };
    run_until_idle(signed()).await;
    let (p, d, k_file) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
        private.to_str().expect("utf-8"),
    );

    // verify rebuilds the index from its updates and the rows.
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    let index = &v.report["index"];
    assert_eq!(index["ok"], true, "{index}");
    assert!(index["updates"].as_u64() >= Some(1), "{index}");
    assert!(index["rows_checked"].as_u64() > Some(0), "{index}");
    assert!(v.stderr.contains("account index intact"), "{v:?}");

    // A mirror copies the index's deltas with the tiles; fsck rebuilds every root from them.
    let t = tiles.to_str().expect("utf-8");
    let m = mdir.to_str().expect("utf-8");
    let pulled = event_audit(
        &["mirror", "--log-url", t, "--public-key", p, "--dir", m],
        &[],
    )
    .await;
    assert_eq!(pulled.code, Some(0), "{pulled:?}");
    let copy = crate::mirror::log::copy_of(&mdir, &origin);
    assert!(
        copy.join("index/latest").is_file(),
        "the copy has the index"
    );
    let c = copy.to_str().expect("utf-8");
    let fsck = event_audit(&["tiles", "fsck", c, "--public-key", p], &[]).await;
    assert_eq!(fsck.code, Some(0), "{fsck:?}");
    assert!(fsck.stdout.contains("account index's"), "{fsck:?}");

    // The person erased by the supplier's number: their labels no longer link to a number,
    // the index keeps their leaves and still verifies.
    let ext1 = sim.manifest.accounts[0].clone();
    let before = stored_labels(&db).await;
    let erased = erase(&db, &ext1, &ts.name).await;
    assert_eq!(erased.code, Some(0), "{erased:?}");
    assert_eq!(
        stored_labels(&db).await,
        before - 2,
        "both numbers' labels forgotten"
    );
    // More rows: another event of person 2 (a label gaining a leaf) and strangers (new labels).
    let plat2 = platform_of(&db, &sim.manifest.accounts[1]).await;
    let payload = serde_json::json!({ "account_number": plat2 });
    let msg = native(
        "account.occupied-v1",
        "later-1",
        "2026-12-01T00:00:00Z",
        &payload,
    );
    ts.publish(&ts.subject("load"), &[], &msg).await;
    ts.publish_load(30, 48).await;
    run_until_idle(signed()).await;
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["index"]["ok"], true, "{v:?}");
    // Asked by the erased number: its label needs the key now; with it, the erased rows.
    let none = prove_complete(&db, &ext1, p, d, &[]).await;
    assert_eq!(none.code, Some(2), "{none:?}");
    let run = prove_complete(&db, &ext1, p, d, &["--signing-key-file", k_file]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let b = run.json();
    let entries = b["entries"].as_array().expect("entries");
    assert!(!entries.is_empty(), "the erased rows are still proven: {b}");
    assert!(
        entries.iter().all(|e| e["opening"].is_null()),
        "erased: {b}"
    );
    assert!(!run.stdout.contains("@"), "no e-mail address in the bundle");
    expect_text(&b.to_string(), &key.public().encode(), &[], &[], 0, "OK");

    // The index only grew from its first update to its newest: proven, and refused changed.
    let grown = event_audit(
        &[
            "prove",
            "--database-url",
            &db.url,
            "--index-consistency",
            "1",
            "--public-key",
            p,
            "--checkpoint-dir",
            d,
        ],
        &[],
    )
    .await;
    assert_eq!(grown.code, Some(0), "{grown:?}");
    let proof = grown.json();
    assert!(
        proof["changes"].as_array().map_or(0, Vec::len) >= 2,
        "{proof}"
    );
    let consistent = |text: &str, code: i32, what: &str| {
        let f = tmp.path().join("consistency.json");
        std::fs::write(&f, text).expect("write the proof");
        let out = std::process::Command::new(crate::support::BIN)
            .args([
                "verify-proof",
                f.to_str().expect("utf-8"),
                "--public-key",
                p,
            ])
            .output()
            .expect("run verify-proof");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{said}");
        assert!(said.contains(what), "{said}");
    };
    consistent(&proof.to_string(), 0, "only grew into");
    let mut fewer = proof.clone();
    fewer["changes"].as_array_mut().expect("changes").remove(0);
    consistent(
        &fewer.to_string(),
        1,
        "another root than the second update's",
    );
    let mut other = proof.clone();
    other["changes"][0]["added"][0][1] = "00".repeat(32).into();
    consistent(&other.to_string(), 1, "REJECTED: index consistency");

    // A pair dropped from the first update's delta: the index it makes is not the recorded one.
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("no triggers");
    let bytes: Vec<u8> = sqlx::query_scalar("SELECT delta FROM audit.index_versions WHERE seq = 1")
        .fetch_one(&mut *tx)
        .await
        .expect("the first delta");
    let mut delta = Delta::parse(&bytes).expect("a delta");
    delta.pairs.pop();
    sqlx::query("UPDATE audit.index_versions SET delta = $1 WHERE seq = 1")
        .bind(delta.encode())
        .execute(&mut *tx)
        .await
        .expect("change the delta");
    tx.commit().await.expect("commit");
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(v.stderr.contains("account index BROKEN"), "{v:?}");
}
