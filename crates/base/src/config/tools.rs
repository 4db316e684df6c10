//! Settings of the development tools: the load generator, the platform simulator and the demo
//! (plain data; the tools themselves live in `dev`, behind the `dev` feature).

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::options::section;
use super::{addr, defaults, redact_url, Dur};

section! {
    /// The load generator (`publish`, and the demo's background load).
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct PublishSettings in "publish" {
        /// Messages to publish.
        #[flag("count"; short('n'))]
        pub count: usize = defaults::PUBLISH_COUNT,
        /// Subject to publish to, one the stream captures (the default, when the stream does
        /// not capture it, becomes `<prefix>.load` of the stream's first subject).
        #[flag("subject")]
        pub subject: String = defaults::PUBLISH_SUBJECT.into(),
        /// Messages per second, each message paced; 0 = as fast as the server acknowledges.
        #[flag("rate")]
        pub rate: u64 = defaults::PUBLISH_RATE,
        /// Seed of the deterministic mix (envelope ids included); random unless given, so that
        /// re-runs never reuse envelope ids.
        #[flag("seed")]
        pub seed: Option<u64> = None,
        /// JetStream publishes awaiting their ack at once.
        #[flag("window")]
        pub window: usize = defaults::PUBLISH_WINDOW,
        /// Draw each message's account numbers from this many accounts (a migration's shape:
        /// each account's events spread over the load); 0 = a new number every time.
        #[flag("accounts")]
        pub accounts: u64 = 0,
    }
}

/// How the simulator's list records name the platform account number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SimNaming {
    /// `service_account_number`, as the spec.
    #[default]
    Spec,
    /// `kraken_account_number`, as live deployments.
    Kraken,
    /// `kraken_account_number` and `account_number`.
    Both,
    /// A shape no deployment sends, to test that the client names what is missing.
    Unrecognised,
}

section! {
    /// Anomaly rates of the simulated batch: the fraction (0 to 1) of its accounts that get each.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct SimRates in "simulator.rates" {
        /// Fraction of accounts whose completion event is dropped (→ missing_event).
        #[flag("drop-completion")]
        pub drop_completion: f64 = 0.0,
        /// Fraction whose complete event names another account number (→ identifier_mismatch).
        #[flag("wrong-identifier")]
        pub wrong_identifier: f64 = 0.0,
        /// Fraction with an error event although the account was created (→ error_but_imported).
        #[flag("error-but-created")]
        pub error_but_created: f64 = 0.0,
        /// Fraction cancelled, staged data gone (→ cancelled).
        #[flag("cancelled")]
        pub cancelled: f64 = 0.0,
        /// Fraction with a cancelled event although created (→ cancelled_but_imported).
        #[flag("cancelled-but-imported")]
        pub cancelled_but_imported: f64 = 0.0,
        /// Fraction with dry runs only (→ dry_run_only).
        #[flag("dry-run")]
        pub dry_run: f64 = 0.0,
        /// Fraction whose complete event is published twice with one envelope id (→ matched).
        #[flag("duplicate-events")]
        pub duplicate_events: f64 = 0.0,
        /// Fraction with an earlier attempt's error delivered after the completion (→ matched).
        #[flag("late-events")]
        pub late_events: f64 = 0.0,
        /// Fraction left IN_PROGRESS without event (→ in_progress).
        #[flag("left-in-progress")]
        pub left_in_progress: f64 = 0.0,
        /// Fraction left staged without event (→ pending).
        #[flag("left-pending")]
        pub left_pending: f64 = 0.0,
        /// Fraction with an error event, not created (→ failed).
        #[flag("failed")]
        pub failed: f64 = 0.0,
        /// Fraction with a complete event but no account on the platform (→ missing_in_platform).
        #[flag("missing-in-platform")]
        pub missing_in_platform: f64 = 0.0,
        /// Fraction imported whose registration was requested just now (→ registration in_flight).
        #[flag("registration-in-flight")]
        pub registration_in_flight: f64 = 0.0,
        /// Fraction imported whose registration was never requested (→ never_requested).
        #[flag("registration-never-requested")]
        pub registration_never_requested: f64 = 0.0,
        /// Fraction imported whose registration was requested with the import and never completed
        /// (→ stalled, with a registration grace below --age).
        #[flag("registration-stalled")]
        pub registration_stalled: f64 = 0.0,
        /// Fraction imported whose registration was requested, then cancelled (→ cancelled).
        #[flag("registration-cancelled")]
        pub registration_cancelled: f64 = 0.0,
        /// Fraction imported whose registration completed, then was reversed (→ reversed).
        #[flag("registration-reversed")]
        pub registration_reversed: f64 = 0.0,
    }
}

section! {
    /// The platform simulator.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct SimulatorSettings in "simulator" {
        /// Listen address of the REST service (port 0: any free port, printed on stderr).
        #[flag("listen")]
        pub listen: SocketAddr = addr(defaults::SIM_LISTEN),
        /// The import supplier code the batch belongs to.
        #[flag("supplier")]
        pub supplier: String = defaults::SIM_SUPPLIER.into(),
        /// Accounts in the batch.
        #[flag("accounts")]
        pub accounts: usize = defaults::SIM_ACCOUNTS,
        /// Seed: the same seed gives the same accounts, numbers, anomalies and events (envelope
        /// ids included); random unless given, so that re-runs never reuse envelope ids.
        #[flag("seed")]
        pub seed: Option<u64> = None,
        /// Subject to publish the events to.
        #[flag("subject")]
        pub subject: String = defaults::SIM_SUBJECT.into(),
        /// Simulated time of the batch's first account, RFC 3339 (10 ms between accounts);
        /// now minus --age when not given.
        #[flag("start")]
        pub start: Option<String> = None,
        /// How long ago the batch ran, when --start is not given.
        #[flag("age")]
        pub age: Dur = defaults::SIM_AGE,
        pub rates: SimRates = SimRates::default(),
        /// `data_import.order_process.*` events to publish (outcomes drawn from the seed).
        #[flag("orders")]
        pub orders: usize = 0,
        /// Fraction (0 to 1) of REST requests answered 503 (retries overcome it).
        #[flag("rest-5xx")]
        pub rest_5xx: f64 = 0.0,
        /// Fraction (0 to 1) of accounts whose per-account endpoints always answer 503
        /// (→ unverified).
        #[flag("rest-down")]
        pub rest_down: f64 = 0.0,
        /// Fraction (0 to 1) of REST requests answered slowly (after --rest-slow-delay).
        #[flag("rest-slow")]
        pub rest_slow: f64 = 0.0,
        /// How slowly the slow requests are answered.
        #[flag("rest-slow-delay")]
        pub rest_slow_delay: Dur = defaults::SIM_REST_SLOW,
        /// How list records name the platform account number.
        #[flag("naming")]
        pub naming: SimNaming = SimNaming::default(),
        /// Wrap the imported list in `{"count", "next", "results"}`.
        #[flag("wrap-imported")]
        pub wrap_imported: bool = false,
        /// Write the ground truth (expected verdict per account, counts) to this JSON file.
        #[flag("expected")]
        pub expected: Option<PathBuf> = None,
        /// File holding the token the REST service requires (else EVENT_AUDIT_REST_TOKEN).
        #[flag("token-file")]
        pub token_file: Option<PathBuf> = None,
        /// JetStream publishes awaiting their ack at once.
        #[flag("window")]
        pub window: usize = defaults::PUBLISH_WINDOW,
        /// Write the batch's manifest (one external account number a line, `order:ID` lines) to
        /// this file (mode 0600), for `event-audit batch register --accounts`.
        #[flag("manifest")]
        pub manifest: Option<PathBuf> = None,
        /// A token expires after this many requests (401 `Token has expired.`); 0: never.
        #[flag("token-uses")]
        pub token_uses: u64 = 0,
        /// File holding the organisation API key: serves the GraphQL token mutation at
        /// `POST /graphql` (issued tokens expire after --token-uses too).
        #[flag("api-key-file")]
        pub api_key_file: Option<PathBuf> = None,
    }
}

section! {
    /// The demo.
    #[derive(Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct DemoSettings in "demo" {
        /// The demo's own database; when it is the default one, dropped and recreated at start and
        /// dropped again when the demo stops (unless --keep). Another database is never dropped.
        #[flag("database-url"; hide_env_values(true))]
        pub database_url: String = defaults::DEMO_DATABASE_URL.into(),
        /// The platform simulator's REST listener.
        #[flag("platform-addr")]
        pub platform_addr: SocketAddr = addr(defaults::DEMO_PLATFORM_ADDR),
        /// Accounts in the simulated migration batch.
        #[flag("accounts")]
        pub accounts: usize = defaults::DEMO_ACCOUNTS,
        /// Background catalogue events per second (a realistic mix, ~2% bad).
        #[flag("load-rate")]
        pub load_rate: u64 = defaults::DEMO_LOAD_RATE,
        /// Seed of the simulated batch and of the background load (same seed, same accounts);
        /// random unless given.
        #[flag("seed")]
        pub seed: Option<u64> = None,
        /// Leave the demo's stream (EVENT_AUDIT_DEMO) and database behind when it stops, to query,
        /// verify or diff the stored runs afterwards (not to reconcile again: the simulated platform
        /// stops with the demo); without it, Ctrl-C drops both.
        #[flag("keep")]
        pub keep: bool = false,
    }
}

impl std::fmt::Debug for DemoSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoSettings")
            .field("database_url", &redact_url(&self.database_url))
            .field("platform_addr", &self.platform_addr)
            .field("accounts", &self.accounts)
            .field("load_rate", &self.load_rate)
            .field("seed", &self.seed)
            .field("keep", &self.keep)
            .finish()
    }
}
