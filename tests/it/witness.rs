//! The witnessed log against real NATS JetStream and Postgres: the daemon signs checkpoints and
//! publishes them to a witness stream; `verify --public-key` holds on the genuine log, and
//! names the first divergent checkpoint of a history a superuser rewrote with every hash inside
//! the database recomputed; a wrong key is exit 1; a foreign checkpoint is reported and not
//! trusted; `prove` writes a bundle whose proofs hold; `keygen` writes its files 0600/public; a
//! second database filled from altered events by a daemon without the key fails at the first
//! checkpoint.

use std::path::Path;

use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::support::app::{run_until_idle, settings};
use crate::support::cli::event_audit;
use crate::support::witness::{in_process_signer, verify_witness, write_keys, Witness};
use crate::support::{nats_url, TestDb, TestStream};
use event_audit::config::{Dur, Settings};
use event_audit::test_support::evidence::prove::leaf_data;
use event_audit::test_support::row::chain::{batch_digest, link_hash_v2};
use event_audit::test_support::verify::store::StoredRow;
use event_audit::tlog::merkle::{self, Frontier};
use event_audit::tlog::note::{self, Checkpoint, PrivateKey, PublicKey};

fn signing(db: &TestDb, ts: &TestStream, key: &Path, stream: &str, dir: &Path) -> Settings {
    let mut s = settings(db, ts);
    s.ingest.batch_size = 15;
    s.witness.signing_key_file = Some(key.to_owned());
    s.witness.checkpoint_stream = stream.to_owned();
    s.witness.checkpoint_dir = Some(dir.to_owned());
    s.witness.checkpoint_interval = Dur::secs(3600);
    s
}

/// Rewrites the subject of row `seq` as a superuser (a column the row encoding covers itself,
/// not through the commitment to the personal columns), then recomputes, with the project's own
/// functions, its row hash, every batch digest, link, tree root, stored subtree and the head:
/// every hash inside the database agrees again.
async fn forge(pool: &PgPool, seq: i64) {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica");
    sqlx::query("UPDATE audit.events SET subject = 'FORGED' WHERE stream_seq = $1")
        .bind(seq)
        .execute(&mut *tx)
        .await
        .expect("edit");
    let sql = format!(
        "SELECT {} FROM audit.events e WHERE e.stream_seq = $1",
        event_audit::test_support::row::columns::select_list("e")
    );
    let row: StoredRow = sqlx::query_as(&sql)
        .bind(seq)
        .fetch_one(&mut *tx)
        .await
        .expect("row");
    let h: [u8; 32] = Sha256::digest(leaf_data(&row).expect("encoding")).into();
    sqlx::query("UPDATE audit.events SET row_hash = $1 WHERE stream_seq = $2")
        .bind(&h[..])
        .bind(seq)
        .execute(&mut *tx)
        .await
        .expect("rehash");
    let links: Vec<(i64, i64, i32)> = sqlx::query_as(
        "SELECT link_seq, batch_id, row_count FROM audit.chain_links ORDER BY link_seq",
    )
    .fetch_all(&mut *tx)
    .await
    .expect("links");
    sqlx::query("DELETE FROM audit.tree_nodes")
        .execute(&mut *tx)
        .await
        .expect("nodes");
    let (mut prev, mut tree) = (vec![0u8; 32], Frontier::new());
    for (link_seq, batch_id, row_count) in links {
        let hashes: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT row_hash FROM audit.events WHERE batch_id = $1 ORDER BY stream COLLATE \"C\", stream_seq, published_at",
        )
        .bind(batch_id)
        .fetch_all(&mut *tx)
        .await
        .expect("rows");
        let hashes: Vec<[u8; 32]> = hashes
            .iter()
            .map(|h| h[..].try_into().expect("32"))
            .collect();
        let digest = batch_digest(&hashes);
        let mut nodes = Vec::new();
        for r in &hashes {
            tree.append(merkle::leaf_hash(r), |n, h| {
                if n.level > 0 && n.level % 8 == 0 {
                    nodes.push((n.level as i16, n.index as i64, h.to_vec()));
                }
            });
        }
        for (height, idx, h) in nodes {
            sqlx::query("INSERT INTO audit.tree_nodes VALUES ($1, $2, $3)")
                .bind(height)
                .bind(idx)
                .bind(h)
                .execute(&mut *tx)
                .await
                .expect("node");
        }
        let (size, root) = (tree.size() as i64, tree.root());
        let hash = link_hash_v2(&prev, link_seq, batch_id, row_count, &digest, size, &root);
        sqlx::query("UPDATE audit.chain_links SET batch_digest = $1, prev_hash = $2, hash = $3, tree_root = $4, tree_size = $5, version = 2 WHERE link_seq = $6")
            .bind(&digest[..]).bind(&prev).bind(&hash[..]).bind(&root[..]).bind(size).bind(link_seq)
            .execute(&mut *tx)
            .await
            .expect("link");
        prev = hash.to_vec();
    }
    sqlx::query("UPDATE audit.chain_head SET hash = $1, frontier = $2")
        .bind(&prev)
        .bind(tree.to_bytes())
        .execute(&mut *tx)
        .await
        .expect("head");
    tx.commit().await.expect("commit");
}

#[tokio::test]
async fn the_witness_detects_a_history_rewritten_inside_the_database() {
    let db = TestDb::create().await;
    let ts = TestStream::create("witness").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 7);
    let dir = tmp.path().join("checkpoints");

    // Two runs, each ending with a checkpoint: sizes 40 and 70.
    ts.publish_load(40, 11).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    ts.publish_load(30, 12).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    let files = std::fs::read_dir(&dir).expect("dir").count();
    assert_eq!(files, 2, "one checkpoint file per checkpoint");
    let stored: Vec<i64> =
        sqlx::query_scalar("SELECT tree_size FROM audit.checkpoints WHERE published ORDER BY 1")
            .fetch_all(&db.pool)
            .await
            .expect("checkpoints");
    assert_eq!(stored, vec![40, 70]);

    // A foreign checkpoint in the witness stream: reported, not trusted; the log still holds.
    let client = async_nats::connect(nats_url()).await.expect("nats");
    let js = async_nats::jetstream::new(client);
    let stranger = PrivateKey::from_seed("someone-else", &[9; 32]).expect("key");
    let foreign = stranger.sign(&Checkpoint {
        origin: origin.clone(),
        size: 70,
        root: [1; 32],
    });
    js.publish(
        event_audit::test_support::witnessed::signer::publish::subject(&cps),
        foreign.into(),
    )
    .await
    .expect("publish")
    .await
    .expect("ack");

    let state = tmp.path().join("state.json");
    let st = state.to_str().expect("utf-8");
    let genuine = verify_witness(&db.url, &public, &cps, &["--state-file", st]).await;
    assert_eq!(genuine.code, Some(0), "{genuine:?}");
    assert!(genuine.stderr.contains("not trusted"), "{genuine:?}");
    assert!(genuine.stdout.contains("\"trusted\":2"), "{genuine:?}");
    // Incremental, asked for: the next run starts from the state (size 70) and hashes nothing
    // again (and says so).
    let again = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--state-file", st, "--incremental"],
    )
    .await;
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(
        again.stdout.contains("\"from_size\":70") && again.stdout.contains("\"incremental\":true"),
        "{again:?}"
    );
    // ...and its walk rehashes no row (the first run rehashed all 70).
    assert!(
        genuine.stdout.contains("\"rows_rehashed\":70"),
        "{genuine:?}"
    );
    assert!(again.stdout.contains("\"rows_rehashed\":0"), "{again:?}");
    assert!(
        again.stdout.contains("\"not_rehashed_before\":70"),
        "{again:?}"
    );

    // A wrong public key: exit 1, naming a checkpoint.
    let (_, other_pub, _) = write_keys(tmp.path(), &origin, 8);
    let wrong = verify_witness(&db.url, &other_pub, &cps, &["--full"]).await;
    assert_eq!(wrong.code, Some(1), "{wrong:?}");
    assert!(wrong.stderr.contains("checkpoint size"), "{wrong:?}");

    // prove: a bundle whose proof holds against the signed checkpoint.
    let out = tmp.path().join("bundle.json");
    let o = out.to_str().expect("utf-8");
    let p = public.to_str().expect("utf-8");
    let nats = nats_url();
    let proved = event_audit(
        &[
            "prove",
            "--database-url",
            &db.url,
            "--stream",
            &ts.name,
            "--seq",
            "5",
            "-o",
            o,
            "--public-key",
            p,
            "--checkpoint-stream",
            &cps,
            "--nats-url",
            &nats,
        ],
        &[],
    )
    .await;
    assert_eq!(proved.code, Some(0), "{proved:?}");
    let bundle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("bundle")).expect("json");
    let cp = note::open(
        bundle["checkpoint"].as_str().expect("note"),
        &PublicKey::parse(&key.public().encode()).expect("pub"),
    )
    .expect("signed");
    let e = &bundle["entries"][0];
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let data = b64
        .decode(e["leaf_data"].as_str().expect("leaf"))
        .expect("b64");
    let row_hash: [u8; 32] = Sha256::digest(&data).into();
    let proof: Vec<[u8; 32]> = e["inclusion_proof"]
        .as_array()
        .expect("proof")
        .iter()
        .map(|h| {
            b64.decode(h.as_str().expect("h"))
                .expect("b64")
                .try_into()
                .expect("32")
        })
        .collect();
    merkle::verify_inclusion(
        e["leaf_index"].as_u64().expect("i"),
        cp.size,
        &merkle::leaf_hash(&row_hash),
        &proof,
        &cp.root,
    )
    .expect("the inclusion proof holds");
    let raw = b64.decode(e["raw"].as_str().expect("raw")).expect("b64");
    // Row encoding 3: the raw message is in the opening of the leaf's commitment, after the
    // 32-byte salt and its length.
    let opening = b64
        .decode(e["opening"].as_str().expect("a version 3 row's opening"))
        .expect("b64");
    assert_eq!(opening.get(40..40 + raw.len()), Some(&raw[..]));
    assert!(data.len() < 400, "the leaf holds no raw message");
    // The evidence beyond the row itself (the signed note and the proof) stays small.
    let evidence = bundle["checkpoint"].as_str().expect("note").len() + proof.len() * 46;
    assert!(evidence < 1536, "{evidence} bytes of evidence");

    // An account's events, all proven against one checkpoint.
    let account: String = sqlx::query_scalar(
        "SELECT account_number FROM audit.events WHERE account_number IS NOT NULL \
         GROUP BY 1 ORDER BY count(*) DESC LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await
    .expect("an account");
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE account_number = $1")
            .bind(&account)
            .fetch_one(&db.pool)
            .await
            .expect("count");
    let by_account = event_audit(
        &[
            "prove",
            "--database-url",
            &db.url,
            "--account",
            &account,
            "--public-key",
            p,
            "--checkpoint-stream",
            &cps,
            "--nats-url",
            &nats,
        ],
        &[],
    )
    .await;
    assert_eq!(by_account.code, Some(0), "{by_account:?}");
    let b: serde_json::Value = serde_json::from_str(&by_account.stdout).expect("json");
    assert_eq!(b["entries"].as_array().expect("entries").len() as i64, rows);

    // The forgery: every hash inside the database agrees (the chain walk says intact), but the
    // witness names the first checkpoint whose root the database no longer has.
    forge(&db.pool, 20).await;
    crate::support::assert_verifies(&db.url, 70).await;
    let forged = verify_witness(&db.url, &public, &cps, &["--state-file", st]).await;
    assert_eq!(forged.code, Some(1), "{forged:?}");
    assert!(forged.stderr.contains("checkpoint size 40"), "{forged:?}");
    // Incremental from the state of size 70: the stored tree no longer extends it.
    let inc = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--state-file", st, "--incremental"],
    )
    .await;
    assert_eq!(inc.code, Some(1), "{inc:?}");
    assert!(
        inc.stderr
            .contains("no longer has the root checked last time"),
        "{inc:?}"
    );
}

#[tokio::test]
async fn keygen_writes_a_private_key_0600_and_a_public_key() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let prefix = tmp.path().join("log");
    let pre = prefix.to_str().expect("utf-8");
    let r = event_audit(
        &["keygen", "--out", pre, "--origin", "event-audit/test"],
        &[],
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    let key = tmp.path().join("log.key");
    let mode = std::fs::metadata(&key).expect("key").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let private = PrivateKey::parse(&std::fs::read_to_string(&key).expect("key")).expect("parse");
    let public =
        PublicKey::parse(&std::fs::read_to_string(tmp.path().join("log.pub")).expect("pub"))
            .expect("parse");
    assert_eq!(private.public(), public);
    assert_eq!(public.name, "event-audit/test");
    assert!(!r.stdout.contains("PRIVATE") && !r.stderr.contains("PRIVATE"));
    // Never overwrites.
    let again = event_audit(&["keygen", "--out", pre], &[]).await;
    assert_ne!(again.code, Some(0), "{again:?}");
}

#[tokio::test]
async fn checkpoints_wait_for_an_unreachable_witness_and_go_out_in_order() {
    use event_audit::test_support::witnessed::signer::publish;

    let db = TestDb::create().await;
    let ts = TestStream::create("witness_down").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let origin = format!("event-audit/{}", db.name);
    let key = PrivateKey::from_seed(&origin, &[5; 32]).expect("key");
    let mut s = settings(&db, &ts);
    s.witness.checkpoint_stream = cps.clone();
    s.witness.publish_timeout = Dur::secs(2);
    let tmp = tempfile::tempdir().expect("tmp");
    s.witness.signer_state = Some(tmp.path().join("signer.state"));
    let (signer, metrics, bus) = in_process_signer(&db, key, &origin, &s).await;

    // The witness stream is not there (nothing answers a publish): ingest goes on, the
    // checkpoints wait in order.
    ts.publish_load(20, 21).await;
    run_until_idle(settings(&db, &ts)).await;
    assert!(signer.round().await.is_err());
    ts.publish_load(15, 22).await;
    run_until_idle(settings(&db, &ts)).await;
    assert!(signer.round().await.is_err());
    assert_eq!(metrics.backlog.get(), 2);
    assert_eq!(metrics.failures.get(), 2);

    // The witness is back: the backlog goes out, oldest first, and a line says it drained.
    signer.prepare().await.expect("witness stream");
    let logs = crate::support::Logs::capture();
    let round = signer.round().await.expect("round");
    assert_eq!(
        (round.signed.len(), round.published, round.backlog),
        (0, 2, 0)
    );
    assert_eq!(metrics.backlog.get(), 0);
    assert!(
        logs.text().contains("the checkpoint backlog drained"),
        "{}",
        logs.text()
    );
    drop(logs);
    assert_eq!(metrics.size.get(), 35);
    let found = publish::read_stream(&bus, &cps, std::time::Duration::from_secs(10))
        .await
        .expect("read");
    let sizes: Vec<u64> = found
        .iter()
        .map(|f| note::claimed(&f.note).expect("note").size)
        .collect();
    assert_eq!(sizes, vec![20, 35]);
    // Nothing new: no checkpoint, nothing published again.
    let idle = signer.round().await.expect("round");
    assert_eq!((idle.signed.len(), idle.published), (0, 0));
}

#[tokio::test]
async fn the_witness_detects_a_second_database_filled_from_altered_events_without_the_key() {
    // The genuine log: a daemon with the key, checkpoints at sizes 40 and 70; one row per batch,
    // so the witness pass reads its 70 links in more than one range.
    let genuine = TestDb::create().await;
    let ts = TestStream::create("witness_gen").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", genuine.name);
    let (private, public, _) = write_keys(tmp.path(), &origin, 17);
    let dir = tmp.path().join("checkpoints");
    let one_per_batch = || {
        let mut s = signing(&genuine, &ts, &private, &cps, &dir);
        s.ingest.batch_size = 1;
        s
    };
    ts.publish_load(40, 31).await;
    run_until_idle(one_per_batch()).await;
    ts.publish_load(30, 32).await;
    run_until_idle(one_per_batch()).await;
    let links: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.chain_links")
        .fetch_one(&genuine.pool)
        .await
        .expect("links");
    assert_eq!(links, 70);

    // The substitute: a second database filled, by a daemon that has no key, from altered
    // events (another load of the same size), offered as the same log. Every hash inside it
    // agrees with every other: the chain walk alone says intact.
    let substitute = TestDb::create().await;
    let altered = TestStream::create("witness_alt").await;
    altered.publish_load(40, 33).await;
    let mut s = settings(&substitute, &altered);
    s.ingest.batch_size = 15;
    assert!(s.witness.signing_key_file.is_none());
    run_until_idle(s.clone()).await;
    altered.publish_load(30, 34).await;
    run_until_idle(s).await;
    crate::support::assert_verifies(&substitute.url, 70).await;
    let signed: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.checkpoints")
        .fetch_one(&substitute.pool)
        .await
        .expect("checkpoints");
    assert_eq!(signed, 0, "a daemon without the key signs nothing");

    // Against the witnessed checkpoints (the genuine log's origin), the substitute fails at the
    // first checkpoint; the genuine log holds.
    let (st1, st2) = (tmp.path().join("s1.json"), tmp.path().join("s2.json"));
    let (st1, st2) = (st1.to_str().expect("utf-8"), st2.to_str().expect("utf-8"));
    let caught = verify_witness(
        &substitute.url,
        &public,
        &cps,
        &["--origin", &origin, "--full", "--state-file", st1],
    )
    .await;
    assert_eq!(caught.code, Some(1), "{caught:?}");
    assert!(caught.stderr.contains("checkpoint size 40"), "{caught:?}");
    let holds = verify_witness(
        &genuine.url,
        &public,
        &cps,
        &["--origin", &origin, "--full", "--state-file", st2],
    )
    .await;
    assert_eq!(holds.code, Some(0), "{holds:?}");
    assert!(holds.stdout.contains("\"trusted\":2"), "{holds:?}");
    // Every one of the 70 rows went through the witness pass (two ranges of links).
    assert!(holds.stdout.contains("\"rows_hashed\":70"), "{holds:?}");
}
