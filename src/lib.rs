//! event-audit: makes a platform's event bus auditable during customer migrations.
//!
//! Data flow: `bus` (JetStream) → `envelope` + `catalogue` → `verdict` → `store` (Postgres audit
//! log) → `reconcile` → `report` / `metrics`. See ARCHITECTURE.md.

pub mod catalogue;
pub mod cli;
pub mod cmd;
pub mod envelope;
pub mod verdict;
