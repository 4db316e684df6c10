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
pub mod bus;
pub mod cli;
pub mod config;
pub mod db;
pub mod decode;
#[cfg(feature = "dev")]
pub mod dev;
pub mod evidence;
pub mod evolution;
mod files;
pub mod ingest;
pub mod reconcile;
pub mod row;
mod server;
pub mod telemetry;
pub mod tlog;
pub mod verify;
pub mod witnessed;
