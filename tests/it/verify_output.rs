//! What `verify` prints, held to its shape: the one JSON document on stdout (its keys, their
//! order and their values' kinds, at every depth) and the summary lines on stderr, for a clean
//! log, with `--mirror`, `--archive`, `--public-key` with a witness policy and a state file or
//! `--no-state`, a row edited in place, a row missing from the log, and a mirror that cannot be
//! read (exit 2, nothing on stdout). Scripts read this document: a change of its shape is a
//! change of the interface.

use std::path::Path;

use crate::support::app::{run_until_idle, settings};
use crate::support::cli::{event_audit, Run};
use crate::support::db::{as_superuser, as_superuser_at};
use crate::support::personal::{month_before_last, write_old_rows};
use crate::support::witness::{witness_with_policy, write_keys, Witness};
use crate::support::{nats_url, TestDb, TestStream};
use chrono::{Datelike, TimeZone, Utc};

mod golden;
mod shape;

use shape::{shape, text_lines};

/// The first instant of this month (UTC), RFC 3339.
fn this_month() -> String {
    let now = Utc::now();
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .expect("a month")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Copies a directory tree (the auditor's copy of the log's tiles).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let p = e.expect("entry").path();
        let dest = to.join(p.file_name().expect("name"));
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// A verify run's exit code, document shape and summary lines, the test's own names (paths,
/// database, streams) replaced.
fn outcome(run: &Run, names: &[(&str, &str)]) -> String {
    let out = run.stdout.trim();
    let doc = if out.is_empty() {
        "-".to_owned()
    } else {
        shape(out).unwrap_or_else(|e| panic!("not one JSON document ({e}): {run:?}"))
    };
    let lines = text_lines(&run.stderr, names);
    format!("exit {:?}\n{doc}\n{lines}", run.code)
}

/// `event-audit ARGS`, HOME in the temporary directory (the default state file lives there).
async fn run(args: &[String], home: &str) -> Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    event_audit(&args, &[("HOME", home)]).await
}

#[tokio::test]
async fn the_document_and_the_summary_keep_their_shape() {
    let db = TestDb::create().await;
    let ts = TestStream::create("vshape").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let origin = format!("event-audit/{}", db.name);
    let (private, public, _) = write_keys(dir, &origin, 31);
    let (_witness, policy) = witness_with_policy(dir, "auditor.example/shape", 32, &public).await;
    write_old_rows(
        &db,
        "VSHAPEOLD",
        1,
        6,
        "dora.shape@example.com",
        month_before_last(),
    )
    .await;
    ts.publish_load(40, 3).await;
    let mut s = settings(&db, &ts);
    s.witness.signing_key_file = Some(private.clone());
    s.witness.signer_state = Some(dir.join("signer.state"));
    s.witness.checkpoint_stream = cps.clone();
    s.witness.checkpoint_interval = event_audit::config::Dur::secs(3600);
    s.witness.witness_policy = Some(policy.clone());
    s.witness.tiles_dir = Some(dir.join("tiles"));
    run_until_idle(s).await;
    copy_dir(&dir.join("tiles"), &dir.join("mirror"));
    let out = dir.join("archive");
    let a = event_audit(
        &[
            "archive",
            "--database-url",
            &db.url,
            "--before",
            &this_month(),
            "--out",
            out.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_eq!(a.code, Some(0), "{a:?}");

    let nats = nats_url();
    let tmp_path = dir.to_str().expect("utf-8");
    let names = [
        (tmp_path, "TMP"),
        (db.name.as_str(), "DB"),
        (cps.as_str(), "CPS"),
        (ts.name.as_str(), "STREAM"),
    ];
    let p = |f: &str| dir.join(f).display().to_string();
    let (public_s, policy_s, mirror_s, archive_s, state_s) = (
        p(public.file_name().and_then(|n| n.to_str()).expect("name")),
        policy.display().to_string(),
        p("mirror"),
        p("archive"),
        p("auditor.json"),
    );
    let base = ["verify", "--database-url", &db.url, "--nats-url", &nats];
    let witnessed = [
        "--public-key",
        &public_s,
        "--checkpoint-stream",
        &cps,
        "--witness-policy",
        &policy_s,
    ];
    let home = std::env::temp_dir().join("event-audit-test-home");
    let home = home.to_str().expect("utf-8");
    let verify = |extra: Vec<&str>| -> Vec<String> {
        let mut args: Vec<String> = base.iter().map(|a| a.to_string()).collect();
        args.extend(extra.into_iter().map(str::to_owned));
        args
    };
    let mut seen = Vec::new();
    let mut check = |case: &str, run: &Run| seen.push((case.to_owned(), outcome(run, &names)));

    check("clean", &run(&verify(vec![]), home).await);
    let mut m = vec!["--skip-completeness", "--mirror", &mirror_s];
    check("mirror", &run(&verify(m.clone()), home).await);
    m.extend(["--archive", &archive_s]);
    check("mirror and archive", &run(&verify(m), home).await);
    check(
        "archive",
        &run(
            &verify(vec!["--skip-completeness", "--archive", &archive_s]),
            home,
        )
        .await,
    );
    let mut w = witnessed.to_vec();
    w.extend(["--state-file", &state_s]);
    check("witness with state", &run(&verify(w.clone()), home).await);
    check("witness again", &run(&verify(w.clone()), home).await);
    let mut nostate = witnessed.to_vec();
    nostate.push("--no-state");
    check(
        "witness, no state",
        &run(&verify(nostate.clone()), home).await,
    );
    let mut all = nostate.clone();
    all.extend(["--mirror", &mirror_s, "--archive", &archive_s]);
    check("witness, mirror, archive", &run(&verify(all), home).await);
    let bad = p("no-such-mirror");
    check(
        "unreadable mirror",
        &run(&verify(vec!["--skip-completeness", "--mirror", &bad]), home).await,
    );

    // A row edited in place (its stored hash left alone).
    let edit = "UPDATE audit.events SET status = 'invalid' WHERE stream_seq = $1";
    assert_eq!(as_superuser_at(&db.pool, edit, 17).await, 1);
    check("edited", &run(&verify(vec![]), home).await);
    check(
        "edited, witness, state",
        &run(&verify(w.clone()), home).await,
    );
    check(
        "edited, witness, state again",
        &run(&verify(w.clone()), home).await,
    );
    check(
        "edited, witness, no state",
        &run(&verify(nostate.clone()), home).await,
    );
    let mut mm = vec!["--skip-completeness", "--mirror", &mirror_s];
    check("edited, mirror", &run(&verify(mm.clone()), home).await);

    // A row gone from the log that the bus still holds: a missing gap.
    let gone = format!(
        "DELETE FROM audit.events WHERE stream = '{}' AND stream_seq = 25",
        ts.name
    );
    assert_eq!(as_superuser(&db.pool, &gone).await, 1);
    check("missing", &run(&verify(vec![]), home).await);
    mm.extend(["--archive", &archive_s]);
    check("missing, mirror, archive", &run(&verify(mm), home).await);

    let got: Vec<String> = seen
        .iter()
        .map(|(case, o)| format!("== {case}\n{o}"))
        .collect();
    let got = got.join("\n");
    if std::env::var_os("EVENT_AUDIT_PRINT_GOLDEN").is_some() {
        println!("{got}");
    }
    let want = golden::VERIFY_OUTPUT.trim();
    for (g, w) in got.lines().zip(want.lines()) {
        assert_eq!(g, w, "the first line that differs; all of it:\n{got}");
    }
    assert_eq!(got.trim(), want, "{got}");
}
