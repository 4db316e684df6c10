//! The auditor's routine check against real NATS JetStream and Postgres: `verify --public-key`
//! with a state file rehashes every row by default, so a row a superuser edited below a
//! witnessed checkpoint (its stored hash left alone) is a break; the break is remembered in the
//! state and every later run exits 1 naming it until it is acknowledged by its id; an explicit
//! `--incremental` run says which rows it did not rehash; the output is one JSON document; a
//! missing checkpoint stream is named with the flags that fix it.

use std::path::Path;

use crate::support::app::{run_until_idle, settings};
use crate::support::db::as_superuser_at;
use crate::support::witness::{verify_witness, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use event_audit::config::{Dur, Settings};

fn signing(db: &TestDb, ts: &TestStream, key: &Path, stream: &str) -> Settings {
    let mut s = settings(db, ts);
    s.witness.signing_key_file = Some(key.to_owned());
    s.witness.checkpoint_stream = stream.to_owned();
    s.witness.checkpoint_interval = Dur::secs(3600);
    s
}

/// The one JSON document `verify` printed (the whole of stdout).
fn doc(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim()).expect("verify prints exactly one JSON document")
}

/// A log of `n` events recorded by a daemon that signed a checkpoint of them: its database,
/// stream, checkpoint stream (deleted when dropped), key files and the state file's path.
struct Signed {
    db: TestDb,
    _ts: TestStream,
    cps: String,
    _w: Witness,
    tmp: tempfile::TempDir,
    public: std::path::PathBuf,
}

impl Signed {
    async fn record(tag: &str, n: usize, seed: u8) -> Signed {
        let db = TestDb::create().await;
        let ts = TestStream::create(tag).await;
        let cps = format!("{}_CP", ts.name);
        let w = Witness(cps.clone());
        let tmp = tempfile::tempdir().expect("tmp");
        let origin = format!("event-audit/{}", db.name);
        let (private, public, _) = write_keys(tmp.path(), &origin, seed);
        ts.publish_load(n, u64::from(seed) * 7).await;
        run_until_idle(signing(&db, &ts, &private, &cps)).await;
        Signed {
            db,
            _ts: ts,
            cps,
            _w: w,
            tmp,
            public,
        }
    }

    fn state(&self) -> String {
        self.tmp.path().join("st.json").display().to_string()
    }
}

#[tokio::test]
async fn the_routine_check_catches_an_edited_row_and_remembers_it_until_acknowledged() {
    let log = Signed::record("vauditor", 700, 5).await;
    let (db, cps, public) = (&log.db, log.cps.as_str(), &log.public);
    let st = log.state();
    let st = st.as_str();
    let routine = [
        "--state-file",
        st,
        "--skip-completeness",
        "--db-connections",
        "2",
    ];

    // The auditor's routine run on the genuine log: one JSON document, the real counts.
    let first = verify_witness(&db.url, public, cps, &routine).await;
    assert_eq!(first.code, Some(0), "{first:?}");
    let d = doc(&first.stdout);
    assert_eq!(d["ok"], true, "{first:?}");
    assert_eq!(d["rows"], 700, "{first:?}");
    assert_eq!(d["rows_rehashed"], 700, "{first:?}");
    assert_eq!(d["witness"]["ok"], true, "{first:?}");
    assert_eq!(d["witness"]["witnessed_size"], 700, "{first:?}");
    assert_eq!(d["witness"]["incremental"], false, "{first:?}");
    assert_eq!(d["auditor_state"]["run"], 1, "{first:?}");
    assert!(
        first.stderr.contains("700 rows, every row rehashed"),
        "{first:?}"
    );

    // A superuser edits row 42 in place, below the checkpoint, without touching its hash.
    let edit = "UPDATE audit.events SET status = 'invalid' WHERE stream_seq = $1";
    let orig: String = sqlx::query_scalar("SELECT status FROM audit.events WHERE stream_seq = 42")
        .fetch_one(&db.pool)
        .await
        .expect("row 42");
    assert_ne!(orig, "invalid", "the sample row must change");
    assert_eq!(as_superuser_at(&db.pool, edit, 42).await, 1);

    let caught = verify_witness(&db.url, public, cps, &routine).await;
    assert_eq!(caught.code, Some(1), "{caught:?}");
    let d = doc(&caught.stdout);
    assert!(
        d["first_break"]
            .as_str()
            .is_some_and(|b| b.contains("stream_seq=42 ") && b.contains("row edited")),
        "{caught:?}"
    );
    // The tree rebuilt from the rows' recomputed hashes no longer has the witnessed root; the
    // stored subtrees and links above the row still match the rows' stored hashes, so they are
    // not reported as edited (they follow from the row break).
    assert_eq!(d["witness"]["ok"], false, "{caught:?}");
    assert!(
        d["witness"]["first_break"]
            .as_str()
            .is_some_and(|b| b.contains("at size 700 has another root")),
        "{caught:?}"
    );
    assert!(
        !caught.stderr.contains("tree edited") && !caught.stderr.contains("tree or rows edited"),
        "{caught:?}"
    );
    let open = &d["auditor_state"]["open_break"];
    assert_eq!(open["stream_seq"], 42, "{caught:?}");
    assert_eq!(open["run"], 2, "{caught:?}");
    assert_eq!(d["auditor_state"]["recorded_now"], true, "{caught:?}");
    let id = open["id"].as_str().expect("a break id").to_owned();
    assert!(caught.stderr.contains("remembered in"), "{caught:?}");

    // An explicit incremental run: it says what it skipped (and the open break still fails it).
    let mut incremental = routine.to_vec();
    incremental.push("--incremental");
    let inc = verify_witness(&db.url, public, cps, &incremental).await;
    assert_eq!(inc.code, Some(1), "{inc:?}");
    let d = doc(&inc.stdout);
    assert_eq!(d["witness"]["incremental"], true, "{inc:?}");
    assert_eq!(d["witness"]["not_rehashed_before"], 700, "{inc:?}");
    assert_eq!(d["rows"], 700, "{inc:?}");
    assert_eq!(d["rows_rehashed"], 0, "{inc:?}");
    assert!(
        inc.stderr
            .contains("the rows before size 700 were not rehashed"),
        "{inc:?}"
    );
    assert!(
        inc.stderr.contains("BROKEN (remembered, not acknowledged)") && inc.stderr.contains(&id),
        "{inc:?}"
    );

    // Put the row back: the log is intact again, but the remembered break still fails every run.
    let restore = format!("UPDATE audit.events SET status = '{orig}' WHERE stream_seq = $1");
    assert_eq!(as_superuser_at(&db.pool, &restore, 42).await, 1);
    for _ in 0..2 {
        let again = verify_witness(&db.url, public, cps, &routine).await;
        assert_eq!(again.code, Some(1), "{again:?}");
        let d = doc(&again.stdout);
        assert_eq!(d["ok"], true, "the chain itself holds again: {again:?}");
        assert_eq!(d["auditor_state"]["open_break"]["id"], id, "{again:?}");
        assert!(
            again.stderr.contains("found the log intact") && again.stderr.contains(&id),
            "{again:?}"
        );
    }

    // A stored subtree edited (the rows intact): that is a tree edit, and named so.
    let node = "SELECT hash FROM audit.tree_nodes WHERE height = 8 AND idx = 0";
    let kept: Vec<u8> = sqlx::query_scalar(node)
        .fetch_one(&db.pool)
        .await
        .expect("a stored subtree");
    let tree_edit = "UPDATE audit.tree_nodes SET hash = sha256(hash) WHERE height = 8 AND idx = $1";
    assert_eq!(as_superuser_at(&db.pool, tree_edit, 0).await, 1);
    let t = verify_witness(&db.url, public, cps, &routine).await;
    assert_eq!(t.code, Some(1), "{t:?}");
    assert!(
        doc(&t.stdout)["witness"]["first_break"]
            .as_str()
            .is_some_and(
                |b| b == "stored subtree height 8 index 0 does not match the rows (tree edited)"
            ),
        "{t:?}"
    );
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica");
    sqlx::query("UPDATE audit.tree_nodes SET hash = $1 WHERE height = 8 AND idx = 0")
        .bind(&kept)
        .execute(&mut *tx)
        .await
        .expect("put the subtree back");
    tx.commit().await.expect("commit");

    // A wrong id is refused (exit 2) and changes nothing; the right one is recorded.
    let mut wrong = routine.to_vec();
    wrong.extend(["--acknowledge-break", "00000000"]);
    let w = verify_witness(&db.url, public, cps, &wrong).await;
    assert_eq!(w.code, Some(2), "{w:?}");
    assert!(w.stderr.contains(&id), "names the open break: {w:?}");
    let mut ack = routine.to_vec();
    ack.extend(["--acknowledge-break", &id]);
    let a = verify_witness(&db.url, public, cps, &ack).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    let d = doc(&a.stdout);
    assert_eq!(d["auditor_state"]["acknowledged"]["id"], id, "{a:?}");
    assert!(d["auditor_state"]["open_break"].is_null(), "{a:?}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(st).expect("state")).expect("json");
    assert!(
        state["breaks"][0]["acknowledged"]["at"].is_string(),
        "the acknowledgement is in the state: {state}"
    );
    let after = verify_witness(&db.url, public, cps, &routine).await;
    assert_eq!(after.code, Some(0), "{after:?}");
}

#[tokio::test]
async fn a_consistent_edit_of_payload_and_raw_is_caught_by_the_routine_check() {
    let log = Signed::record("vauditraw", 300, 6).await;
    let (db, cps, public) = (&log.db, log.cps.as_str(), &log.public);
    let st = log.state();
    let st = st.as_str();
    let routine = ["--state-file", st, "--skip-completeness"];
    let first = verify_witness(&db.url, public, cps, &routine).await;
    assert_eq!(first.code, Some(0), "{first:?}");

    // A row whose raw message and payload both carry an '@': both rewritten alike, so the
    // payload column still matches the raw bytes; only rehashing the row shows it.
    let seq: i64 = sqlx::query_scalar(
        "SELECT min(stream_seq) FROM audit.events WHERE payload IS NOT NULL AND payload::text LIKE '%@%' \
         AND position('@' in convert_from(raw, 'UTF8')) > 0",
    )
    .fetch_one(&db.pool)
    .await
    .expect("a row with an address");
    let edit = "UPDATE audit.events SET raw = convert_to(replace(convert_from(raw, 'UTF8'), '@', '.at.'), 'UTF8'), \
                payload = replace(payload::text, '@', '.at.')::jsonb WHERE stream_seq = $1";
    assert_eq!(as_superuser_at(&db.pool, edit, seq).await, 1);
    for run in 0..2 {
        let v = verify_witness(&db.url, public, cps, &routine).await;
        assert_eq!(v.code, Some(1), "run {run}: {v:?}");
        let d = doc(&v.stdout);
        assert_eq!(d["auditor_state"]["open_break"]["stream_seq"], seq, "{v:?}");
        assert!(
            d["first_break"]
                .as_str()
                .is_some_and(|b| b.contains(&format!("stream_seq={seq} "))),
            "{v:?}"
        );
    }
}

#[tokio::test]
async fn a_missing_checkpoint_stream_is_named_with_the_flags_that_fix_it() {
    let db = TestDb::create().await;
    let ts = TestStream::create("vauditnocp").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, public, _) = write_keys(tmp.path(), "event-audit/nowhere", 4);
    let missing = format!("{}_NO_SUCH_CP", ts.name);
    let v = verify_witness(&db.url, &public, &missing, &["--no-state"]).await;
    assert_eq!(v.code, Some(2), "{v:?}");
    // Nothing was signed with this key: that is the likely cause, said first.
    assert!(
        v.stderr.contains("event-audit: ")
            && v.stderr.contains(&format!("`{missing}` does not exist"))
            && v.stderr.contains("no daemon has signed with this key yet")
            && v.stderr.contains("--checkpoint-stream")
            && v.stderr.contains("--checkpoint-dir")
            && !v.stderr.contains("the witness: "),
        "{v:?}"
    );
    assert_eq!(v.stderr.trim().lines().count(), 1, "{v:?}");
    // The database holds a checkpoint this key signed: the stream is elsewhere (or deleted).
    let key = event_audit::tlog::note::PrivateKey::from_seed("event-audit/nowhere", &[4; 32])
        .expect("key");
    let note = key.sign(&event_audit::tlog::note::Checkpoint {
        origin: "event-audit/nowhere".into(),
        size: 0,
        root: event_audit::tlog::merkle::Frontier::new().root(),
    });
    sqlx::query("INSERT INTO audit.checkpoints (log, tree_size, note) VALUES ('events', 0, $1)")
        .bind(&note)
        .execute(&db.pool)
        .await
        .expect("a stored checkpoint");
    let v = verify_witness(&db.url, &public, &missing, &["--no-state"]).await;
    assert_eq!(v.code, Some(2), "{v:?}");
    assert!(
        v.stderr.contains(&format!("`{missing}` does not exist"))
            && !v.stderr.contains("no daemon has signed")
            && v.stderr.contains("--checkpoint-stream"),
        "{v:?}"
    );
}
