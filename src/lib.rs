//! event-audit: makes a platform's event bus auditable during customer migrations.
//!
//! Data flow: `bus` (JetStream) → `envelope` + `catalogue` → `verdict` → `store` (Postgres audit
//! log) → `reconcile` → `report` / `metrics`. See ARCHITECTURE.md.

pub mod bench;
pub mod bus;
pub mod catalogue;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod envelope;
pub mod http;
pub mod ingest;
pub mod metrics;
pub mod publish;
pub mod reconcile;
pub mod record;
pub mod sample;
pub mod secrets;
pub mod simulator;
pub mod store;
pub mod verdict;
