//! event-audit: makes a platform's event bus auditable during customer migrations.
//!
//! Data flow: `bus` (the NATS connection) → `ingest::source` (JetStream) → `decode` (envelope,
//! catalogue, verdict) → `audit` (the row and its hash) → `ingest::sink` (PostgreSQL, through
//! `db`) → `verify` (the evidence) and `reconcile` (against the platform) → `server` (reports,
//! health, metrics) and `telemetry`. `app` wires the daemon; `cli` parses and dispatches;
//! `config` holds every setting. See ARCHITECTURE.md.
//!
//! The public modules, items and fields are those the binary, the integration tests and a Rust
//! consumer use; the other modules are crate-private (`mod` or `pub(crate) mod`), and the other
//! items and fields `pub(crate)` or inside such a module, so that the compiler reports what
//! nothing uses. For a consumer:
//! - `decode::verdict::decode` judges one message, and its `event` is the typed
//!   `decode::catalogue::Event` (one variant per catalogue event version);
//! - `audit::note`, `audit::cosign`, `audit::tlog` and `audit::bundle` read and check the
//!   evidence (signed checkpoints, cosignatures, Merkle proofs, bundles) without a database;
//! - `app::App::build(settings)` and `run_until_stopped()` run the daemon in-process.

pub mod app;
pub(crate) mod bus;
pub(crate) mod cli;
pub mod config;
pub(crate) mod db;
pub mod decode;
#[cfg(feature = "dev")]
pub(crate) mod dev;
pub mod evidence;
pub(crate) mod evolution;
pub(crate) mod files;
pub(crate) mod ingest;
pub(crate) mod reconcile;
pub(crate) mod row;
pub(crate) mod server;
pub(crate) mod telemetry;
#[doc(hidden)]
pub mod test_support;
pub mod tlog;
pub(crate) mod verify;
pub(crate) mod witnessed;

/// The binary's entry points: its arguments parsed, the default log filter they imply, and
/// the command run.
pub use cli::{default_log_filter, dispatch, parse, Cli};
/// The binary's logging set-up (JSON or text, the filter from `RUST_LOG` or the CLI's default).
pub use telemetry::init as init_telemetry;
