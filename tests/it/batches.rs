//! Batches end to end against real NATS JetStream, Postgres and the platform simulator: two
//! batches of one supplier plus background noise (the supplier's other accounts, a catalogue
//! load with data_import events for unknown accounts) — each batch's report holds exactly its
//! accounts with every count (orders and registrations included) equal to the ground truth; a
//! batch name is unique per supplier; after the platform fixes some accounts, `reconcile diff`
//! lists exactly those transitions (CLI, HTTP, and the report's "changed since the previous
//! run"). The CLI runs as a subprocess (its output and exit codes are the point).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::cli::{event_audit, reconcile, register_batch};
use crate::support::sim::{counts, verdicts, Sim, TOKEN};
use crate::support::{run_until_idle, settings, spawn_app, TestDb, TestStream};
use event_audit::config::SimRates;
use event_audit::test_support::reconcile::Manifest;

/// The ground truth of `accounts`: verdict counts and registration counts, every name present.
fn truth(sim: &Sim, accounts: &BTreeSet<String>) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let mut v: BTreeMap<String, u64> = counts(&sim.expected)
        .keys()
        .map(|k| (k.clone(), 0))
        .collect();
    let mut r: BTreeMap<String, u64> = sim.expected["registration_counts"]
        .as_object()
        .expect("registration counts")
        .keys()
        .map(|k| (k.clone(), 0))
        .collect();
    for a in sim.expected["results"].as_array().expect("results") {
        if !accounts.contains(a["external_account_number"].as_str().expect("ext")) {
            continue;
        }
        *v.get_mut(a["verdict"].as_str().expect("verdict"))
            .expect("known") += 1;
        if let Some(reg) = a["registration"].as_str() {
            *r.get_mut(reg).expect("known") += 1;
        }
    }
    (v, r)
}

/// The ground truth of `orders` by outcome, with `no_event` 0.
fn order_truth(sim: &Sim, orders: &[String]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::from([("no_event".to_owned(), 0)]);
    for o in sim.expected["orders"].as_array().expect("orders") {
        if orders.iter().any(|x| o["external_order_id"] == x.as_str()) {
            *out.entry(o["outcome"].as_str().expect("outcome").to_owned())
                .or_default() += 1;
        }
    }
    out
}

fn map(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v.clone()).expect("a map of counts")
}

#[tokio::test]
async fn two_batches_plus_background_noise_each_report_holds_exactly_its_batch() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("batches_two").await;
    // One platform, one supplier: 100 accounts of which two batches of 40 are migrated; the
    // other 20 are the supplier's unrelated traffic.
    let sim = Sim::start_with(&ts, "ACME", 100, 21, |s| {
        s.simulator.rates = SimRates {
            drop_completion: 0.05,
            wrong_identifier: 0.05,
            failed: 0.05,
            cancelled: 0.05,
            left_pending: 0.05,
            registration_stalled: 0.05,
            registration_never_requested: 0.05,
            ..SimRates::default()
        };
        s.simulator.orders = 30;
    })
    .await;
    // Background load: catalogue events, data_import ones for accounts nobody migrates.
    ts.publish_load(1500, 77).await;
    run_until_idle(settings(&test_db, &ts)).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let m = &sim.manifest;
    let halves = [
        Manifest {
            name: "week-1".into(),
            accounts: m.accounts[..40].to_vec(),
            orders: m.orders[..12].to_vec(),
        },
        Manifest {
            name: "week-2".into(),
            accounts: m.accounts[40..80].to_vec(),
            orders: m.orders[12..24].to_vec(),
        },
    ];
    for batch in &halves {
        let file = dir.path().join(format!("{}.txt", batch.name));
        std::fs::write(&file, batch.render()).expect("manifest");
        let reg = register_batch(db, "ACME", &batch.name, &file).await;
        assert_eq!(reg.code, Some(0), "{reg:?}");
        assert!(reg.stderr.contains("40 accounts, 12 orders"), "{reg:?}");
        // The same list again: nothing to do.
        let again = register_batch(db, "ACME", &batch.name, &file).await;
        assert_eq!(again.code, Some(0), "{again:?}");
        assert!(
            again.stderr.contains("already registered with this list"),
            "{again:?}"
        );
    }
    // The same name with another list is refused, naming both lists.
    let other = dir.path().join("other.txt");
    std::fs::write(&other, "X-1\nX-2\n").expect("manifest");
    let clash = register_batch(db, "ACME", "week-1", &other).await;
    assert_eq!(clash.code, Some(2), "{clash:?}");
    assert!(
        clash
            .stderr
            .contains("already registered with another list (40 accounts, 12 orders")
            && clash.stderr.contains("this manifest has 2 accounts"),
        "{}",
        clash.stderr
    );
    // Names are unique per supplier, not across suppliers.
    let elsewhere = register_batch(db, "OTHER", "week-1", &other).await;
    assert_eq!(elsewhere.code, Some(0), "{elsewhere:?}");

    for batch in &halves {
        // The batch is an hour old: registrations requested then and not completed stall.
        let args = [
            "--supplier",
            "ACME",
            "--batch",
            &batch.name,
            "--registration-grace",
            "30m",
            "--format",
            "json",
        ];
        let run = reconcile(db, &sim.url, TOKEN, &args).await;
        let report = run.json();
        let want: BTreeSet<String> = batch.accounts.iter().cloned().collect();
        let got: BTreeSet<String> = verdicts(&report).into_keys().collect();
        assert_eq!(got, want, "{}: exactly the batch's accounts", batch.name);
        let (v, r) = truth(&sim, &want);
        let mismatches = v.iter().any(|(k, &n)| k != "matched" && n > 0);
        assert_eq!(run.code, Some(if mismatches { 1 } else { 0 }), "{run:?}");
        assert_eq!(counts(&report), v, "{}", batch.name);
        assert_eq!(map(&report["registration_counts"]), r, "{}", batch.name);
        assert_eq!(
            map(&report["order_processes"]),
            order_truth(&sim, &batch.orders),
            "{}: the batch's orders only",
            batch.name
        );
        for (ext, verdict) in verdicts(&report) {
            assert_eq!(verdicts(&sim.expected)[&ext], verdict, "{ext}");
        }
        assert_eq!(report["batch"]["name"], batch.name.as_str());
        assert_eq!(report["accounts"], 40);
        // A manifest run over the same file counts the same (orders included).
        let file = dir.path().join(format!("{}.txt", batch.name));
        let args = [
            "--supplier",
            "ACME",
            "--accounts",
            file.to_str().expect("path"),
            "--meter-points",
            "--registration-grace",
            "30m",
            "--format",
            "json",
        ];
        let again = reconcile(db, &sim.url, TOKEN, &args).await.json();
        assert_eq!(counts(&again), v);
        assert_eq!(
            map(&again["order_processes"]),
            order_truth(&sim, &batch.orders)
        );
        assert_eq!(map(&again["registration_counts"]), r);
    }

    // Supplier-wide, the noise is in: the other 20 accounts and the load's unknown accounts.
    let wide = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "ACME", "--format", "json"],
    )
    .await;
    let wide = wide.json();
    assert!(
        wide["accounts"].as_u64().expect("accounts") > 100,
        "{}",
        wide["accounts"]
    );
    let orders: u64 = map(&wide["order_processes"]).values().sum();
    assert!(
        orders > 30,
        "the load's order events count supplier-wide: {orders}"
    );

    let list = event_audit(&["batch", "list", "--database-url", db, "--json"], &[]).await;
    let list: Value = serde_json::from_str(&list.stdout).expect("json");
    let names: Vec<&str> = list["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .map(|b| b["batch"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, vec!["week-1", "week-2", "week-1"], "newest first");
}

#[tokio::test]
async fn after_the_platform_fixes_some_accounts_diff_lists_exactly_those_transitions() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("batches_diff").await;
    let sim = Sim::start_with(&ts, "FIX", 40, 31, |s| {
        s.simulator.rates = SimRates {
            left_pending: 0.1,
            left_in_progress: 0.1,
            drop_completion: 0.1,
            ..SimRates::default()
        };
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sim.manifest_file(dir.path(), "fix.txt");
    assert_eq!(register_batch(db, "FIX", "b1", &file).await.code, Some(0));

    let args = ["--supplier", "FIX", "--batch", "b1", "--format", "json"];
    let first = reconcile(db, &sim.url, TOKEN, &args).await.json();
    let c = counts(&first);
    assert_eq!(
        (c["pending"], c["in_progress"], c["missing_event"]),
        (4, 4, 4)
    );
    // The platform processes two pending and two in-progress accounts; nothing else changes.
    let of = |v: &str| -> Vec<String> {
        verdicts(&first)
            .into_iter()
            .filter(|(_, x)| x == v)
            .map(|(ext, _)| ext)
            .take(2)
            .collect()
    };
    let fixed: Vec<String> = [of("pending"), of("in_progress")].concat();
    sim.fix(&ts, &fixed).await;
    run_until_idle(settings(&test_db, &ts)).await;
    let second = reconcile(db, &sim.url, TOKEN, &args).await.json();
    let (a, b) = (
        first["run_id"].as_i64().expect("id"),
        second["run_id"].as_i64().expect("id"),
    );

    let diff = event_audit(
        &[
            "reconcile",
            "diff",
            "--database-url",
            db,
            "--batch",
            "b1",
            "--format",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(diff.code, Some(0), "{diff:?}");
    let d: Value = serde_json::from_str(&diff.stdout).expect("json");
    assert_eq!(
        (d["from_run"].as_i64(), d["to_run"].as_i64()),
        (Some(a), Some(b))
    );
    assert_eq!(
        map(&d["transitions"]),
        BTreeMap::from([
            ("in_progress → matched".to_owned(), 2),
            ("pending → matched".to_owned(), 2)
        ])
    );
    assert_eq!(
        map(&d["registration_transitions"]),
        BTreeMap::from([("(none) → registered".to_owned(), 4)])
    );
    let changed: BTreeSet<String> = d["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            c["external_account_number"]
                .as_str()
                .expect("ext")
                .to_owned()
        })
        .collect();
    assert_eq!(changed, fixed.iter().cloned().collect());
    assert_eq!(d["unchanged"], 36);

    // The same by run ids, as a table.
    let (sa, sb) = (a.to_string(), b.to_string());
    let table = event_audit(
        &[
            "reconcile",
            "diff",
            "--database-url",
            db,
            &sb,
            &sa,
            "--format",
            "table",
        ],
        &[],
    )
    .await;
    assert_eq!(table.code, Some(0), "{table:?}");
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("pending → matched ") && l.ends_with(" 2")),
        "{}",
        table.stdout
    );
    for ext in &fixed {
        assert!(
            table.stdout.contains(ext.as_str()),
            "{ext}: {}",
            table.stdout
        );
    }
    // Runs of different scopes do not compare.
    let wide = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "FIX", "--format", "json"],
    )
    .await;
    let w = wide.json()["run_id"].as_i64().expect("id").to_string();
    let refused = event_audit(&["reconcile", "diff", "--database-url", db, &sb, &w], &[]).await;
    assert_eq!(refused.code, Some(2), "{refused:?}");
    assert!(
        refused.stderr.contains("different scopes"),
        "{}",
        refused.stderr
    );

    // The daemon serves the same diff, and every HTML report says what changed at the top.
    let daemon = spawn_app(settings(&test_db, &ts)).await;
    let (code, body) = daemon
        .get(&format!("/reports/reconciliation/diff?from={a}&to={b}"))
        .await;
    assert_eq!(code, 200, "{body}");
    let served: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(served["transitions"], d["transitions"]);
    assert_eq!(served["changes"], d["changes"]);
    let (code, html) = daemon
        .get(&format!("/reports/reconciliation?run={b}&format=html"))
        .await;
    assert_eq!(code, 200);
    let top = html.find("id=\"changes\"").expect("a changes section");
    assert!(top < html.find("id=\"verdicts\"").expect("the accounts"));
    assert!(
        html.contains(&format!("4 account(s) since run {a}"))
            && html.contains("in_progress → matched 2")
            && html.contains("pending → matched 2"),
        "{html}"
    );
    let (code, html) = daemon
        .get(&format!(
            "/reports/reconciliation/diff?from={a}&to={b}&format=html"
        ))
        .await;
    assert_eq!(code, 200);
    assert_eq!(html.matches("/events?format=html").count(), 4, "{html}");
    let (code, _) = daemon
        .get(&format!("/reports/reconciliation/diff?from={b}&to={w}"))
        .await;
    assert_eq!(code, 400);
    daemon.stop().await;
}

/// A run from the command line with another registration grace than the runs before it (the
/// daemon's 30 minutes in the demo, the default 7 days here) is stored with its settings, and
/// every comparison of it with a run of other settings says so: `reconcile diff` (table and
/// JSON), the diff page and the report's "changed since the previous run".
#[tokio::test]
async fn a_run_with_other_settings_is_recorded_and_its_comparisons_say_so() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("batches_settings").await;
    let sim = Sim::start_with(&ts, "SET", 30, 37, |s| {
        s.simulator.rates = SimRates {
            registration_stalled: 0.2,
            ..SimRates::default()
        };
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sim.manifest_file(dir.path(), "set.txt");
    assert_eq!(register_batch(db, "SET", "b1", &file).await.code, Some(0));

    let args = ["--supplier", "SET", "--batch", "b1", "--format", "json"];
    let short = [&args[..], &["--registration-grace", "30m"]].concat();
    let first = reconcile(db, &sim.url, TOKEN, &short).await.json();
    let second = reconcile(db, &sim.url, TOKEN, &args).await.json();
    let (a, b) = (
        first["run_id"].as_i64().expect("id"),
        second["run_id"].as_i64().expect("id"),
    );
    assert!(map(&first["registration_counts"])["stalled"] > 0, "{first}");
    let stored: Vec<Value> =
        sqlx::query_scalar("SELECT settings FROM audit.reconcile_runs ORDER BY id")
            .fetch_all(&test_db.pool)
            .await
            .expect("settings");
    assert_eq!(stored[0]["registration_grace_secs"], 1800, "{stored:?}");
    assert_eq!(
        stored[1]["registration_grace_secs"],
        7 * 86_400,
        "{stored:?}"
    );
    assert_eq!(stored[1]["meter_points"], true, "{stored:?}");
    assert_eq!(second["settings"], stored[1], "the report carries them");

    let diff = |format: &'static str| async move {
        let args = [
            "reconcile",
            "diff",
            "--database-url",
            db,
            "--batch",
            "b1",
            "--format",
            format,
        ];
        event_audit(&args, &[]).await
    };
    let d: Value = serde_json::from_str(&diff("json").await.stdout).expect("json");
    assert_eq!(
        d["settings_differ"][0], "registration grace 30m → 7d",
        "{d}"
    );
    assert!(
        map(&d["registration_transitions"]).contains_key("stalled → in_flight"),
        "{d}"
    );
    let table = diff("table").await.stdout;
    let warning = format!("runs {a} and {b} used different settings (registration grace 30m → 7d)");
    assert!(table.contains(&format!("WARNING: {warning}")), "{table}");
    assert!(
        table.contains(&format!(
            "run {a} (cli): grace 15m · registration grace 30m"
        )),
        "{table}"
    );

    let daemon = spawn_app(settings(&test_db, &ts)).await;
    for page in [
        format!("/reports/reconciliation/diff?from={a}&to={b}&format=html"),
        format!("/reports/reconciliation?run={b}&format=html"),
    ] {
        let (code, html) = daemon.get(&page).await;
        assert_eq!(code, 200, "{page}");
        assert!(html.contains("id=\"settings-differ\""), "{page}: {html}");
        assert!(
            html.contains("registration grace 30m → 7d"),
            "{page}: {html}"
        );
    }
    daemon.stop().await;
}
