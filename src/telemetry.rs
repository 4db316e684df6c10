//! Telemetry: logging set-up ([`init`]), the daemon's health state ([`health`]) and its
//! Prometheus metrics by area ([`metrics`]).

pub(crate) mod health;
pub(crate) use event_audit_base::metrics;

#[allow(unreachable_pub)]
// public through `test_support` (the lint misses re-exports of re-exports)
pub use event_audit_base::logging::{init, DEFAULT_FILTER};
