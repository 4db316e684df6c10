//! The administrators' rollback, scripted against real PostgreSQL, NATS and a witness process:
//! a genuine log with cosigned checkpoints that an auditor has verified (keeping the state),
//! then the audit stream recreated with fewer, altered events, the database replaced by a forged
//! one under the same name, the checkpoint stream deleted, and the daemon restarted as usual
//! with the key. The signer signs nothing of the forged tree; the witness refuses the forged
//! checkpoint even when signed with the genuine key; `verify` with the auditor's state exits 1,
//! by default and with `--incremental`, and again on the next run. With the signer's memory wiped too, the
//! witness's answer stops the signer and nothing forged is cosigned.

use std::path::{Path, PathBuf};

use crate::support::app::{run_until_idle, run_until_idle_logging, settings};
use crate::support::db::admin_url;
use crate::support::witness::{verify_witness, witness_with_policy, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use event_audit::config::{Dur, Settings};
use event_audit::test_support::db::Db;
use event_audit::test_support::log::tree::TreeStore;
use event_audit::tlog::note::{self, Checkpoint};
use event_audit::tlog::policy::WitnessPolicy;

fn signing(
    db: &TestDb,
    ts: &TestStream,
    key: &Path,
    cps: &str,
    policy: &Path,
    state: &Path,
) -> Settings {
    let mut s = settings(db, ts);
    s.ingest.batch_size = 10;
    s.witness.signing_key_file = Some(key.to_owned());
    s.witness.checkpoint_stream = cps.to_owned();
    s.witness.checkpoint_interval = Dur::secs(3600);
    s.witness.witness_policy = Some(policy.to_owned());
    s.witness.signer_state = Some(state.to_owned());
    s
}

/// Replaces the database by an empty one under the same name (as its administrator can).
async fn replace_database(db: &mut TestDb) {
    db.pool.close().await;
    let admin = sqlx::PgPool::connect(&admin_url()).await.expect("admin");
    for sql in [
        format!("DROP DATABASE \"{}\" WITH (FORCE)", db.name),
        format!("CREATE DATABASE \"{}\"", db.name),
    ] {
        sqlx::query(&sql)
            .execute(&admin)
            .await
            .expect("replace the database");
    }
    admin.close().await;
    db.pool = sqlx::PgPool::connect(&db.url).await.expect("reconnect");
}

/// Deletes a stream and creates it again, empty, under the same name and subjects.
async fn recreate_stream(ts: &TestStream) {
    ts.js
        .delete_stream(&ts.name)
        .await
        .expect("delete the audit stream");
    ts.js
        .create_stream(async_nats::jetstream::stream::Config {
            name: ts.name.clone(),
            subjects: vec![format!("{}.>", ts.name)],
            max_age: std::time::Duration::from_secs(3600),
            ..Default::default()
        })
        .await
        .expect("recreate the audit stream");
}

async fn stored_checkpoints(db: &TestDb) -> Vec<(i64, bool)> {
    sqlx::query_as(
        "SELECT tree_size, published FROM audit.checkpoints WHERE log = 'events' ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .expect("checkpoints")
}

#[tokio::test]
async fn a_rollback_by_the_administrators_is_refused_and_detected() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut db = TestDb::create().await;
    let ts = TestStream::create("rollback").await;
    let cps = format!("{}_CP", ts.name);
    let _cp_guard = Witness(cps.clone());
    let origin = format!("example.com/logs/{}", db.name);
    let (key, public, log_key) = write_keys(tmp.path(), &origin, 41);
    let (witness, policy) =
        witness_with_policy(tmp.path(), "auditor.example/w1", 42, &public).await;
    let parsed =
        WitnessPolicy::parse(&std::fs::read_to_string(&policy).expect("policy")).expect("policy");
    let signer_state: PathBuf = tmp.path().join("signer.state");
    let auditor: PathBuf = tmp.path().join("auditor.json");
    let (p, st) = (
        policy.to_str().expect("utf-8"),
        auditor.to_str().expect("utf-8"),
    );

    // The genuine log: checkpoints 30 and 50, each cosigned by the witness.
    ts.publish_load(30, 51).await;
    run_until_idle(signing(&db, &ts, &key, &cps, &policy, &signer_state)).await;
    ts.publish_load(20, 52).await;
    run_until_idle(signing(&db, &ts, &key, &cps, &policy, &signer_state)).await;
    assert_eq!(stored_checkpoints(&db).await, vec![(30, true), (50, true)]);
    let first = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--witness-policy", p, "--state-file", st],
    )
    .await;
    assert_eq!(first.code, Some(0), "{first:?}");
    assert!(first.stderr.contains("up to size 50"), "{first:?}");

    // The rewrite: fewer, altered events on a recreated stream; a forged database under the
    // genuine name; the checkpoint stream deleted. Then the routine restart, with the key.
    recreate_stream(&ts).await;
    ts.publish_load(30, 99).await;
    replace_database(&mut db).await;
    ts.js
        .delete_stream(&cps)
        .await
        .expect("delete the checkpoint stream");
    let restarted =
        run_until_idle_logging(signing(&db, &ts, &key, &cps, &policy, &signer_state)).await;
    assert_eq!(crate::support::count_rows(&db.pool).await, 30);
    // The signer signs nothing of the forged tree, and says why.
    assert_eq!(stored_checkpoints(&db).await, vec![], "nothing signed");
    let refusal = restarted.errors().join("\n");
    assert!(
        refusal.contains("checkpoint signer refuses")
            && refusal.contains("fewer than the checkpoint of size 50"),
        "{refusal}"
    );

    // The adversary signs the forged tree with the genuine key: the witness refuses it.
    let trees = TreeStore::new(Db::from_pool(db.pool.clone()));
    let forged = log_key.sign(&Checkpoint {
        origin: origin.clone(),
        size: 30,
        root: trees.root(30).await.expect("root"),
    });
    let client = reqwest::Client::new();
    for old in [0, 30, 50] {
        let r = client
            .post(format!("{}/add-checkpoint", witness.url))
            .body(format!("old {old}\n\n{forged}"))
            .send()
            .await
            .expect("post");
        let status = r.status().as_u16();
        assert!(status == 409 || status == 400, "old {old}: {status}");
        if status == 409 {
            assert_eq!(r.text().await.expect("body"), "50\n");
        }
    }
    // ...and publishes it (its note verifies with the log's key, but carries no cosignature).
    let js = &ts.js;
    js.publish(
        event_audit::test_support::witnessed::signer::publish::subject(&cps),
        forged.clone().into(),
    )
    .await
    .expect("publish")
    .await
    .expect("ack");
    assert!(parsed.check(&forged).is_err());

    // The auditor, with the state from before: exit 1, with --incremental and without, with and without
    // the policy, printing both signed notes where the witness shows a smaller tree; and again.
    for extra in [vec!["--incremental"], vec![]] {
        for with_policy in [true, false] {
            let mut args = vec!["--state-file", st];
            if with_policy {
                args.extend(["--witness-policy", p]);
            }
            args.extend(extra.iter().copied());
            let v = verify_witness(&db.url, &public, &cps, &args).await;
            assert_eq!(v.code, Some(1), "{args:?}: {v:?}");
            assert!(v.stderr.contains("rollback"), "{args:?}: {v:?}");
            if !with_policy {
                assert!(
                    v.stderr.contains("size 30")
                        && v.stderr.matches("--- signed note").count() == 2,
                    "{v:?}"
                );
            }
        }
    }
    let saved = std::fs::read_to_string(&auditor).expect("state");
    assert!(
        saved.contains("\\n50\\n"),
        "the state still holds size 50: {saved}"
    );

    // The signer's memory wiped as well: with nothing to remember, it signs the forged tree,
    // but the witness has cosigned 50, so the signer stops and nothing forged goes out.
    std::fs::remove_file(&signer_state).expect("wipe the signer's memory");
    let again = run_until_idle_logging(signing(&db, &ts, &key, &cps, &policy, &signer_state)).await;
    let errors = again.errors().join("\n");
    assert!(errors.contains("has cosigned a tree of 50"), "{errors}");
    assert_eq!(
        stored_checkpoints(&db).await,
        vec![(30, false)],
        "signed, never published"
    );
    let (found, _) = event_audit::test_support::witnessed::signer::read_witness(&signing(
        &db,
        &ts,
        &key,
        &cps,
        &policy,
        &signer_state,
    ))
    .await
    .expect("read");
    assert!(
        found.iter().all(|f| parsed.check(&f.note).is_err()),
        "nothing forged is cosigned"
    );
    let v = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--state-file", st, "--witness-policy", p],
    )
    .await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let _ = note::claimed(&forged);
}
