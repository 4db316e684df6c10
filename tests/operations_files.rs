//! The operations files, checked as files: every alert rule has a `runbook_url` naming a README
//! section and promtool tests that fire it and keep it quiet; the dashboards declare the
//! Grafana version their schema needs, a data-source variable that file provisioning resolves,
//! template variables (instance, supplier, batch) that every panel's query may use, one unit
//! per panel, value mappings for states and "never" for ages of things that never happened; the
//! Prometheus configuration example passes `promtool check config`. (Live checks, a real
//! Prometheus evaluating every panel and rule: `tests/observability.rs`.)

mod common;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use common::observe::{repo, tool};

fn file(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The anchors GitHub gives the README's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

#[test]
fn every_alert_has_a_runbook_and_tests_that_fire_it_and_keep_it_quiet() {
    let rules = file("dashboards/alerts.yml");
    let mut runbooks: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut current = None;
    for line in rules.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("- alert:") {
            current = Some(name.trim().to_owned());
            runbooks.insert(name.trim().to_owned(), None);
        } else if let (Some(url), Some(name)) = (line.strip_prefix("runbook_url:"), &current) {
            runbooks.insert(name.clone(), Some(url.trim().trim_matches('"').to_owned()));
        }
    }
    assert!(runbooks.len() >= 15, "{runbooks:?}");
    let readme = anchors(&file("README.md"));
    for (name, url) in &runbooks {
        let url = url
            .as_deref()
            .unwrap_or_else(|| panic!("{name} has no runbook_url"));
        let anchor = url
            .strip_prefix("README.md#")
            .unwrap_or_else(|| panic!("{name}: {url} is not a README section"));
        assert!(
            readme.contains(anchor),
            "{name}: README has no section #{anchor}"
        );
    }
    // Each rule is evaluated at least once expecting alerts and once expecting none.
    let tests = file("dashboards/alerts.test.yml");
    let lines: Vec<&str> = tests.lines().map(str::trim).collect();
    let (mut firing, mut quiet) = (BTreeSet::new(), BTreeSet::new());
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line.strip_prefix("alertname:") {
            let next = lines.get(i + 1).copied().unwrap_or_default();
            if next == "exp_alerts: []" {
                quiet.insert(name.trim().to_owned());
            } else if next == "exp_alerts:" {
                firing.insert(name.trim().to_owned());
            }
        }
    }
    for name in runbooks.keys() {
        assert!(
            firing.contains(name),
            "{name}: no promtool test where it fires"
        );
        assert!(
            quiet.contains(name),
            "{name}: no promtool test where it stays quiet"
        );
    }
    let out = tool("promtool")
        .args(["test", "rules", "alerts.test.yml"])
        .current_dir(repo().join("dashboards"))
        .output()
        .expect("promtool");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn dashboard(name: &str) -> Value {
    serde_json::from_str(&file(&format!("dashboards/{name}"))).expect("dashboard JSON")
}

#[test]
fn dashboards_declare_their_grafana_their_variables_and_one_unit_per_panel() {
    for (name, vars) in [
        (
            "migration-health.json",
            &["instance", "supplier", "batch"][..],
        ),
        ("audit-log.json", &["instance"][..]),
    ] {
        let d = dashboard(name);
        // schemaVersion 39 is Grafana 10.3's.
        assert_eq!(d["schemaVersion"], 39, "{name}");
        let grafana = d["__requires"]
            .as_array()
            .expect("__requires")
            .iter()
            .find(|r| r["id"] == "grafana")
            .expect("a grafana requirement");
        assert_eq!(grafana["version"], "10.3.0", "{name}");
        let defined: BTreeMap<&str, &Value> = d["templating"]["list"]
            .as_array()
            .expect("templating")
            .iter()
            .map(|v| (v["name"].as_str().expect("name"), v))
            .collect();
        let ds = defined
            .get("DS_PROMETHEUS")
            .expect("a DS_PROMETHEUS variable");
        assert_eq!(
            (ds["type"].as_str(), ds["query"].as_str()),
            (Some("datasource"), Some("prometheus"))
        );
        for v in vars {
            let var = defined.get(v).unwrap_or_else(|| panic!("{name}: no ${v}"));
            assert_eq!(var["includeAll"], true, "{name} ${v}");
        }
        let mut ids = BTreeSet::new();
        for p in d["panels"].as_array().expect("panels") {
            let title = p["title"].as_str().unwrap_or_default();
            assert!(
                ids.insert(p["id"].as_i64().expect("id")),
                "{name}: id of {title} repeated"
            );
            let unit = p["fieldConfig"]["defaults"]["unit"].as_str();
            assert!(unit.is_some(), "{name}: {title} has no unit");
            let overrides = p["fieldConfig"]["overrides"].to_string();
            assert!(
                !overrides.contains("\"unit\""),
                "{name}: {title} mixes units"
            );
            let exprs: Vec<&str> = p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .map(|t| t["expr"].as_str().expect("expr"))
                .collect();
            for e in &exprs {
                for (i, _) in e.match_indices('$') {
                    let used: String = e[i + 1..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        defined.contains_key(used.as_str()),
                        "{name}: {title} uses ${used}"
                    );
                }
            }
            let all = exprs.join(" ");
            let mappings = p["fieldConfig"]["defaults"]["mappings"].to_string();
            if [
                "event_audit_verify_ok",
                "event_audit_verify_witness_ok",
                "event_audit_connection_up",
                "event_audit_reconcile_last_outcome",
            ]
            .iter()
            .any(|m| all.contains(m))
            {
                assert!(
                    mappings.contains("\"text\""),
                    "{name}: {title} shows a state without value mappings"
                );
            }
            if all.contains("time() -") && all.contains("_timestamp_seconds") {
                assert!(
                    mappings.contains("\"never\""),
                    "{name}: {title} would show 56 years when it never happened"
                );
            }
        }
    }
}

#[test]
fn the_prometheus_example_and_the_grafana_provisioning_files_fit_together() {
    let out = tool("promtool")
        .args(["check", "config", "prometheus.yml"])
        .current_dir(repo().join("dashboards"))
        .output()
        .expect("promtool");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(file("dashboards/prometheus.yml").contains("job_name: event-audit"));
    assert!(file("dashboards/alerts.yml").contains("up{job=\"event-audit\"}"));
    let ds = file("dashboards/provisioning/datasources/event-audit.yml");
    assert!(
        ds.contains("type: prometheus") && ds.contains("isDefault: true"),
        "{ds}"
    );
    let dash = file("dashboards/provisioning/dashboards/event-audit.yml");
    assert!(
        dash.contains("type: file") && dash.contains("path: "),
        "{dash}"
    );
    assert!(
        dash.contains("DS_PROMETHEUS"),
        "says how ${{DS_PROMETHEUS}} resolves"
    );
}
