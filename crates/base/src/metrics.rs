//! The Prometheus registry's helpers every room registers its metrics with (a metric's name is
//! fixed and distinct, so registration cannot fail), and the text exposition format. Each
//! area's metrics live beside what emits them (`ingest::metrics`, `verify::metrics`,
//! `reconcile::metrics`, `reconcile::rest::metrics`, `witnessed::metrics`); `app::metrics`
//! builds the daemon's registry from them. Names follow `event_audit_<noun>_<unit>[_total]`;
//! labels are bounded vocabularies (docs/internals.md, "How the invariants are held").

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};

pub use prometheus::Registry;

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

pub fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    reg(
        r,
        IntCounter::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    reg(
        r,
        IntGauge::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub fn float_gauge(r: &Registry, name: &str, help: &str) -> prometheus::Gauge {
    reg(
        r,
        prometheus::Gauge::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

pub fn histogram(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    reg(
        r,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
            .unwrap_or_else(|_| unreachable!()),
    )
}

pub fn counter_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    reg(
        r,
        IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|_| unreachable!()),
    )
}

pub fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    reg(
        r,
        IntGaugeVec::new(Opts::new(name, help), labels).unwrap_or_else(|_| unreachable!()),
    )
}

pub fn histogram_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    reg(
        r,
        HistogramVec::new(HistogramOpts::new(name, help), labels)
            .unwrap_or_else(|_| unreachable!()),
    )
}
