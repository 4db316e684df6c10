//! An erasure request as a migration operator meets it: a batch played by the platform
//! simulator, recorded, registered and reconciled; one person erased by the external account
//! number the supplier knows, another by the platform's number. Afterwards a `pg_dump` holds
//! neither number nor their e-mail addresses, the next reconciliation reports both as `erased`
//! (no registration verdict, nothing stored, nothing asking for action), the erasure record
//! names them only by commitments an auditor given the number and the opening can check
//! (checked here in Python), `verify` exits 0 and the erased rows' bundles verify in both
//! verifiers.

use serde_json::Value;

use crate::support::bundle::expect_text;
use crate::support::cli::{event_audit, reconcile, register_batch, Run};
use crate::support::personal::pg_dump;
use crate::support::sim::{counts, Sim, TOKEN};
use crate::support::witness::{signing, verify_witness, write_keys, Witness};
use std::time::Duration;

use crate::support::{run_until_idle, settings, spawn_app, verify, TestDb, TestStream};
use event_audit::config::Dur;
use event_audit::config::SimRates;

async fn erase(db: &TestDb, number: &str, extra: &[&str], stream: &str) -> Run {
    let mut args = vec![
        "erase",
        "--database-url",
        &db.url,
        "--account",
        number,
        "--reason",
        "erasure request 2026-204",
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[("EVENT_AUDIT_STREAM", stream)]).await
}

async fn reconcile_batch(db: &TestDb, sim: &Sim) -> Run {
    let args = [
        "--supplier",
        "ACME",
        "--batch",
        "week-9",
        "--registration-grace",
        "30m",
        "--format",
        "json",
    ];
    reconcile(&db.url, &sim.url, TOKEN, &args).await
}

/// The e-mail addresses the log holds for a platform account number.
async fn emails_of(db: &TestDb, platform: &str) -> Vec<String> {
    let pool = &db.pool;
    sqlx::query_scalar(
        "SELECT DISTINCT jsonb_array_elements_text(payload -> 'account_user_emails') \
         FROM audit.events WHERE account_number = $1 AND payload ? 'account_user_emails'",
    )
    .bind(platform)
    .fetch_all(pool)
    .await
    .expect("read the e-mail addresses")
}

fn result_of<'a>(report: &'a Value, ext: &str) -> &'a Value {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["external_account_number"] == ext)
        .unwrap_or_else(|| panic!("no result for {ext}"))
}

/// Whether SHA-256(domain ‖ opening ‖ number), computed by Python's hashlib, is among the
/// erasure record's subjects.
fn python_checks(record: &str, number: &str, opening: &str) -> bool {
    let script = r#"
import hashlib, json, sys
record, number, opening = json.loads(sys.argv[1]), sys.argv[2], bytes.fromhex(sys.argv[3])
c = hashlib.sha256(b"event-audit erasure subject v1\n" + opening + number.encode()).hexdigest()
sys.exit(0 if c in record["subjects"] else 1)
"#;
    std::process::Command::new("python3")
        .args(["-c", script, record, number, opening])
        .status()
        .expect("run python3")
        .success()
}

/// The openings a report prints, in order.
fn openings(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("commitment opening: "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_person_erased_by_either_number_stays_erased_and_the_log_still_verifies() {
    let db = TestDb::create().await;
    let ts = TestStream::create("erase_person").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 11);
    let dir = tmp.path().join("checkpoints");
    let sim = Sim::start(&ts, "ACME", 6, 45, SimRates::default()).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    let manifest = sim.manifest_file(tmp.path(), "week-9.txt");
    let reg = register_batch(&db.url, "ACME", "week-9", &manifest).await;
    assert_eq!(reg.code, Some(0), "{reg:?}");
    let first = reconcile_batch(&db, &sim).await;
    assert_eq!(first.code, Some(0), "{first:?}");
    let report = first.json();
    assert_eq!(counts(&report)["matched"], 6, "{report}");

    // Person 1 is asked for by the external number, person 2 by the platform's.
    let ext1 = sim.manifest.accounts[0].clone();
    let ext2 = sim.manifest.accounts[1].clone();
    let number = |ext: &str| {
        result_of(&report, ext)["platform_account_number"]
            .as_str()
            .expect("a platform number")
            .to_owned()
    };
    let (plat1, plat2) = (number(&ext1), number(&ext2));
    let mut traces = vec![ext1.clone(), plat1.clone(), ext2.clone(), plat2.clone()];
    let emails: Vec<String> = [emails_of(&db, &plat1).await, emails_of(&db, &plat2).await].concat();
    assert!(
        emails.len() >= 2,
        "the simulator's accounts carry addresses"
    );
    traces.extend(emails);
    let before = pg_dump(&db);
    for t in &traces {
        assert!(before.contains(t.as_str()), "{t} is in the log before");
    }

    // A dry run lists the person: both numbers, what holds each, and changes nothing.
    let dry = erase(&db, &ext1, &["--dry-run"], &ts.name).await;
    assert_eq!(dry.code, Some(0), "{dry:?}");
    for want in [
        format!("external account number {ext1} (via given)"),
        format!("platform account number {plat1} (via "),
        "audit.reconcile_results: runs 1".to_owned(),
        "audit.batch_members: batches ACME/week-9".to_owned(),
        format!("audit.events: stream {} sequences", ts.name),
    ] {
        assert!(dry.stdout.contains(&want), "{want}: {}", dry.stdout);
    }
    assert!(pg_dump(&db).contains(&ext1), "a dry run erased");

    let one = erase(&db, &ext1, &[], &ts.name).await;
    assert_eq!(one.code, Some(0), "{one:?}");
    assert!(one.stdout.contains("recorded as erasure 1"), "{one:?}");
    assert!(one.stdout.contains("1 batch memberships"), "{one:?}");
    for t in [&ext1, &plat1] {
        assert!(!one.stdout.contains(t.as_str()), "the report names {t}");
    }
    let open1 = openings(&one.stdout);
    assert_eq!(open1.len(), 2, "{one:?}");
    let two = erase(&db, &plat2, &[], &ts.name).await;
    assert_eq!(two.code, Some(0), "{two:?}");
    let open2 = openings(&two.stdout);
    assert_eq!(open2.len(), 2, "{two:?}");
    // The person's data is gone from the bus as from the database.
    let dump = pg_dump(&db);
    for t in &traces {
        assert!(!dump.contains(t.as_str()), "pg_dump still holds {t}");
    }

    // The daemon counts the people erased.
    let mut s = settings(&db, &ts);
    s.reconcile.poll = Dur::secs(1);
    let app = spawn_app(s).await;
    app.metrics_with("event_audit_erased_people_total 2", Duration::from_secs(20))
        .await;
    app.stop().await;

    // The next reconciliation neither asks about nor stores them, nor asks for action.
    let again = reconcile_batch(&db, &sim).await;
    assert_eq!(again.code, Some(0), "{again:?}");
    let report = again.json();
    let c = counts(&report);
    assert_eq!((c["matched"], c["erased"]), (4, 2), "{report}");
    assert_eq!(report["accounts"], 6, "the batch keeps its size");
    for t in ["erased:1", "erased:2"] {
        let r = result_of(&report, t);
        assert_eq!(r["verdict"], "erased");
        assert_eq!(r["registration"], Value::Null, "{r}");
        assert_eq!(r["platform_account_number"], Value::Null, "{r}");
    }
    assert_eq!(report["registration_counts"]["never_requested"], 0);
    let dump = pg_dump(&db);
    for t in &traces {
        assert!(
            !dump.contains(t.as_str()),
            "reconciled again: pg_dump holds {t}"
        );
    }
    let diff = event_audit(
        &[
            "reconcile",
            "diff",
            "--database-url",
            &db.url,
            "--batch",
            "week-9",
        ],
        &[],
    )
    .await;
    assert!(diff.stdout.contains("matched → erased"), "{diff:?}");

    // The records commit to the numbers: checkable with the number and its opening only.
    let pool = &db.pool;
    let records: Vec<String> = sqlx::query_scalar(
        "SELECT convert_from(raw, 'UTF8') FROM audit.events \
         WHERE stream = 'event-audit.erasures' ORDER BY stream_seq",
    )
    .fetch_all(pool)
    .await
    .expect("the erasure records");
    assert_eq!(records.len(), 2);
    // The given number comes first.
    assert!(python_checks(&records[0], &ext1, &open1[0]));
    assert!(python_checks(&records[0], &plat1, &open1[1]));
    assert!(python_checks(&records[1], &plat2, &open2[0]));
    assert!(python_checks(&records[1], &ext2, &open2[1]));
    assert!(
        !python_checks(&records[0], &ext2, &open1[0]),
        "another number"
    );

    // The evidence still holds: verify against the witnessed checkpoints, and the erased rows'
    // bundles in both verifiers.
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    let w = verify_witness(&db.url, &public, &cps, &["--no-state"]).await;
    assert_eq!(w.code, Some(0), "{w:?}");
    assert_eq!(verify(&db.url).await.code, Some(0));
    let erased: Vec<i64> = sqlx::query_scalar(
        "SELECT stream_seq FROM audit.events WHERE stream = $1 AND payload IS NULL \
         AND octet_length(raw) = 0 ORDER BY stream_seq LIMIT 3",
    )
    .bind(&ts.name)
    .fetch_all(pool)
    .await
    .expect("erased rows");
    assert!(!erased.is_empty());
    let (p, d) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
    );
    let k = key.public().encode();
    let stream = ts.js.get_stream(&ts.name).await.expect("stream");
    for seq in erased {
        let on_bus = stream
            .get_raw_message(u64::try_from(seq).expect("seq"))
            .await;
        assert!(on_bus.is_err(), "message {seq} is still on the bus");
        let seq = seq.to_string();
        let args = [
            "prove",
            "--database-url",
            &db.url,
            "--stream",
            &ts.name,
            "--seq",
            &seq,
            "--public-key",
            p,
            "--checkpoint-dir",
            d,
        ];
        let b = event_audit(&args, &[]).await;
        assert_eq!(b.code, Some(0), "{b:?}");
        for t in &traces {
            assert!(!b.stdout.contains(t.as_str()), "the bundle holds {t}");
        }
        expect_text(&b.stdout, &k, &["--origin", &origin], &[], 0, "OK: 1 entry");
    }
    // Asked again: nothing left of either person.
    let none = erase(&db, &ext1, &[], &ts.name).await;
    assert_eq!(none.code, Some(2), "{none:?}");
}

#[tokio::test]
async fn an_external_number_in_two_suppliers_batches_needs_the_supplier() {
    let db = TestDb::create().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("m.txt");
    std::fs::write(&file, "E-SHARED-1\nE-OTHER-2\n").expect("manifest");
    for s in ["ACME", "OTHERCO"] {
        let r = register_batch(&db.url, s, "w1", &file).await;
        assert_eq!(r.code, Some(0), "{r:?}");
    }
    let run = |extra: &'static [&'static str]| {
        let url = db.url.clone();
        async move {
            let mut args = vec![
                "erase",
                "--database-url",
                &url,
                "--account",
                "E-SHARED-1",
                "--reason",
                "req 1",
            ];
            args.extend_from_slice(extra);
            event_audit(&args, &[]).await
        }
    };
    let ambiguous = run(&[]).await;
    assert_eq!(ambiguous.code, Some(2), "{ambiguous:?}");
    assert!(
        ambiguous
            .stderr
            .contains("several suppliers (ACME, OTHERCO)")
            && ambiguous.stderr.contains("--supplier"),
        "{ambiguous:?}"
    );
    let done = run(&["--supplier", "ACME"]).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(done.stdout.contains("1 batch memberships"), "{done:?}");
    let pool = &db.pool;
    let left: Vec<(String, String)> = sqlx::query_as(
        "SELECT b.supplier, m.external_id FROM audit.batch_members m \
         JOIN audit.batches b ON b.id = m.batch_id WHERE m.external_id LIKE 'E-SHARED%' OR m.external_id LIKE 'erased:%' \
         ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("members");
    assert_eq!(
        left,
        vec![
            ("ACME".into(), "erased:1".into()),
            ("OTHERCO".into(), "E-SHARED-1".into())
        ]
    );
    // A manifest may not list a tombstone.
    std::fs::write(&file, "erased:1\n").expect("manifest");
    let r = register_batch(&db.url, "ACME", "w2", &file).await;
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("marks an erased member"), "{r:?}");
}
