//! Start-up validation: values that cannot work are refused (never clamped), each error naming
//! the key, the value (credentials redacted, see [`super::urls`]) and what is allowed. The
//! settings are checked group by group, in a fixed order (the order of the errors).

use std::fmt;

use super::urls::{database_url_problem, nats_url_problem, redact_nats_url, redact_url};
use super::{Dur, Settings};

/// One refused setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Dotted settings path, e.g. `ingest.batch_size` (flag `--batch-size`).
    pub key: String,
    /// The value as given (redacted when it may hold a credential).
    pub value: String,
    pub reason: String,
}

/// Every refused setting at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError(pub Vec<Invalid>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "setting `{}` = {}: {}", e.key, e.value, e.reason)?;
        }
        Ok(())
    }
}

/// The refusals found so far (each group of settings adds its own).
pub(super) struct Check(Vec<Invalid>);

impl Check {
    pub(super) fn fail(&mut self, key: &str, value: impl fmt::Display, reason: impl Into<String>) {
        self.0.push(Invalid {
            key: key.into(),
            value: super::urls::hide_credentials(&value.to_string()),
            reason: reason.into(),
        });
    }

    fn range<T: PartialOrd + fmt::Display + Copy>(&mut self, key: &str, v: T, lo: T, hi: T) {
        if v < lo || v > hi {
            self.fail(key, v, format!("must be between {lo} and {hi}"));
        }
    }

    pub(super) fn dur(&mut self, key: &str, v: Dur, lo: Dur, hi: Dur) {
        if v < lo || v > hi {
            self.fail(
                key,
                v,
                format!("must be between {lo} and {hi} (a bare number is seconds: write the unit, `50ms`, `30s`, `5m`)"),
            );
        }
    }

    fn fraction(&mut self, key: &str, v: f64) {
        if !(0.0..=1.0).contains(&v) {
            self.fail(key, v, "must be a fraction between 0 and 1");
        }
    }
}

impl Settings {
    /// Refuses values that cannot work, naming each key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut c = Check(Vec::new());
        self.check_database(&mut c);
        self.check_nats(&mut c);
        self.check_stream(&mut c);
        self.check_ingest(&mut c);
        self.check_http(&mut c);
        self.check_rest(&mut c);
        self.check_reconcile(&mut c);
        self.retention.check(&mut c);
        self.object_store.check(&mut c);
        self.check_dev_tools(&mut c);
        if c.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(c.0))
        }
    }
}

/// libpq's `sslmode` values, as `database.tls_mode` takes them.
pub(super) const DB_TLS_MODES: [&str; 5] =
    ["disable", "prefer", "require", "verify-ca", "verify-full"];

impl Settings {
    /// The audit log's database (and the demo's): its URL, connections and timeouts.
    fn check_database(&self, c: &mut Check) {
        if let Some(why) = database_url_problem(&self.database.url) {
            c.fail("database.url", redact_url(&self.database.url), why);
        }
        if let Some(why) = database_url_problem(&self.demo.database_url) {
            c.fail(
                "demo.database_url",
                redact_url(&self.demo.database_url),
                why,
            );
        }
        if let Some(mode) = &self.database.tls_mode {
            if !DB_TLS_MODES.contains(&mode.as_str()) {
                c.fail(
                    "database.tls_mode",
                    mode,
                    "one of disable, prefer, require, verify-ca, verify-full (libpq's sslmode)",
                );
            }
        }
        c.range("database.connections", self.database.connections, 1, 100);
        c.dur(
            "database.connect_timeout",
            self.database.connect_timeout,
            Dur::millis(100),
            Dur::secs(600),
        );
        c.dur(
            "database.statement_timeout",
            self.database.statement_timeout,
            Dur::millis(100),
            Dur::secs(86_400),
        );
        c.dur(
            "database.write_timeout",
            self.database.write_timeout,
            Dur::millis(100),
            Dur::secs(86_400),
        );
    }

    /// NATS: the URL, the connect timeout and the way of authenticating.
    fn check_nats(&self, c: &mut Check) {
        if let Some(why) = nats_url_problem(&self.nats.url) {
            c.fail("nats.url", redact_nats_url(&self.nats.url), why);
        }
        c.dur(
            "nats.connect_timeout",
            self.nats.connect_timeout,
            Dur::millis(100),
            Dur::secs(600),
        );
        self.validate_nats_auth(c);
    }

    /// The stream and its durable consumer: names, subjects, ack wait.
    fn check_stream(&self, c: &mut Check) {
        if self.stream.name.is_empty()
            || !self
                .stream
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
        {
            c.fail(
                "stream.name",
                &self.stream.name,
                "letters, digits, `_` and `-` only, not empty",
            );
        }
        if self.stream.subjects.is_empty() || self.stream.subjects.iter().any(|s| s.is_empty()) {
            c.fail(
                "stream.subjects",
                self.stream.subjects.join(","),
                "at least one non-empty subject",
            );
        }
        if self.stream.consumer.is_empty() || self.stream.consumer.contains(['.', '*', '>', ' ']) {
            c.fail(
                "stream.consumer",
                &self.stream.consumer,
                "a non-empty name without `.`, `*`, `>` or spaces",
            );
        }
        c.dur(
            "stream.ack_wait",
            self.stream.ack_wait,
            Dur::secs(1),
            Dur::secs(3600),
        );
        // JetStream allows 1 to 5 replicas.
        c.range("stream.replicas", self.stream.replicas, 1, 5);
        c.range(
            "witness.checkpoint_replicas",
            self.witness.checkpoint_replicas,
            1,
            5,
        );
        if let Some(url) = &self.witness.tiles_url {
            let w = &self.witness;
            // The bucket and prefix are checked where the store is opened.
            let why = match (url.starts_with("s3://"), &w.tiles_dir, &w.signing_key_file) {
                (false, _, _) => "s3://bucket/prefix (a directory is --tiles-dir)",
                (_, Some(_), _) => "either --tiles-url or --tiles-dir, not both",
                (_, _, None) => "a signing key as well (--signing-key-file): tiles are written at each signed checkpoint",
                _ => "",
            };
            if !why.is_empty() {
                c.fail("witness.tiles_url", url, why);
            }
        } else if let Some(d) = self.witness.tiles_lock_for {
            c.fail(
                "witness.tiles_lock_for",
                d,
                "only with witness.tiles_url: a directory cannot lock a file",
            );
        }
        c.dur(
            "witness.tiles_repair_every",
            self.witness.tiles_repair_every,
            Dur::secs(60),
            Dur::secs(366 * 86_400),
        );
        c.range(
            "witness.tiles_repair_rate",
            self.witness.tiles_repair_rate,
            1,
            10_000,
        );
        if let (Some(dir), None) = (&self.witness.tiles_dir, &self.witness.signing_key_file) {
            c.fail(
                "witness.tiles_dir",
                dir.display(),
                "a signing key as well (--signing-key-file): tiles are written at each signed checkpoint",
            );
        }
    }

    /// Ingest: batch size, writers, linger and the stall and shutdown timeouts.
    fn check_ingest(&self, c: &mut Check) {
        c.range("ingest.batch_size", self.ingest.batch_size, 1, 100_000);
        c.range("ingest.writers", self.ingest.writers, 1, 16);
        c.dur(
            "ingest.linger",
            self.ingest.linger,
            Dur::millis(0),
            Dur::secs(10),
        );
        c.dur(
            "ingest.stall_timeout",
            self.ingest.stall_timeout,
            Dur::secs(1),
            Dur::secs(86_400),
        );
        c.dur(
            "ingest.shutdown_timeout",
            self.ingest.shutdown_timeout,
            Dur::millis(100),
            Dur::secs(3600),
        );
    }

    /// The HTTP listener's limits.
    fn check_http(&self, c: &mut Check) {
        c.dur(
            "http.header_timeout",
            self.http.header_timeout,
            Dur::millis(100),
            Dur::secs(600),
        );
        c.dur(
            "http.idle_timeout",
            self.http.idle_timeout,
            Dur::millis(100),
            Dur::secs(86_400),
        );
        c.range("http.max_connections", self.http.max_connections, 4, 65_536);
        c.range(
            "http.max_header_bytes",
            self.http.max_header_bytes,
            1024,
            1 << 20,
        );
        c.dur(
            "witness_server.max_connection_age",
            self.witness_server.max_connection_age,
            Dur::secs(1),
            Dur::secs(86_400),
        );
    }

    /// The platform's REST API: URL, timeouts, concurrency, rate and retries.
    fn check_rest(&self, c: &mut Check) {
        if let Some(url) = &self.rest.url {
            match url::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => c.fail("rest.url", "<given>", "an http:// or https:// URL"),
            }
        }
        c.dur(
            "rest.timeout",
            self.rest.timeout,
            Dur::millis(1),
            Dur::secs(3600),
        );
        c.dur(
            "rest.list_timeout",
            self.rest.list_timeout,
            Dur::millis(1),
            Dur::secs(3600),
        );
        c.range("rest.concurrency", self.rest.concurrency, 1, 256);
        if !(0.0..=100_000.0).contains(&self.rest.rate) {
            c.fail(
                "rest.rate",
                self.rest.rate,
                "between 0 (no limit) and 100000",
            );
        }
        c.range("rest.retries", self.rest.retries, 0, 20);
    }

    /// Reconciliation and what its reports and token renewal use: the interval and suppliers, the
    /// public and GraphQL URLs, the link lifetime, the token mutation, when a batch closes, the
    /// registration grace and the metrics' poll.
    fn check_reconcile(&self, c: &mut Check) {
        c.dur(
            "reconcile.interval",
            self.reconcile.interval,
            Dur::secs(1),
            Dur::secs(86_400 * 7),
        );
        if self.reconcile.suppliers.iter().any(|s| s.trim().is_empty()) {
            c.fail(
                "reconcile.suppliers",
                "\"\"",
                "supplier codes must not be empty",
            );
        }
        for (key, url) in [
            ("http.public_url", &self.http.public_url),
            ("rest.graphql_url", &self.rest.graphql_url),
        ] {
            if let Some(url) = url {
                match url::Url::parse(url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
                    _ => c.fail(key, redact_url(url), "an http:// or https:// URL"),
                }
            }
        }
        c.dur(
            "http.link_ttl",
            self.http.link_ttl,
            Dur::secs(60),
            Dur::secs(86_400),
        );
        if !self.rest.token_mutation.contains("mutation") {
            c.fail(
                "rest.token_mutation",
                "<given>",
                "a GraphQL mutation document (`mutation ... { ... }`)",
            );
        }
        c.dur(
            "reconcile.close_after",
            self.reconcile.close_after,
            Dur::secs(1),
            Dur::secs(86_400 * 90),
        );
        c.dur(
            "reconcile.registration_grace",
            self.reconcile.registration_grace,
            Dur::secs(60),
            Dur::secs(86_400 * 90),
        );
        c.dur(
            "reconcile.poll",
            self.reconcile.poll,
            Dur::secs(1),
            Dur::secs(3600),
        );
    }

    /// The development tools: the publisher's and the simulator's windows and rates.
    fn check_dev_tools(&self, c: &mut Check) {
        c.range("publish.window", self.publish.window, 1, 65_536);
        c.range("simulator.window", self.simulator.window, 1, 65_536);
        let r = &self.simulator.rates;
        for (key, v) in [
            ("simulator.rates.drop_completion", r.drop_completion),
            ("simulator.rates.wrong_identifier", r.wrong_identifier),
            ("simulator.rates.error_but_created", r.error_but_created),
            ("simulator.rates.cancelled", r.cancelled),
            (
                "simulator.rates.cancelled_but_imported",
                r.cancelled_but_imported,
            ),
            ("simulator.rates.dry_run", r.dry_run),
            ("simulator.rates.duplicate_events", r.duplicate_events),
            ("simulator.rates.late_events", r.late_events),
            ("simulator.rates.left_in_progress", r.left_in_progress),
            ("simulator.rates.left_pending", r.left_pending),
            ("simulator.rates.failed", r.failed),
            ("simulator.rates.missing_in_platform", r.missing_in_platform),
            (
                "simulator.rates.registration_in_flight",
                r.registration_in_flight,
            ),
            (
                "simulator.rates.registration_never_requested",
                r.registration_never_requested,
            ),
            (
                "simulator.rates.registration_stalled",
                r.registration_stalled,
            ),
            (
                "simulator.rates.registration_cancelled",
                r.registration_cancelled,
            ),
            (
                "simulator.rates.registration_reversed",
                r.registration_reversed,
            ),
            ("simulator.rest_5xx", self.simulator.rest_5xx),
            ("simulator.rest_down", self.simulator.rest_down),
            ("simulator.rest_slow", self.simulator.rest_slow),
        ] {
            c.fraction(key, v);
        }
    }

    /// One way of authenticating to NATS at a time; a client certificate comes with its key.
    fn validate_nats_auth(&self, c: &mut Check) {
        let n = &self.nats;
        let ways = [
            ("nats.password_file", n.password_file.is_some()),
            ("nats.token_file", n.token_file.is_some()),
            ("nats.nkey_file", n.nkey_file.is_some()),
            ("nats.creds_file", n.creds_file.is_some()),
        ];
        let given: Vec<&str> = ways.iter().filter(|w| w.1).map(|w| w.0).collect();
        if given.len() > 1 {
            c.fail(
                given[1],
                "<given>",
                format!(
                    "only one way of authenticating to NATS at a time (also `{}` is set)",
                    given[0]
                ),
            );
        }
        if n.password_file.is_some() && n.user.is_none() {
            c.fail(
                "nats.password_file",
                "<given>",
                "needs `nats.user` (--nats-user or EVENT_AUDIT_NATS_USER)",
            );
        }
        if n.user.as_deref().is_some_and(str::is_empty) {
            c.fail("nats.user", "\"\"", "a non-empty user name");
        }
        if n.tls_cert_file.is_some() != n.tls_key_file.is_some() {
            let (key, missing) = if n.tls_cert_file.is_some() {
                ("nats.tls_cert_file", "nats.tls_key_file")
            } else {
                ("nats.tls_key_file", "nats.tls_cert_file")
            };
            c.fail(
                key,
                "<given>",
                format!("needs `{missing}` too (a client certificate comes with its key)"),
            );
        }
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
