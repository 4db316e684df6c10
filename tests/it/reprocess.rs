//! Reprocessing after a catalogue change, against the real PostgreSQL: the known mix judged
//! again with a fixture catalogue (a copy of catalogue/ with a new field and a new version; the
//! run-time interpreter, proven equal to the generated decoders below) gives exact transitions;
//! originals are unchanged; `event_log` shows the latest re-verdict; verify checks the
//! re-verdicts and catches an edited one.

use std::path::Path;

use crate::support::cli::event_audit;
use crate::support::{assert_verifies, mix, verify, TestDb};
use event_audit::decode::verdict;
use event_audit::test_support::db::Db;
use event_audit::test_support::dev::sample::Mix;
use event_audit::test_support::evolution::compat;
use event_audit::test_support::ingest::sink::Sink;

/// A copy of catalogue/ where account.created-v1 gains an optional integer `score` and
/// account.created-v9 exists (same fields as v1).
fn fixture_catalogue() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    for f in ["shapes.toml", "field_sets.toml", "events.toml"] {
        std::fs::copy(src.join(f), dir.path().join(f)).expect("copy");
    }
    let p = dir.path().join("events.toml");
    let text = std::fs::read_to_string(&p).expect("read");
    let from = "  { name = \"is_imported\", type = \"boolean\" },\n]\n";
    assert!(text.contains(from));
    let text = text.replacen(
        from,
        "  { name = \"is_imported\", type = \"boolean\" },\n  { name = \"score\", type = \"integer\" },\n]\n",
        1,
    ) + "\n[[event]]\nname = \"account.created-v9\"\nsection = \"Account events\"\nsource = \"fixture\"\nextends = \"account.created-v1\"\n";
    std::fs::write(&p, text).expect("write");
    dir
}

#[test]
fn interpreter_equals_the_generated_decoders() {
    let cat = compat::dynamic(
        &compat::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue")).expect("loads"),
    );
    assert_eq!(cat.fingerprint, event_audit::decode::catalogue::FINGERPRINT);
    let corpus = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/decode.jsonl"),
    )
    .expect("corpus");
    let mix: Vec<Vec<u8>> = Mix::new(5000, 3).map(|s| s.bytes).collect();
    let mut n = 0;
    for bytes in corpus.lines().map(|l| l.as_bytes().to_vec()).chain(mix) {
        let a = verdict::decode(&bytes, None);
        let b = verdict::decode_with(&bytes, None, &cat);
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(a.status, b.status, "{text}");
        assert_eq!(a.errors, b.errors, "{text}");
        assert_eq!(a.unknown_fields, b.unknown_fields, "{text}");
        assert_eq!(a.unknown_kinds, b.unknown_kinds, "{text}");
        assert_eq!(a.declared_seen, b.declared_seen, "{text}");
        assert_eq!(a.account_number, b.account_number, "{text}");
        n += 1;
    }
    assert!(n > 5000);
}

async fn count(pool: &sqlx::PgPool, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(pool)
        .await
        .expect("count")
}

async fn transitions(db: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["reprocess", "--database-url", db, "--format", "json"];
    all.extend_from_slice(args);
    let run = event_audit(&all, &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    run.json()
}

#[tokio::test]
async fn reprocess_with_a_changed_catalogue() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    sink.write_batch(&mut mix::records("RP"))
        .await
        .expect("write");
    let before: Vec<(i64, String, Vec<u8>)> =
        sqlx::query_as("SELECT stream_seq, status, row_hash FROM audit.events ORDER BY stream_seq")
            .fetch_all(&db.pool)
            .await
            .expect("rows");
    let fixture = fixture_catalogue();
    let dir = fixture.path().to_str().expect("utf-8");

    // The catalogue that judged them finds every verdict unchanged: the run records its page
    // and counts, and stores no re-verdict.
    let same = transitions(&db.url, &[]).await;
    assert_eq!(same["rows"], 10, "{same}");
    assert_eq!(same["changed"], 0, "{same}");
    assert!(same["totals"]
        .as_object()
        .expect("totals")
        .keys()
        .all(|k| k.split('→').next() == k.split('→').nth(1)));
    assert_eq!(count(&db.pool, "audit.reverdicts").await, 0);
    assert_eq!(count(&db.pool, "audit.reprocess_pages").await, 1);
    assert_verifies(&db.url, 10).await;

    // A dry run writes nothing.
    let dry = transitions(&db.url, &["--dry-run", "--catalogue-dir", dir]).await;
    assert_eq!(dry["run_id"], serde_json::Value::Null);
    assert_eq!(count(&db.pool, "audit.reverdicts").await, 0);
    assert_eq!(count(&db.pool, "audit.reprocess_pages").await, 1);

    let run = transitions(&db.url, &["--catalogue-dir", dir]).await;
    let want = serde_json::json!({
        "decoded→decoded": 4, "decoded→invalid": 1, "invalid→invalid": 2,
        "unknown_version→decoded": 1, "unknown_type→unknown_type": 2,
    });
    assert_eq!(run["totals"], want, "{run}");
    assert_eq!(dry["totals"], want, "the dry run finds the same");
    assert_eq!(run["rows"], 10);
    // Exactly the changed verdicts are stored: the two status changes, and a decoded
    // account.created-v1 row whose `score` is no longer an undeclared field.
    assert_eq!(run["changed"], dry["changed"]);
    let changed_rows = run["changed"].as_i64().expect("changed");
    assert_eq!(count(&db.pool, "audit.reverdicts").await, changed_rows);
    assert_eq!(changed_rows, 3, "{run}");
    // The third: RP:2 stays decoded, `score` no longer undeclared.
    let same_status: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT r.stream_seq, e.unknown_fields::text, r.unknown_fields::text \
         FROM audit.reverdicts r JOIN audit.events e USING (stream, stream_seq, published_at) \
         WHERE r.old_status = r.status",
    )
    .fetch_all(&db.pool)
    .await
    .expect("same-status re-verdicts");
    assert_eq!(
        same_status,
        vec![(
            2,
            Some(r#"["nickname", "score"]"#.to_owned()),
            Some(r#"["nickname"]"#.to_owned())
        )]
    );
    let changed: Vec<(String, String, String, Vec<String>)> = run["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .filter(|t| t["old"] != t["new"])
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            let ex = t["examples"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            (s("event"), s("old"), s("new"), ex)
        })
        .collect();
    assert_eq!(
        changed,
        vec![
            (
                "account.created-v1".into(),
                "decoded".into(),
                "invalid".into(),
                vec!["RP:3".into()]
            ),
            (
                "account.created-v9".into(),
                "unknown_version".into(),
                "decoded".into(),
                vec!["RP:8".into()]
            ),
        ]
    );
    let fixture_fp = run["catalogue"].as_str().expect("fingerprint").to_owned();
    assert_ne!(fixture_fp, event_audit::decode::catalogue::FINGERPRINT);

    // Originals unchanged; event_log shows the latest re-verdict beside them.
    let after: Vec<(i64, String, Vec<u8>)> =
        sqlx::query_as("SELECT stream_seq, status, row_hash FROM audit.events ORDER BY stream_seq")
            .fetch_all(&db.pool)
            .await
            .expect("rows");
    assert_eq!(before, after);
    let (status, rv, cat): (String, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT status, reverdict_status, reverdict_catalogue FROM event_log WHERE stream_seq = 3",
    )
    .fetch_one(&db.pool)
    .await
    .expect("event_log");
    assert_eq!(
        (status.as_str(), rv.as_deref(), cat.as_deref()),
        ("decoded", Some("invalid"), Some(fixture_fp.as_str()))
    );
    assert_verifies(&db.url, 10).await;
    // Reconciliation reads the latest verdict.
    let latest: Vec<String> = sqlx::query_scalar(
        "SELECT audit.latest_status(stream, stream_seq, published_at, status) FROM audit.events \
         WHERE stream_seq IN (3, 8) ORDER BY stream_seq",
    )
    .fetch_all(&db.pool)
    .await
    .expect("latest");
    assert_eq!(latest, vec!["invalid", "decoded"]);

    // A second run with the built-in catalogue, on the rows first recorded as unknown versions:
    // compared with their latest verdict (the fixture's `decoded`), the verdict changes back,
    // and the latest re-verdict is its.
    let second = transitions(&db.url, &["--status", "unknown_version"]).await;
    assert_eq!(
        second["totals"],
        serde_json::json!({"decoded→unknown_version": 1})
    );
    assert_eq!(second["changed"], 1);
    let rv: Option<String> =
        sqlx::query_scalar("SELECT reverdict_status FROM event_log WHERE stream_seq = 8")
            .fetch_one(&db.pool)
            .await
            .expect("event_log");
    assert_eq!(rv.as_deref(), Some("unknown_version"));
    assert_verifies(&db.url, 10).await;

    // An empty range says so and exits 0.
    let empty = event_audit(
        &[
            "reprocess",
            "--database-url",
            &db.url,
            "--since",
            "2030-01-01",
        ],
        &[],
    )
    .await;
    assert_eq!(empty.code, Some(0), "{empty:?}");
    assert!(empty.stderr.contains("nothing to reprocess"), "{empty:?}");

    // A removed page record is caught (the run end says how many rows the run judged).
    sqlx::query("ALTER TABLE audit.reprocess_pages DISABLE TRIGGER reprocess_pages_no_change")
        .execute(&db.pool)
        .await
        .expect("disable");
    let run_id = run["run_id"].as_i64().expect("run id");
    sqlx::query(&format!(
        "CREATE TABLE public.kept_pages AS SELECT * FROM audit.reprocess_pages WHERE run_id = {run_id}"
    ))
    .execute(&db.pool)
        .await
        .expect("keep");
    sqlx::query("DELETE FROM audit.reprocess_pages WHERE run_id = $1")
        .bind(run_id)
        .execute(&db.pool)
        .await
        .expect("delete");
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.first_break().contains(&format!(
            "reprocess run {run_id}: its pages record 0 rows judged"
        )),
        "{v:?}"
    );
    sqlx::query("INSERT INTO audit.reprocess_pages SELECT * FROM public.kept_pages")
        .execute(&db.pool)
        .await
        .expect("restore");
    assert_verifies(&db.url, 10).await;

    // An edited re-verdict is caught.
    sqlx::query("ALTER TABLE audit.reverdicts DISABLE TRIGGER reverdicts_no_change")
        .execute(&db.pool)
        .await
        .expect("disable");
    sqlx::query("UPDATE audit.reverdicts SET status = 'decoded' WHERE stream_seq = 3")
        .execute(&db.pool)
        .await
        .expect("edit");
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.first_break().contains("re-verdict") && v.first_break().contains("stream_seq=3"),
        "{v:?}"
    );
}

#[tokio::test]
async fn reprocess_resumes_a_run() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    sink.write_batch(&mut mix::records("RS"))
        .await
        .expect("write");
    // A run that stopped after its first page: opened, its first three rows judged by the
    // fixture catalogue and written with their page record, not closed.
    let fixture = fixture_catalogue();
    let dir = fixture.path().to_str().expect("utf-8");
    let cat = compat::dynamic(&compat::load(fixture.path()).expect("fixture loads"));
    let judge = event_audit::test_support::evolution::reprocess::Judge::Loaded(&cat);
    let store = event_audit::test_support::evolution::reprocess::store::ReprocessStore::new(
        Db::from_pool(db.pool.clone()),
    );
    let sel = event_audit::test_support::evolution::reprocess::Selection::default();
    let id = store
        .open_run(
            &judge.fingerprint(),
            &serde_json::to_string(&sel).expect("json"),
        )
        .await
        .expect("open");
    let page = store
        .page(
            &sel,
            &event_audit::test_support::evolution::reprocess::Cursor::start(),
            3,
        )
        .await
        .expect("page");
    let first = event_audit::test_support::evolution::reprocess::judge_page(
        &judge,
        &judge.fingerprint(),
        &page,
        id,
    );
    store.write(id, &first).await.expect("write a page");
    let resumed = transitions(
        &db.url,
        &[
            "--resume",
            &id.to_string(),
            "--page-size",
            "4",
            "--catalogue-dir",
            dir,
        ],
    )
    .await;
    assert_eq!(resumed["run_id"], id);
    assert_eq!(resumed["rows"], 10, "{resumed}");
    // The same counts as a run that never stopped.
    assert_eq!(
        resumed["totals"],
        serde_json::json!({
            "decoded→decoded": 4, "decoded→invalid": 1, "invalid→invalid": 2,
            "unknown_version→decoded": 1, "unknown_type→unknown_type": 2,
        })
    );
    let (pages, judged): (i64, i64) = sqlx::query_as(
        "SELECT count(*), sum(rows)::int8 FROM audit.reprocess_pages WHERE run_id = $1",
    )
    .bind(id)
    .fetch_one(&db.pool)
    .await
    .expect("pages");
    assert_eq!((pages, judged), (3, 10), "every row judged once");
    let per_key: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT (stream, stream_seq)) FROM audit.reverdicts WHERE run_id = $1",
    )
    .bind(id)
    .fetch_one(&db.pool)
    .await
    .expect("count");
    assert_eq!(per_key, resumed["changed"].as_i64().expect("changed"));
    let again = event_audit(
        &[
            "reprocess",
            "--database-url",
            &db.url,
            "--resume",
            &id.to_string(),
            "--catalogue-dir",
            dir,
        ],
        &[],
    )
    .await;
    assert_eq!(
        again.code,
        Some(2),
        "a finished run does not resume: {again:?}"
    );
    assert_verifies(&db.url, 10).await;
}

#[tokio::test]
async fn rewritten_reverdict_runs_are_caught_by_their_witnessed_checkpoints() {
    use crate::support::witness::{in_process_signer, verify_witness, write_keys, Witness};

    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    sink.write_batch(&mut mix::records("RW"))
        .await
        .expect("write");
    let fixture = fixture_catalogue();
    transitions(&db.url, &[]).await;
    transitions(
        &db.url,
        &["--catalogue-dir", fixture.path().to_str().expect("utf-8")],
    )
    .await;
    assert_eq!(count(&db.pool, "audit.reprocess_run_ends").await, 2);

    // The signer signs both trees: the rows (10) and the closed runs (2, origin O/reverdicts).
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("example.com/logs/{}", db.name);
    let (_, public, key) = write_keys(tmp.path(), &origin, 91);
    let mut s = event_audit::config::Settings::default();
    s.nats.url = crate::support::nats_url();
    s.witness.checkpoint_stream = crate::support::unique("RV_CP");
    s.witness.signer_state = Some(tmp.path().join("signer.state"));
    let _w = Witness(s.witness.checkpoint_stream.clone());
    let (signer, _, _) = in_process_signer(&db, key, &origin, &s).await;
    signer.prepare().await.expect("stream");
    let round = signer.round().await.expect("round");
    assert_eq!(
        round.signed,
        vec![("events", 10), ("reverdicts", 2)],
        "{round:?}"
    );
    let state = tmp.path().join("auditor.json");
    let st = state.to_str().expect("utf-8");
    let cps = s.witness.checkpoint_stream.clone();
    let ok = verify_witness(&db.url, &public, &cps, &["--state-file", st]).await;
    assert_eq!(ok.code, Some(0), "{ok:?}");
    assert!(ok.stderr.contains("(re-verdict runs: 2)"), "{ok:?}");

    // A DBA removes the second run whole (its end, re-verdicts, pages and run row, triggers
    // off): the remaining run chain is consistent, so the walk alone finds nothing; the
    // re-verdict runs' witnessed tree does.
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica");
    for table in [
        "audit.reprocess_run_ends",
        "audit.reverdicts",
        "audit.reprocess_pages",
    ] {
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE run_id = (SELECT max(id) FROM audit.reprocess_runs)"
        ))
        .execute(&mut *tx)
        .await
        .expect("delete");
    }
    sqlx::query(
        "DELETE FROM audit.reprocess_runs WHERE id = (SELECT max(id) FROM audit.reprocess_runs)",
    )
    .execute(&mut *tx)
    .await
    .expect("delete the run");
    tx.commit().await.expect("commit");
    assert_verifies(&db.url, 10).await;
    for extra in [
        vec!["--state-file", st],
        vec!["--state-file", st, "--full"],
        vec!["--no-state"],
    ] {
        let v = verify_witness(&db.url, &public, &cps, &extra).await;
        assert_eq!(v.code, Some(1), "{extra:?}: {v:?}");
        assert!(v.stderr.contains("re-verdict checkpoint size 2"), "{v:?}");
    }
}
