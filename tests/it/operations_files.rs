//! The operations files, checked as files: every alert rule has a `runbook_url` naming its own
//! section of `docs/runbooks.md` and promtool tests that fire it and keep it quiet; every
//! relative link of the README and `docs/` leads to a file and heading that exist, and the
//! README (the newcomer's page) stays short and links every guide; the dashboards declare the
//! Grafana version their schema needs, a data-source variable that file provisioning resolves,
//! template variables (instance, supplier, batch) that every panel's query may use, one unit
//! per panel, value mappings for states and "never" for ages of things that never happened; the
//! Prometheus configuration example passes `promtool check config`; the hardened systemd units
//! of `deploy/` pass `systemd-analyze verify` and stay rated "OK" by its `security`. (Live checks, a real
//! Prometheus evaluating every panel and rule: `tests/it/observability.rs`.)

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::observe::{repo, tool};

fn file(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The anchors GitHub gives a Markdown file's headings (code blocks left out).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    markdown
        .lines()
        .filter(|l| {
            if l.starts_with("```") {
                in_code = !in_code;
            }
            !in_code && l.starts_with('#')
        })
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
    // The daemon's rules, the independent witness's (scraped from `witness serve`) and a
    // mirror's (`mirror --follow --metrics-listen`).
    for (rules, tests) in [
        ("alerts.yml", "alerts.test.yml"),
        ("witness-alerts.yml", "witness-alerts.test.yml"),
        ("mirror-alerts.yml", "mirror-alerts.test.yml"),
    ] {
        rules_have_runbooks_and_tests(rules, tests);
    }
}

fn rules_have_runbooks_and_tests(rules_file: &str, tests_file: &str) {
    let rules = file(&format!("dashboards/{rules_file}"));
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
    assert!(!runbooks.is_empty(), "{rules_file}: no rule");
    let book = anchors(&file("docs/runbooks.md"));
    for (name, url) in &runbooks {
        let url = url
            .as_deref()
            .unwrap_or_else(|| panic!("{name} has no runbook_url"));
        let anchor = url
            .strip_prefix("docs/runbooks.md#")
            .unwrap_or_else(|| panic!("{name}: {url} is not a section of docs/runbooks.md"));
        assert_eq!(
            anchor,
            format!("runbook-{}", name.to_lowercase()),
            "{name}: its runbook_url names another alert's section"
        );
        assert!(
            book.contains(anchor),
            "{name}: docs/runbooks.md has no section #{anchor}"
        );
    }
    // Each rule is evaluated at least once expecting alerts and once expecting none.
    let tests = file(&format!("dashboards/{tests_file}"));
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
        .args(["test", "rules", tests_file])
        .current_dir(repo().join("dashboards"))
        .output()
        .expect("promtool");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The relative link targets of a Markdown file (`[text](target)`, code left out).
fn links(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        // Inline code spans are not links.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = rest.split(')').next().unwrap_or_default();
            if !target.contains("://") && !target.is_empty() {
                out.push(target.to_owned());
            }
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_readme_and_the_guides_leads_somewhere() {
    let mut docs = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(repo().join("docs")).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(format!(
                "docs/{}",
                path.file_name().expect("name").to_string_lossy()
            ));
        }
    }
    let mut checked = 0;
    for doc in &docs {
        let dir = std::path::Path::new(doc)
            .parent()
            .expect("a directory")
            .to_owned();
        for target in links(&file(doc)) {
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let rel = if path.is_empty() {
                std::path::PathBuf::from(doc)
            } else {
                dir.join(path)
            };
            let full = repo().join(&rel);
            assert!(full.exists(), "{doc}: link {target}: no {}", rel.display());
            if let Some(a) = anchor {
                let text = std::fs::read_to_string(&full).expect("a Markdown file");
                assert!(
                    anchors(&text).contains(a),
                    "{doc}: link {target}: {} has no heading #{a}",
                    rel.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} links");
    // The README is the newcomer's page: what it is in its first lines, short, and a link to
    // every guide (with the screenshot it shows).
    let readme = file("README.md");
    let first: Vec<&str> = readme.lines().take(3).collect();
    assert!(
        first
            .iter()
            .any(|l| l.contains("auditable") && l.contains("operators")),
        "{first:?}"
    );
    assert!(
        readme.lines().count() <= 300,
        "the README grew past 300 lines"
    );
    let linked = links(&readme);
    for doc in docs.iter().skip(1) {
        assert!(
            linked
                .iter()
                .any(|l| l.split('#').next() == Some(doc.as_str())),
            "the README does not link {doc}"
        );
    }
    assert!(linked.iter().any(|l| l == "docs/report.png"));
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
        ("mirror.json", &["instance"][..]),
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
                "event_audit_mirror_inconsistent",
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

/// The hardened systemd units of `deploy/` pass `systemd-analyze verify` with this build's
/// binary in `ExecStart` (every directive known: an unknown one is only a warning there, so any
/// output fails), and stay hardened: `systemd-analyze security --offline` rates each at most
/// 2.0 ("OK"). Skipped, saying so, where systemd-analyze is not installed.
#[test]
fn the_systemd_units_verify_and_stay_hardened() {
    let installed = std::process::Command::new("sh")
        .args(["-c", "command -v systemd-analyze"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("skipped: systemd-analyze is not installed (Debian's systemd package has it)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for unit in ["event-audit.service", "event-audit-witness.service"] {
        let text = file(&format!("deploy/{unit}"))
            .replace("/usr/local/bin/event-audit", crate::support::BIN);
        let path = dir.path().join(unit);
        std::fs::write(&path, text).expect("write the unit");
        let out = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .arg(&path)
            .output()
            .expect("run systemd-analyze verify");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "{unit}: {said}"
        );
        let out = std::process::Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--no-pager"])
            .arg(&path)
            .output()
            .expect("run systemd-analyze security");
        let text = String::from_utf8_lossy(&out.stdout);
        let level: f64 = text
            .lines()
            .find_map(|l| l.split("Overall exposure level for ").nth(1))
            .and_then(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{unit}: no exposure level in {text}"));
        assert!(level <= 2.0, "{unit}: exposure {level}\n{text}");
    }
}

/// docs/deployment.md's settings file is one the binary takes: every key known (the settings
/// refuse unknown keys) and every value valid.
#[test]
fn the_deployment_guide_s_settings_file_is_valid() {
    let page = file("docs/deployment.md");
    let toml_block = page
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a TOML block in docs/deployment.md");
    let mut settings: event_audit::config::Settings =
        toml::from_str(toml_block).unwrap_or_else(|e| panic!("docs/deployment.md: {e}"));
    // What deploy/event-audit.service passes in the environment: the credentials' files.
    let unit = file("deploy/event-audit.service");
    let creds = std::path::Path::new("/run/credentials/event-audit.service");
    for (var, slot) in [
        (
            "EVENT_AUDIT_NATS_TLS_KEY_FILE",
            &mut settings.nats.tls_key_file,
        ),
        (
            "EVENT_AUDIT_WITNESS_SIGNING_KEY_FILE",
            &mut settings.witness.signing_key_file,
        ),
        (
            "EVENT_AUDIT_DATABASE_PASSWORD_FILE",
            &mut settings.database.password_file,
        ),
    ] {
        let line = unit
            .lines()
            .find_map(|l| l.strip_prefix(&format!("Environment={var}=%d/")))
            .unwrap_or_else(|| panic!("the unit passes no {var}"));
        *slot = Some(creds.join(line));
    }
    settings.validate().expect("valid settings");
    assert!(settings.database.tls_ca_file.is_some());
    assert!(settings.database.url.contains("sslmode=verify-full"));
}
