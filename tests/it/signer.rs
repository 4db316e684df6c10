//! The checkpoint signer against real PostgreSQL, NATS and a witness process: a head the
//! writer role forged (a link claiming leaves no rows make, its right edge of its choosing) is
//! never signed (the signer refuses, says why, the metric falls to 0); a note the writer role
//! inserts into the checkpoint queue is never published; two daemons on one consumer, each
//! with its own memory, produce one strictly increasing sequence of checkpoints, every one
//! cosigned by the witness; a row deleted below a witnessed checkpoint makes the witnesses'
//! consistency proof impossible, which is a refusal for corruption (not a witness outage), and
//! the checkpoints signed before the witness policy was in force are summarised once by
//! `verify`, not reported one by one at every run; a new key's missing memory file is no lost
//! memory, and a lost one's gauge clears once the signer has written the file again.

use std::path::Path;
use std::time::Duration;

use crate::support::app::{run_until_idle, settings, spawn_app};
use crate::support::db::as_superuser;
use crate::support::witness::{
    in_process_signer, verify_witness, witness_with_policy, write_keys, Witness,
};
use crate::support::{TestDb, TestStream};
use event_audit::config::Dur;
use event_audit::test_support::bus::Bus;
use event_audit::test_support::row::chain::{batch_digest, link_hash_v2};
use event_audit::test_support::witnessed::signer::publish;
use event_audit::tlog::merkle::{leaf_hash, Frontier};
use event_audit::tlog::note::{self, Checkpoint, PrivateKey};
use event_audit::tlog::policy::WitnessPolicy;

#[tokio::test]
async fn a_forged_head_or_queued_note_is_never_signed_or_published() {
    let db = TestDb::create().await;
    let ts = TestStream::create("signer_forge").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("example.com/logs/{}", db.name);
    let key = PrivateKey::from_seed(&origin, &[61; 32]).expect("key");
    let mut s = settings(&db, &ts);
    s.witness.checkpoint_stream = cps.clone();
    s.witness.signer_state = Some(tmp.path().join("signer.state"));
    let (signer, metrics, bus) = in_process_signer(&db, key, &origin, &s).await;
    signer.prepare().await.expect("stream");

    ts.publish_load(20, 71).await;
    run_until_idle(settings(&db, &ts)).await;
    let first = signer.round().await.expect("round");
    assert_eq!(
        (first.signed.clone(), first.refused.clone()),
        (vec![("events", 20)], None)
    );

    // The writer role appends a link claiming 5 more leaves (no rows), with a right edge and
    // root of its choosing, and moves the head onto it: everything the head triggers check holds.
    let mut forged = Frontier::new();
    for i in 0..25u64 {
        forged.append(leaf_hash(&i.to_be_bytes()), |_, _| {});
    }
    let (link_seq, prev): (i64, Vec<u8>) =
        sqlx::query_as("SELECT link_seq, hash FROM audit.chain_head")
            .fetch_one(&db.pool)
            .await
            .expect("head");
    let digest = batch_digest(std::iter::empty());
    let (seq, batch) = (link_seq + 1, 1_000_000i64);
    let hash = link_hash_v2(&prev, seq, batch, 0, &digest, 25, &forged.root());
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL ROLE event_audit_writer")
        .execute(&mut *tx)
        .await
        .expect("role");
    sqlx::query("INSERT INTO audit.chain_links (link_seq, batch_id, row_count, batch_digest, prev_hash, hash, version, tree_size, tree_root) VALUES ($1, $2, 0, $3, $4, $5, 2, 25, $6)")
        .bind(seq).bind(batch).bind(&digest[..]).bind(&prev).bind(&hash[..]).bind(&forged.root()[..])
        .execute(&mut *tx).await.expect("the writer appends a link");
    sqlx::query(
        "UPDATE audit.chain_head SET link_seq = $1, hash = $2, tree_size = 25, frontier = $3",
    )
    .bind(seq)
    .bind(&hash[..])
    .bind(forged.to_bytes())
    .execute(&mut *tx)
    .await
    .expect("the writer moves the head");
    tx.commit().await.expect("the head triggers accept it");

    let r = signer.round().await.expect("round");
    assert!(r.signed.is_empty(), "{r:?}");
    let why = r.refused.expect("refused");
    assert!(why.contains("do not make a tree from their rows"), "{why}");
    assert_eq!(metrics.signer_ok.get(), 0);
    assert_eq!(metrics.refusals.with_label_values(&["corrupt"]).get(), 1);
    let sizes: Vec<i64> = sqlx::query_scalar("SELECT tree_size FROM audit.checkpoints ORDER BY 1")
        .fetch_all(&db.pool)
        .await
        .expect("sizes");
    assert_eq!(sizes, vec![20], "no checkpoint of the forged head");

    // A note the writer role queues (signed by another key, or garbage): never published.
    let stranger = PrivateKey::from_seed(&origin, &[62; 32]).expect("key");
    let foreign = stranger.sign(&Checkpoint {
        origin: origin.clone(),
        size: 99,
        root: [1; 32],
    });
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL ROLE event_audit_writer")
        .execute(&mut *tx)
        .await
        .expect("role");
    sqlx::query(
        "INSERT INTO audit.checkpoints (tree_size, note) VALUES (99, $1), (1000000000, 'garbage')",
    )
    .bind(&foreign)
    .execute(&mut *tx)
    .await
    .expect("the writer queues notes");
    tx.commit().await.expect("commit");
    let _ = signer.round().await.expect("round");
    assert!(metrics.foreign.get() >= 2);
    let published = publish::read_stream(&bus, &cps, Duration::from_secs(10))
        .await
        .expect("read");
    let sizes: Vec<u64> = published
        .iter()
        .map(|f| note::claimed(&f.note).expect("note").size)
        .collect();
    assert_eq!(sizes, vec![20], "only the signer's own checkpoint went out");
}

#[tokio::test]
async fn two_daemons_on_one_consumer_publish_one_cosigned_sequence() {
    let db = TestDb::create().await;
    let ts = TestStream::create("signer_two").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("example.com/logs/{}", db.name);
    let (key, public, _) = write_keys(tmp.path(), &origin, 63);
    let (_witness, policy) =
        witness_with_policy(tmp.path(), "auditor.example/w2", 64, &public).await;
    let daemon = |n: u32| {
        let mut s = settings(&db, &ts);
        s.ingest.batch_size = 25;
        s.ingest.instance = Some(format!("d{n}"));
        s.witness.signing_key_file = Some(key.clone());
        s.witness.checkpoint_stream = cps.clone();
        s.witness.checkpoint_interval = Dur::millis(300);
        s.witness.witness_policy = Some(policy.clone());
        s.witness.signer_state = Some(tmp.path().join(format!("signer{n}.state")));
        // One tile directory: written by whichever daemon's signer holds the round's lock.
        s.witness.tiles_dir = Some(tmp.path().join("tiles"));
        s
    };
    let (a, b) = (spawn_app(daemon(1)).await, spawn_app(daemon(2)).await);
    for seed in 0..4 {
        ts.publish_load(60, 80 + seed).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    while crate::support::count_rows(&db.pool).await < 240 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (sa, sb) = (a.stop().await, b.stop().await);
    assert!(
        sa.errors().is_empty() && sb.errors().is_empty(),
        "{:?} {:?}",
        sa.errors(),
        sb.errors()
    );

    let bus = Bus::connect(&daemon(1).nats).await.expect("nats");
    let found = publish::read_stream(&bus, &cps, Duration::from_secs(10))
        .await
        .expect("read");
    let p =
        WitnessPolicy::parse(&std::fs::read_to_string(&policy).expect("policy")).expect("policy");
    let sizes: Vec<u64> = found
        .iter()
        .map(|f| {
            p.check(&f.note)
                .unwrap_or_else(|e| panic!("not cosigned: {e}: {}", f.note));
            note::claimed(&f.note).expect("note").size
        })
        .collect();
    assert!(
        sizes.len() >= 2 && sizes.windows(2).all(|w| w[0] < w[1]),
        "{sizes:?}"
    );
    assert_eq!(sizes.last(), Some(&240));
    // The tiles the two daemons wrote in turn: the newest cosigned checkpoint, served with the
    // tiles of its tree (a full tile rewritten with other bytes would have stopped it earlier).
    let tiles = tmp.path().join("tiles");
    let served = std::fs::read_to_string(tiles.join("checkpoint")).expect("served checkpoint");
    p.check(&served)
        .expect("the served checkpoint carries the quorum");
    let cp = note::claimed(&served).expect("note");
    assert_eq!(cp.size, 240);
    let mut tree = event_audit::tlog::tile::build::TileBuilder::new();
    for id in event_audit::tlog::tile::tiles_between(0, 240) {
        let bytes = std::fs::read(tiles.join(id.path())).expect("a tile of the served tree");
        if id.kind == event_audit::tlog::tile::Kind::Entries {
            for e in event_audit::tlog::tile::parse_bundle(&id, &bytes).expect("bundle") {
                tree.push(e).expect("entry");
            }
        }
    }
    assert_eq!(tree.root(), cp.root, "the bundles make the served root");
    let pol = policy.to_str().expect("utf-8");
    let v = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--witness-policy", pol, "--no-state"],
    )
    .await;
    assert_eq!(v.code, Some(0), "{v:?}");
}

#[tokio::test]
async fn a_deleted_row_is_refused_as_corruption_and_checkpoints_before_the_policy_are_summarised() {
    let db = TestDb::create().await;
    let ts = TestStream::create("signer_deleted").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("example.com/logs/{}", db.name);
    let (key, public, _) = write_keys(tmp.path(), &origin, 65);
    let state = tmp.path().join("signer.state");
    let daemon = |policy: Option<&Path>| {
        let mut s = settings(&db, &ts);
        s.witness.signing_key_file = Some(key.clone());
        s.witness.checkpoint_stream = cps.clone();
        s.witness.checkpoint_interval = Dur::secs(3600);
        s.witness.signer_state = Some(state.clone());
        s.witness.witness_policy = policy.map(Path::to_owned);
        s
    };
    // Two checkpoints signed before there was a witness, then the policy in force: the next
    // checkpoint (size 50) is the first the witness cosigns.
    ts.publish_load(20, 90).await;
    run_until_idle(daemon(None)).await;
    ts.publish_load(15, 91).await;
    run_until_idle(daemon(None)).await;
    let (_witness, policy) =
        witness_with_policy(tmp.path(), "auditor.example/w3", 66, &public).await;
    ts.publish_load(15, 92).await;
    run_until_idle(daemon(Some(&policy))).await;

    // verify: the two early checkpoints in one line, none of them "not trusted"; --no-state
    // says that nothing is kept for the next run.
    let pol = policy.to_str().expect("utf-8");
    let quiet = ["--witness-policy", pol, "--skip-completeness"];
    let mut no_state = quiet.to_vec();
    no_state.push("--no-state");
    let v = verify_witness(&db.url, &public, &cps, &no_state).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert!(!v.stderr.contains("not trusted"), "{v:?}");
    let summary = format!("not used: 2 checkpoint(s) of {origin}, sizes 20 to 35, signed before its first one the witness policy's quorum cosigned (size 50)");
    assert_eq!(v.stderr.matches("not used:").count(), 1, "{v:?}");
    assert!(v.stderr.contains(&summary), "{v:?}");
    let early = &v.json()["witness"]["before_policy"][0];
    assert_eq!(
        (early["count"].as_u64(), early["first_cosigned"].as_u64()),
        (Some(2), Some(50))
    );
    assert!(!v.stderr.contains("remembered for the next one"), "{v:?}");
    assert!(
        v.stderr.contains("--no-state: no state read or written"),
        "{v:?}"
    );
    let st = tmp.path().join("auditor.state");
    let mut with_state = quiet.to_vec();
    with_state.extend(["--state-file", st.to_str().expect("utf-8")]);
    let v = verify_witness(&db.url, &public, &cps, &with_state).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert!(
        v.stderr.contains("remembered for the next one") && st.exists(),
        "{v:?}"
    );

    // A superuser deletes a row the witness cosigned long ago; the log grows. The signer signs
    // the new tree (its own memory starts above the hole), but the stored tree cannot prove the
    // new size extends the one the witness holds: a refusal for corruption, not a witness outage.
    let delete = format!(
        "DELETE FROM audit.events WHERE stream = '{}' AND stream_seq = 3",
        ts.name
    );
    assert_eq!(as_superuser(&db.pool, &delete).await, 1);
    ts.publish_load(10, 93).await;
    run_until_idle(settings(&db, &ts)).await;
    let s = daemon(Some(&policy));
    let key = PrivateKey::from_seed(&origin, &[65; 32]).expect("key");
    let (signer, metrics, _) = in_process_signer(&db, key, &origin, &s).await;
    let r = signer.round().await.expect("round");
    let why = r.refused.expect("refused");
    assert!(
        why.contains("audit.events is corrupt") && why.contains("a leaf of the tree has no row"),
        "{why}"
    );
    assert!(!why.contains("witness "), "{why}");
    assert_eq!(metrics.refusals.with_label_values(&["corrupt"]).get(), 1);
    assert_eq!(metrics.refusals.with_label_values(&["witness"]).get(), 0);
    assert_eq!(metrics.signer_ok.get(), 0);
    assert_eq!(
        metrics.witness_failures.get(),
        0,
        "not counted against the witness"
    );
}

/// A new key's first start has no memory file and is not a lost memory: the gauge and the
/// alert's time stay 0. Once the key has signed, a start without the file sets both, and the
/// gauge falls to 0 as soon as the signer has written the file again.
#[tokio::test]
async fn a_new_key_is_no_lost_memory_and_the_gauge_clears_once_the_file_exists() {
    let db = TestDb::create().await;
    let ts = TestStream::create("signer_memory").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, _, _) = write_keys(tmp.path(), &format!("example.com/logs/{}", db.name), 63);
    let state = tmp.path().join("signer.state");
    let mut s = settings(&db, &ts);
    s.witness.signing_key_file = Some(key);
    s.witness.signer_state = Some(state.clone());
    s.witness.checkpoint_stream = cps;
    s.witness.checkpoint_interval = Dur::millis(300);
    ts.publish_load(10, 73).await;
    let gauges = |text: &str| {
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<i64>().ok())
                .unwrap_or(-1)
        };
        (
            value("event_audit_signer_memory_missing"),
            value("event_audit_signer_memory_lost_timestamp_seconds"),
        )
    };
    // A new key: nothing lost, the first round writes the file.
    let app = spawn_app(s.clone()).await;
    let text = app
        .metrics_with(
            "event_audit_checkpoint_size_rows 10",
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(gauges(&text), (0, 0));
    app.stop().await;
    assert!(state.exists());
    // The memory lost after the key signed: said, then cleared once the file exists again.
    std::fs::remove_file(&state).expect("remove the memory");
    let app = spawn_app(s).await;
    let (_, text) = app.get("/metrics").await;
    let (_, lost_at) = gauges(&text);
    assert!(lost_at > 0, "{text}");
    let text = app
        .metrics_with(
            "event_audit_signer_memory_missing 0",
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(gauges(&text), (0, lost_at));
    assert!(state.exists());
    app.stop().await;
}

/// Without a signing key the signer's and the checkpoint stream's gauges say "off" (-1), not
/// "good" (1): nothing signs, and no alert reads -1 as a refusal.
#[tokio::test]
async fn without_a_key_the_signer_gauges_say_off() {
    let db = TestDb::create().await;
    let ts = TestStream::create("signer_off").await;
    let app = spawn_app(settings(&db, &ts)).await;
    let text = app
        .metrics_with(
            "event_audit_checkpoint_signer_ok -1",
            Duration::from_secs(10),
        )
        .await;
    assert!(
        text.contains("event_audit_checkpoint_stream_ok -1"),
        "{text}"
    );
    app.stop().await;
}
