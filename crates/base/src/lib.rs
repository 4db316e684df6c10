//! What every event-audit binary stands on (the daemon, the auditor's tools and the witness):
//! one `Settings` with every option declared once and its layering ([`config`]), the commands'
//! option groups over it ([`args`], [`witness_args`]),
//! files read with bounds and written privately ([`files`]), TLS for every connection made or
//! accepted ([`tls`]), the Prometheus registry's helpers ([`metrics`]), the small HTTP server ([`http`]), logging ([`logging`]) and the
//! stop on a signal ([`signal`]). No database, no bus.

#[macro_use]
pub mod args;
pub mod config;
pub mod files;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod signal;
pub mod tls;
pub mod witness_args;
