//! The operations tools the observability tests run for real: `promtool`, a Prometheus
//! server, headless Chromium (Debian packages; `.ci/run` installs them), and the dashboards'
//! queries.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::free_addr;

/// The repository root.
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tool that CI installs (`.ci/run`); a missing tool fails the test, it is not skipped.
pub(crate) fn tool(name: &str) -> std::process::Command {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{name}` is not installed: run .ci/run (it installs the Debian package)"
    );
    std::process::Command::new(name)
}

/// The body of `GET url` when it answers 2xx.
pub(crate) async fn get(url: &str) -> Option<String> {
    let r = reqwest::get(url).await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.text().await.ok()
}

/// Waits until `GET url` answers 2xx; returns the body.
pub(crate) async fn wait_http(url: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Some(body) = get(url).await {
            return body;
        }
        assert!(
            start.elapsed() < limit,
            "{url} did not answer within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `promtool check metrics` on an exposition text.
pub(crate) async fn promtool_check_metrics(text: &str) -> std::process::Output {
    let mut child = Command::from(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promtool");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(text.as_bytes())
        .await
        .expect("write metrics");
    drop(stdin);
    child.wait_with_output().await.expect("promtool output")
}

/// A panel query as Prometheus sees it with every template variable at "All" (`.*`).
pub(crate) fn expand_variables(expr: &str, dashboard: &serde_json::Value) -> String {
    let mut out = expr.to_owned();
    for v in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if v["type"] == "query" {
            let name = v["name"].as_str().unwrap_or_default();
            out = out
                .replace(&format!("${{{name}}}"), ".*")
                .replace(&format!("${name}"), ".*");
        }
    }
    out
}

/// Every `(panel title, expr)` of a Grafana dashboard file, template variables at "All".
pub(crate) fn panel_queries(path: &Path) -> Vec<(String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard file"))
            .expect("dashboard JSON");
    assert_eq!(
        v["__inputs"][0]["name"],
        "DS_PROMETHEUS",
        "{}",
        path.display()
    );
    assert!(v["schemaVersion"].as_i64().is_some(), "schemaVersion set");
    let mut out = Vec::new();
    for p in v["panels"].as_array().expect("panels") {
        assert_eq!(
            p["datasource"]["uid"], "${DS_PROMETHEUS}",
            "panel {}",
            p["title"]
        );
        for t in p["targets"].as_array().expect("targets") {
            out.push((
                p["title"].as_str().unwrap_or_default().to_owned(),
                expand_variables(t["expr"].as_str().expect("expr"), &v),
            ));
        }
    }
    out
}

/// The `event_audit_*` metric names a query refers to (histogram suffixes stripped).
pub(crate) fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("event_audit_") {
        let start = i + pos;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        names.push(expr[start..end].to_owned());
        i = end;
    }
    names
}

/// A real Prometheus (Debian package) scraping `target` every second, on a free port, with its
/// data in a temporary directory. Killed when dropped.
pub(crate) struct Prometheus {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    pub url: String,
}

impl Prometheus {
    pub(crate) async fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("prometheus dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: event-audit\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let addr = free_addr();
        let child = Command::from(tool("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn prometheus");
        let url = format!("http://{addr}");
        wait_http(&format!("{url}/-/ready"), Duration::from_secs(30)).await;
        Prometheus {
            _child: child,
            _dir: dir,
            url,
        }
    }

    /// The result vector of an instant query (`Err` when Prometheus rejects it).
    pub(crate) async fn query(&self, expr: &str) -> Result<Vec<serde_json::Value>, String> {
        let r = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
        if v["status"] != "success" {
            return Err(format!("{v}"));
        }
        Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
    }
}

/// Headless Chromium (Debian package) on `url`: a PNG screenshot at `png` and the rendered DOM.
/// Asynchronous, so that a daemon in this test's process keeps serving the page meanwhile.
pub(crate) async fn chromium_render(url: &str, png: &Path) -> String {
    chromium_render_at(url, png, 1280, 1600).await
}

/// [`chromium_render`] in a window of `width` × `height` pixels.
pub(crate) async fn chromium_render_at(url: &str, png: &Path, width: u32, height: u32) -> String {
    let profile = tempfile::tempdir().expect("chromium profile");
    let size = format!("--window-size={width},{height}");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        size.as_str(),
    ];
    let profile_arg = format!("--user-data-dir={}", profile.path().display());
    let shot = Command::from(tool("chromium"))
        .args(common)
        .arg(&profile_arg)
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("chromium --screenshot");
    assert!(
        shot.status.success(),
        "chromium screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let dom = Command::from(tool("chromium"))
        .args(common)
        .arg(&profile_arg)
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("chromium --dump-dom");
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// The width and height of a PNG, from its header.
pub(crate) fn png_size(png: &Path) -> (u32, u32) {
    let bytes = std::fs::read(png).expect("read the PNG");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    (be(16), be(20))
}
