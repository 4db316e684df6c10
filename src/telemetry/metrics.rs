//! Prometheus metrics, split by area, one writer per fact: [`ingest`] (written by the ingest
//! pipeline), [`chain`] (the chain poller), [`rest`] (the REST client), [`reconcile`]
//! (reconciliation runs), [`witness`] (the checkpoint signer), plus the build and process facts registered here. Names follow
//! `event_audit_<noun>_<unit>[_total]`; labels are bounded (see ARCHITECTURE.md).

pub(crate) mod chain;
pub(crate) mod ingest;
pub(crate) mod reconcile;
pub(crate) mod rest;
pub mod witness;

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};

pub use prometheus::Registry;

/// The daemon's metrics: every area in one registry.
pub struct Metrics {
    pub(crate) registry: Registry,
    pub(crate) ingest: ingest::IngestMetrics,
    pub(crate) chain: chain::ChainMetrics,
    pub rest: rest::RestMetrics,
    pub(crate) reconcile: reconcile::ReconcileMetrics,
    pub(crate) witness: std::sync::Arc<witness::WitnessMetrics>,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let build = gauge_vec(
            &registry,
            "event_audit_build_info",
            "Version, git commit and catalogue fingerprint of this build (always 1)",
            &["version", "git_hash", "catalogue"],
        );
        build
            .with_label_values(&[
                env!("CARGO_PKG_VERSION"),
                env!("EVENT_AUDIT_GIT_HASH"),
                crate::decode::catalogue::FINGERPRINT,
            ])
            .set(1);
        gauge(
            &registry,
            "event_audit_process_start_time_seconds",
            "Unix time the process started",
        )
        .set(chrono::Utc::now().timestamp());
        Metrics {
            ingest: ingest::IngestMetrics::new(&registry),
            chain: chain::ChainMetrics::new(&registry),
            rest: rest::RestMetrics::new(&registry),
            reconcile: reconcile::ReconcileMetrics::new(&registry),
            witness: std::sync::Arc::new(witness::WitnessMetrics::new(&registry)),
            registry,
        }
    }

    /// `event_audit_instance_info{audit_instance="<name>"} 1`: which daemon exports these
    /// series, when several share a consumer (join on the target: `* on(instance)
    /// group_left(audit_instance) event_audit_instance_info`). Not `instance`, which is
    /// Prometheus's own target label.
    pub(crate) fn set_instance(&self, name: &str) {
        gauge_vec(
            &self.registry,
            "event_audit_instance_info",
            "The daemon's instance name (--instance), as in the chain links it writes (always 1)",
            &["audit_instance"],
        )
        .with_label_values(&[name])
        .set(1);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        render(&self.registry)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The text exposition format of a registry.
pub fn render(registry: &Registry) -> String {
    let mut buf = String::new();
    let enc = prometheus::TextEncoder::new();
    let _ = enc.encode_utf8(&registry.gather(), &mut buf);
    buf
}

fn reg<T: prometheus::core::Collector + Clone + 'static>(r: &Registry, c: T) -> T {
    // Names are fixed and distinct: registration cannot fail.
    let _ = r.register(Box::new(c.clone()));
    c
}

pub(crate) fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    reg(
        r,
        IntCounter::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    reg(
        r,
        IntGauge::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn float_gauge(r: &Registry, name: &str, help: &str) -> prometheus::Gauge {
    reg(
        r,
        prometheus::Gauge::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn histogram(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    reg(
        r,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
            .unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn counter_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    reg(
        r,
        IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    reg(
        r,
        IntGaugeVec::new(Opts::new(name, help), labels).unwrap_or_else(|_| unreachable!()),
    )
}

pub(crate) fn histogram_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    reg(
        r,
        HistogramVec::new(HistogramOpts::new(name, help), labels)
            .unwrap_or_else(|_| unreachable!()),
    )
}
