//! Settings of the development tools: the load generator, the platform simulator and the demo
//! (plain data; the tools themselves live in `dev`, behind the `dev` feature).

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{addr, defaults, redact_url, Dur};

/// The load generator (`publish`, and the demo's background load).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishSettings {
    pub count: usize,
    pub subject: String,
    /// Messages per second; 0 = as fast as the server acknowledges.
    pub rate: u64,
    /// Seed of the deterministic mix; random when unset (re-runs never reuse envelope ids).
    pub seed: Option<u64>,
    /// JetStream publishes awaiting their ack at once.
    pub window: usize,
}

impl Default for PublishSettings {
    fn default() -> Self {
        PublishSettings {
            count: defaults::PUBLISH_COUNT,
            subject: defaults::PUBLISH_SUBJECT.into(),
            rate: defaults::PUBLISH_RATE,
            seed: None,
            window: defaults::PUBLISH_WINDOW,
        }
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

/// Anomaly rates of the simulated batch: the fraction (0 to 1) of its accounts that get each.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimRates {
    pub drop_completion: f64,
    pub wrong_identifier: f64,
    pub error_but_created: f64,
    pub cancelled: f64,
    pub cancelled_but_imported: f64,
    pub dry_run: f64,
    pub duplicate_events: f64,
    pub late_events: f64,
    pub left_in_progress: f64,
    pub left_pending: f64,
    pub failed: f64,
    pub missing_in_platform: f64,
    /// Imported accounts whose registration was requested just now (→ in_flight).
    pub registration_in_flight: f64,
    /// Imported accounts whose registration was never requested (→ never_requested).
    pub registration_never_requested: f64,
    /// Imported accounts whose registration was requested with the batch, never completed
    /// (→ stalled, with a registration grace below the batch's age).
    pub registration_stalled: f64,
    /// Imported accounts whose registration was requested, then cancelled (→ cancelled).
    pub registration_cancelled: f64,
    /// Imported accounts whose registration completed, then was reversed (→ reversed).
    pub registration_reversed: f64,
}

/// The platform simulator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimulatorSettings {
    pub listen: SocketAddr,
    pub supplier: String,
    pub accounts: usize,
    /// Seed of the batch (accounts, anomalies, envelope ids); random when unset.
    pub seed: Option<u64>,
    pub subject: String,
    /// Simulated time of the batch's first account (RFC 3339); now minus `age` when unset.
    pub start: Option<String>,
    pub age: Dur,
    pub rates: SimRates,
    pub orders: usize,
    /// Fraction of REST requests answered 503.
    pub rest_5xx: f64,
    /// Fraction of accounts whose per-account endpoints always answer 503.
    pub rest_down: f64,
    /// Fraction of REST requests answered slowly.
    pub rest_slow: f64,
    /// How slowly.
    pub rest_slow_delay: Dur,
    pub naming: SimNaming,
    pub wrap_imported: bool,
    /// Write the ground truth to this JSON file.
    pub expected: Option<PathBuf>,
    /// File holding the token the REST service requires (else EVENT_AUDIT_REST_TOKEN).
    pub token_file: Option<PathBuf>,
    pub window: usize,
    /// Write the batch's manifest (one external account number a line, then `order:` lines)
    /// to this file.
    pub manifest: Option<PathBuf>,
    /// A token expires after this many requests (0: never).
    pub token_uses: u64,
    /// File holding the organisation API key that the simulated GraphQL token mutation
    /// requires (`POST /graphql`; without it, no GraphQL endpoint).
    pub api_key_file: Option<PathBuf>,
}

impl Default for SimulatorSettings {
    fn default() -> Self {
        SimulatorSettings {
            listen: addr(defaults::SIM_LISTEN),
            supplier: defaults::SIM_SUPPLIER.into(),
            accounts: defaults::SIM_ACCOUNTS,
            seed: None,
            subject: defaults::SIM_SUBJECT.into(),
            start: None,
            age: defaults::SIM_AGE,
            rates: SimRates::default(),
            orders: 0,
            rest_5xx: 0.0,
            rest_down: 0.0,
            rest_slow: 0.0,
            rest_slow_delay: defaults::SIM_REST_SLOW,
            naming: SimNaming::default(),
            wrap_imported: false,
            expected: None,
            token_file: None,
            window: defaults::PUBLISH_WINDOW,
            manifest: None,
            token_uses: 0,
            api_key_file: None,
        }
    }
}

/// The demo.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DemoSettings {
    /// The demo's own database; dropped and recreated at start when it is the default one.
    pub database_url: String,
    pub platform_addr: SocketAddr,
    pub accounts: usize,
    /// Background catalogue events per second.
    pub load_rate: u64,
    /// Seed of the batch and the load; random when unset.
    pub seed: Option<u64>,
    /// Leave the demo's stream and database behind when it stops (dropped otherwise).
    pub keep: bool,
}

impl Default for DemoSettings {
    fn default() -> Self {
        DemoSettings {
            database_url: defaults::DEMO_DATABASE_URL.into(),
            platform_addr: addr(defaults::DEMO_PLATFORM_ADDR),
            accounts: defaults::DEMO_ACCOUNTS,
            load_rate: defaults::DEMO_LOAD_RATE,
            seed: None,
            keep: false,
        }
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
