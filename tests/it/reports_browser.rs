//! Reports that explain themselves, against real NATS JetStream, Postgres, the platform
//! simulator and headless Chromium: the protected HTML report opens in a browser through a
//! signed link the CLI prints (which also opens a session for the page's own links), at 1400
//! and at 1000 px it does not scroll sideways, keeps its detail column on screen and breaks no
//! identifier, state or timestamp over lines, and it has its legend and timeline links; `-o FILE`
//! takes its format from the extension (and refuses others), writing mode 0600, an HTML file's
//! links absolute under `--public-url` or left out without it; a failed run
//! prints only its error, naming the host, and exits 2.

use std::os::unix::fs::PermissionsExt;

use crate::support::cli::{event_audit, reconcile, register_batch};
use crate::support::observe::{chromium_render_at, png_size, repo};
use crate::support::sim::{Sim, TOKEN};
use crate::support::{run_until_idle, settings, spawn_app, TestDb, TestStream};
use event_audit::config::SimRates;

#[tokio::test]
async fn output_files_take_their_format_from_the_extension_and_failures_print_only_the_error() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("out_files").await;
    let sim = Sim::start(&ts, "OUT", 20, 71, SimRates::default()).await;
    run_until_idle(settings(&test_db, &ts)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, starts) in [
        ("r.html", "<!DOCTYPE html>"),
        ("r.csv", "external_account_number,"),
        ("r.json", "{"),
    ] {
        let path = dir.path().join(name);
        let out = path.to_str().expect("path");
        let run = reconcile(db, &sim.url, TOKEN, &["--supplier", "OUT", "-o", out]).await;
        assert_eq!(run.code, Some(0), "{run:?}");
        let body = std::fs::read_to_string(&path).expect("written");
        assert!(
            body.starts_with(starts),
            "{name}: {}",
            &body[..40.min(body.len())]
        );
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
        // Opened from disk, a root-relative link is dead: none is written.
        assert!(!body.contains("href=\"/"), "{name}: {body}");
    }
    let html = dir.path().join("linked.html");
    let base = ["--public-url", "https://audit.example:9187/"];
    let out = html.to_str().expect("path");
    let linked = reconcile(
        db,
        &sim.url,
        TOKEN,
        &[&["--supplier", "OUT", "-o", out], &base[..]].concat(),
    )
    .await;
    assert_eq!(linked.code, Some(0), "{linked:?}");
    let body = std::fs::read_to_string(&html).expect("written");
    assert!(!body.contains("href=\"/"), "{body}");
    assert!(
        body.contains("<a href=\"https://audit.example:9187/accounts/")
            && body.contains(
                "<a href=\"https://audit.example:9187/reports/reconciliation/runs\">history</a>"
            ),
        "{body}"
    );
    let unlinked = std::fs::read_to_string(dir.path().join("r.html")).expect("written");
    assert!(
        unlinked.contains("Saved without the daemon's address"),
        "{unlinked}"
    );
    let runs = |pool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM audit.reconcile_runs")
            .fetch_one(pool)
            .await
            .expect("count")
    };
    let before = runs(pool).await;
    let txt = dir.path().join("report.txt");
    let refused = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "OUT", "-o", txt.to_str().expect("path")],
    )
    .await;
    assert_eq!(refused.code, Some(2), "{refused:?}");
    assert!(
        refused.stderr.contains("report.txt") && refused.stderr.contains("--format"),
        "{}",
        refused.stderr
    );
    assert!(!txt.exists(), "nothing written");
    assert_eq!(runs(pool).await, before, "refused before running");
    let table = reconcile(
        db,
        &sim.url,
        TOKEN,
        &[
            "--supplier",
            "OUT",
            "--format",
            "table",
            "-o",
            txt.to_str().expect("path"),
        ],
    )
    .await;
    assert_eq!(table.code, Some(0), "{table:?}");
    assert!(std::fs::read_to_string(&txt)
        .expect("written")
        .starts_with("Reconciliation run"));

    // Nothing listens there, and the URL carries credentials: only the error, naming the host.
    let nowhere = "http://operator:hunter2@127.0.0.1:9/";
    let failed = reconcile(
        db,
        nowhere,
        TOKEN,
        &["--supplier", "OUT", "--rest-retries", "0"],
    )
    .await;
    assert_eq!(failed.code, Some(2), "{failed:?}");
    assert!(failed.stdout.is_empty(), "{failed:?}");
    let lines: Vec<&str> = failed
        .stderr
        .lines()
        .filter(|l| !l.contains(" DEBUG ") && !l.trim().is_empty())
        .collect();
    let errors: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("event-audit:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", failed.stderr);
    assert!(
        errors[0].contains("at 127.0.0.1:9: no answer after 1 attempt(s), last: connection failed: connection refused"),
        "{}",
        errors[0]
    );
    assert!(
        !failed.stderr.contains("hunter2") && !failed.stderr.contains("reconciled 0 accounts"),
        "{}",
        failed.stderr
    );
}

#[tokio::test]
async fn the_protected_report_opens_in_headless_chromium_through_a_signed_link() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("browser").await;
    let sim = Sim::start_with(&ts, "WWW", 60, 81, |s| {
        s.simulator.rates = SimRates {
            wrong_identifier: 0.1,
            drop_completion: 0.1,
            registration_stalled: 0.1,
            ..SimRates::default()
        };
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sim.manifest_file(dir.path(), "www.txt");
    assert_eq!(register_batch(db, "WWW", "w1", &file).await.code, Some(0));
    let args = [
        "--batch",
        "w1",
        "--registration-grace",
        "30m",
        "--format",
        "json",
    ];
    let report = reconcile(db, &sim.url, TOKEN, &args).await.json();
    let run = report["run_id"].as_i64().expect("run id");

    let bearer = "report-Br0wser-T0ken";
    let token_file = dir.path().join("report-token");
    std::fs::write(&token_file, bearer).expect("token");
    let mut s = settings(&test_db, &ts);
    s.http.report_token_file = Some(token_file.clone());
    let daemon = spawn_app(s).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    // A browser without a link gets a page saying how to get one.
    let r = http
        .get(format!(
            "{}/reports/reconciliation?run={run}&format=html",
            daemon.base
        ))
        .header("Accept", "text/html")
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 401);
    assert!(r
        .text()
        .await
        .expect("body")
        .contains("event-audit reconcile link"));

    // The CLI prints a signed link.
    let out = event_audit(
        &[
            "reconcile",
            "link",
            "--run",
            &run.to_string(),
            "--public-url",
            &daemon.base,
            "--report-token-file",
            token_file.to_str().expect("path"),
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let link = out.stdout.trim().to_owned();
    assert!(
        link.starts_with(&format!(
            "{}/reports/reconciliation?run={run}&format=html&expires=",
            daemon.base
        )),
        "{link}"
    );
    assert!(!link.contains(bearer));
    assert!(out.stderr.contains("valid for"), "{out:?}");
    // Without a report token the link is not signed, and no validity is claimed for it.
    let open = event_audit(
        &[
            "reconcile",
            "link",
            "--run",
            &run.to_string(),
            "--public-url",
            &daemon.base,
        ],
        &[],
    )
    .await;
    assert_eq!(open.code, Some(0), "{open:?}");
    assert!(
        open.stderr.contains("not signed") && !open.stderr.contains("valid for"),
        "{open:?}"
    );
    // A run made with --public-url prints its own link.
    let again = reconcile(
        db,
        &sim.url,
        TOKEN,
        &[
            "--batch",
            "w1",
            "--format",
            "json",
            "--public-url",
            &daemon.base,
            "--report-token-file",
            token_file.to_str().expect("path"),
        ],
    )
    .await;
    let next = again.json()["run_id"].as_i64().expect("run id");
    let printed = format!(
        "report in a browser: {}/reports/reconciliation?run={next}&format=html&expires=",
        daemon.base
    );
    assert!(
        again.stderr.contains(&printed) && again.stderr.contains("&sig="),
        "{}",
        again.stderr
    );
    let tampered = link.replace(&format!("run={run}"), &format!("run={}", run + 1));
    assert_eq!(
        http.get(&tampered).send().await.expect("request").status(),
        401
    );

    // The link opens the page and a session for its own links (HttpOnly, SameSite=Strict).
    let r = http.get(&link).send().await.expect("request");
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let html = r.text().await.expect("html");
    let ext = report["results"][0]["external_account_number"]
        .as_str()
        .expect("ext");
    let timeline = format!("{}/accounts/{ext}/events?format=html", daemon.base);
    assert!(
        html.contains(&format!("href=\"/accounts/{ext}/events?format=html\"")),
        "no timeline link"
    );
    let with = http
        .get(&timeline)
        .header("Cookie", cookie.split(';').next().expect("name=value"))
        .send()
        .await
        .expect("request");
    assert_eq!(with.status(), 200);
    let page = with.text().await.expect("html");
    assert!(
        // Event names may break only after their dots.
        page.contains("id=\"timeline\"")
            && page.contains("data_import.<wbr>import_process.<wbr>")
            && !page.contains("data_import.import_process"),
        "{page}"
    );
    assert_eq!(
        http.get(&timeline).send().await.expect("request").status(),
        401
    );

    // Headless Chromium opens the protected report through the link, 1400 px wide.
    let artifacts = repo().join("target").join("test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let png = artifacts.join("reconciliation-report-1400.png");
    let _ = std::fs::remove_file(&png);
    let dom = chromium_render_at(&link, &png, 1400, 1000).await;
    assert_eq!(png_size(&png).0, 1400, "the screenshot's width");
    for needle in [
        "id=\"verdicts\"",
        "id=\"legend\"",
        "What the verdicts mean",
        "identifier_mismatch",
        "stalled",
        "Changed since the previous run",
        "Accounts: batch w1 of supplier WWW: 60 accounts, 0 orders",
    ] {
        assert!(dom.contains(needle), "{needle} not in the rendered page");
    }

    // The layout at 1400 and at 1000 px: the same page, measured by a script (the served page
    // allows none), in the same browser (screenshots in target/test-artifacts).
    for (width, detail_at_least) in [(1400, 400), (1000, 150)] {
        let l = layout(&html, dir.path(), width).await;
        assert_eq!(
            l.page_width, l.window,
            "{width} px: the page scrolls sideways ({l:?})"
        );
        assert!(
            l.detail_left > 0 && l.detail_right <= l.window && l.cells_right <= l.window,
            "{width} px: the detail column is off screen ({l:?})"
        );
        assert!(
            l.detail_right - l.detail_left >= detail_at_least,
            "{width} px: the detail column is too narrow ({l:?})"
        );
        assert_eq!(
            (l.broken, l.overflowing),
            (0, 0),
            "{width} px: identifiers, states or timestamps broken over lines, or cells overflowing ({l:?})"
        );
        assert!(l.tokens > 300, "{width} px: {l:?}");
    }
    daemon.stop().await;
}

/// Where things lie on the report page in a window `width` px wide (see [`layout`]).
#[derive(Debug)]
struct Layout {
    window: i64,
    /// The page's own width (wider than the window: it scrolls sideways).
    page_width: i64,
    detail_left: i64,
    detail_right: i64,
    /// The right edge of the widest detail cell.
    cells_right: i64,
    /// Identifiers, states and timestamps of the accounts table, and how many of them are
    /// broken over lines.
    tokens: i64,
    broken: i64,
    /// Cells of the accounts table whose content is wider than the cell.
    overflowing: i64,
}

/// `html` opened in headless Chromium `width` px wide, measured by a script added to it (the
/// served page allows none); the screenshot goes to `target/test-artifacts`.
async fn layout(html: &str, dir: &std::path::Path, width: u32) -> Layout {
    let probe = html.replace(
        "</body>",
        "<script>const r=document.getElementById('detail-column').getBoundingClientRect();\
         let worst=0;for(const c of document.querySelectorAll('td.detail')){worst=Math.max(worst,c.getBoundingClientRect().right)}\
         let tokens=0,broken=0;for(const e of document.querySelectorAll('#verdicts .id, #verdicts .tag, #verdicts time')){tokens++;if(e.getClientRects().length!==1)broken++}\
         let over=0;for(const c of document.querySelectorAll('#verdicts td, #verdicts th')){if(c.scrollWidth>c.clientWidth+1)over++}\
         document.body.setAttribute('data-probe',[window.innerWidth,document.documentElement.scrollWidth,Math.round(r.left),Math.round(r.right),Math.round(worst),tokens,broken,over].join(','))</script></body>",
    );
    let local = dir.join(format!("probe-{width}.html"));
    std::fs::write(&local, probe).expect("probe page");
    let png = repo()
        .join("target")
        .join("test-artifacts")
        .join(format!("reconciliation-accounts-{width}.png"));
    let measured =
        chromium_render_at(&format!("file://{}", local.display()), &png, width, 1000).await;
    let probe = measured
        .split("data-probe=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the probe ran");
    let n: Vec<i64> = probe
        .split(',')
        .map(|x| x.parse().expect("a number"))
        .collect();
    Layout {
        window: n[0],
        page_width: n[1],
        detail_left: n[2],
        detail_right: n[3],
        cells_right: n[4],
        tokens: n[5],
        broken: n[6],
        overflowing: n[7],
    }
}
