//! event-audit: makes a platform's event bus auditable during customer migrations.
//!
//! Data flow: `bus` (the NATS connection) → `ingest::source` (JetStream) → `decode` (envelope,
//! catalogue, verdict) → `row` (the row and its hash) → `ingest::sink` (PostgreSQL, through
//! `db`, with the tree in `witnessed`) → `verify` (the evidence), `evidence` (bundles) and
//! `reconcile` (against the platform) → `server` (reports, health, metrics). The transparency
//! log's formats are `tlog`'s, its I/O `witnessed`'s; catalogue evolution is `evolution`. `app`
//! wires the daemon; `cli` parses and dispatches; `config` holds every setting. See
//! ARCHITECTURE.md.
//!
//! The public API, and nothing else (every other room is crate-private, so the compiler reports
//! what nothing uses):
//! - `decode::verdict::decode` judges one message, and its `event` is the typed
//!   `decode::catalogue::Event` (one variant per catalogue event version);
//! - `tlog` (Merkle proofs, signed notes and checkpoints, cosignatures and the witness policy,
//!   the tile height) and `evidence::bundle` (an evidence bundle's format and its check) read and
//!   check the evidence without a database;
//! - `app::App::build(settings)` and `run_until_stopped()` run the daemon in-process, with
//!   `config::Settings` and `app::metrics::Metrics`;
//! - `parse`, `dispatch`, `default_log_filter` and `init_telemetry`: the binary's entry points.
//!
//! `test_support` (hidden) is how the integration tests and benchmarks reach inside; it is not
//! an API.

pub mod app;
pub(crate) mod archive;
pub(crate) use event_audit_proof::blobs;
pub(crate) mod bus;
pub(crate) mod cli;
pub use event_audit_base::config;
pub(crate) mod db;
pub mod decode;
#[cfg(feature = "dev")]
pub(crate) mod dev;
pub(crate) mod erase;
pub mod evidence;
pub(crate) mod evolution;
pub(crate) use event_audit_base::files;
pub(crate) mod index;
pub(crate) mod ingest;
pub(crate) mod log;
pub(crate) use event_audit_proof::mirror;
pub(crate) mod reconcile;
pub(crate) mod restore;
pub(crate) mod retention;
pub(crate) mod row;
pub(crate) mod server;
pub(crate) mod telemetry;
#[doc(hidden)]
pub mod test_support;
pub(crate) use event_audit_base::tls;
pub use event_audit_tlog as tlog;
pub(crate) mod verify;
pub(crate) mod witnessed;

/// The binary's entry points: its arguments parsed, the default log filter they imply, and
/// the command run.
pub use cli::{default_log_filter, dispatch, parse, Cli};
/// The binary's logging set-up (JSON or text, the filter from `RUST_LOG` or the CLI's default).
pub use telemetry::init as init_telemetry;
