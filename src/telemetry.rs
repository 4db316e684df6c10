//! Telemetry: logging set-up ([`init`]), the daemon's health state ([`health`]) and its
//! Prometheus metrics by area ([`metrics`]).

pub(crate) mod health;
pub use event_audit_base::metrics;

pub use event_audit_base::logging::{init, DEFAULT_FILTER};
