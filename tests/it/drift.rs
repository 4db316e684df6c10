//! Drift from live traffic against the real PostgreSQL: a known mix written through the sink
//! gives a golden `drift` report (undeclared fields with their kinds, optional fields never
//! seen, required fields missing, type mismatches, unknown versions and types), counts new
//! undeclared paths once, and `drift --suggest` prints a patch that applies to catalogue/ and
//! adds the observed optional fields (top-level ones to their events, nested ones to their
//! shapes).

use crate::support::cli::event_audit;
use crate::support::mix;
use crate::support::TestDb;
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;

fn golden(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares with a golden file; `BLESS=1` writes it.
/// The catalogue's fingerprint is replaced: editing catalogue/ must not break the golden files.
fn assert_golden(name: &str, got: &str) {
    let got = &got.replace(event_audit::decode::catalogue::FINGERPRINT, "<fingerprint>");
    let path = golden(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, got).expect("write golden");
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        got, &want,
        "{name} differs from its golden file (BLESS=1 to rewrite)"
    );
}

#[tokio::test]
async fn drift_reports_a_known_mix() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    let out = sink
        .write_batch(&mut mix::records("DRIFT"))
        .await
        .expect("write");
    assert_eq!(out.inserted, mix::MIX.len());
    let mut new_fields = out.new_fields.clone();
    new_fields.sort();
    assert_eq!(
        new_fields,
        vec![
            ("account.created-v1".to_owned(), 2),
            ("account.occupied-v1".to_owned(), 2)
        ],
        "nickname and score, meta and tags are new"
    );
    // The same fields again (other messages): nothing new.
    let mut again = mix::records("DRIFT2");
    let out = sink.write_batch(&mut again).await.expect("write again");
    assert!(out.new_fields.is_empty(), "{:?}", out.new_fields);

    let json = event_audit(
        &["drift", "--database-url", &db.url, "--format", "json"],
        &[],
    )
    .await;
    assert_eq!(json.code, Some(0), "{json:?}");
    let report = json.json();
    assert_golden(
        "drift.json",
        &format!("{}\n", serde_json::to_string_pretty(&report).expect("json")),
    );
    let created = report["events"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["event"] == "account.created-v1"))
        .expect("account.created-v1 in the report");
    assert_eq!(created["rows"]["decoded"], 6);
    assert_eq!(created["rows"]["invalid"], 4);
    assert_eq!(
        created["optional_never_seen"],
        serde_json::json!(["is_imported"])
    );

    let table = event_audit(&["drift", "--database-url", &db.url], &[]).await;
    assert_eq!(table.code, Some(0), "{table:?}");
    assert_golden("drift.txt", &table.stdout);

    // A range without observations.
    let none = event_audit(
        &["drift", "--database-url", &db.url, "--since", "2030-01-01"],
        &[],
    )
    .await;
    assert!(none.stdout.contains("no observations"), "{none:?}");

    // A field nested in a shape: suggested for the shape, in shapes.toml.
    let mut nested = mix::records_of(
        "DRIFT3",
        &[(
            "account.communications_preferences_updated-v1",
            r#"{"account_number":"A10","changes":{"requires_postal_comms":[true],"channel":"sms"}}"#,
        )],
    );
    sink.write_batch(&mut nested).await.expect("write nested");

    // The suggestion applies to a copy of catalogue/ and adds the fields with their types.
    let dir = tempfile::tempdir().expect("temp dir");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    std::fs::create_dir(dir.path().join("catalogue")).expect("mkdir");
    for f in ["shapes.toml", "field_sets.toml", "events.toml"] {
        std::fs::copy(src.join(f), dir.path().join("catalogue").join(f)).expect("copy");
    }
    let s = event_audit(&["drift", "--database-url", &db.url, "--suggest"], &[]).await;
    assert_eq!(s.code, Some(0), "{s:?}");
    assert!(s.stderr.contains("tags is an array"), "{s:?}");
    let patch = dir.path().join("drift.patch");
    std::fs::write(&patch, &s.stdout).expect("write patch");
    let applied = std::process::Command::new("patch")
        .args(["-p1", "-i"])
        .arg(&patch)
        .current_dir(dir.path())
        .output()
        .expect("run patch");
    assert!(applied.status.success(), "{applied:?}\n{}", s.stdout);
    let cat = event_audit::test_support::evolution::compat::load(&dir.path().join("catalogue"))
        .expect("patched catalogue loads");
    let field = |event: &str, name: &str| {
        cat.events
            .iter()
            .find(|e| e.name == event)
            .and_then(|e| e.fields.iter().find(|f| f.name == name))
            .map(|f| (f.ty.text(), f.required))
    };
    assert_eq!(
        field("account.created-v1", "nickname"),
        Some(("string".into(), false))
    );
    assert_eq!(
        field("account.created-v1", "score"),
        Some(("number".into(), false))
    );
    assert_eq!(
        field("account.occupied-v1", "meta"),
        Some(("object".into(), false))
    );
    assert_eq!(field("account.occupied-v1", "tags"), None);
    let shape_field = cat
        .shapes
        .iter()
        .find(|s| s.name == "accounts-accounts-AccountCommsPreferencesChanges")
        .and_then(|s| s.fields.iter().find(|f| f.name == "channel"))
        .map(|f| (f.ty.text(), f.required));
    assert_eq!(shape_field, Some(("string".into(), false)));
    assert!(
        s.stderr.contains(
            "shape accounts-accounts-AccountCommsPreferencesChanges gains channel (string)"
        ),
        "{s:?}"
    );
}

#[tokio::test]
async fn reading_commands_never_create_a_database() {
    let url = TestDb::missing_url();
    for args in [
        vec!["drift", "--database-url", &url],
        vec!["reprocess", "--dry-run", "--database-url", &url],
    ] {
        let run = event_audit(&args, &[]).await;
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
    }
    let admin = sqlx::PgPool::connect(&crate::support::db::admin_url())
        .await
        .expect("admin");
    let name = url.rsplit('/').next().unwrap_or_default().to_owned();
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&admin)
            .await
            .expect("look up");
    assert!(!exists, "a reading command created {name}");
    // A catalogue directory that does not parse: file, line, problem.
    let dir = tempfile::tempdir().expect("temp dir");
    for f in ["shapes.toml", "field_sets.toml"] {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("catalogue")
            .join(f);
        std::fs::copy(src, dir.path().join(f)).expect("copy");
    }
    std::fs::write(
        dir.path().join("events.toml"),
        "[[event]]\nname = \"a-v1\"\nfields = [ oops ]\n",
    )
    .expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let run = event_audit(&["catalogue", "diff", d], &[]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("events.toml") && run.stderr.contains("line 3"),
        "{run:?}"
    );
}
