//! The daemon's metrics: one registry built from every room's own metrics (each beside what
//! emits it), plus the build and process facts and the instance's name registered here.

use std::sync::Arc;

use crate::erase::metrics::ErasureMetrics;
use crate::index::metrics::IndexMetrics;
use crate::ingest::metrics::IngestMetrics;
use crate::ingest::recover::metrics::RecoverMetrics;
use crate::reconcile::metrics::ReconcileMetrics;
use crate::reconcile::rest::metrics::RestMetrics;
use crate::restore::metrics::RestoreMetrics;
use crate::retention::metrics::RetentionMetrics;
use crate::telemetry::metrics::{gauge, gauge_vec, render, Registry};
use crate::verify::metrics::ChainMetrics;
use crate::witnessed::metrics::WitnessMetrics;

/// The daemon's metrics: every area in one registry.
pub struct Metrics {
    pub(crate) registry: Registry,
    pub(crate) ingest: Arc<IngestMetrics>,
    pub(crate) recover: Arc<RecoverMetrics>,
    pub(crate) chain: ChainMetrics,
    pub rest: RestMetrics,
    pub(crate) reconcile: ReconcileMetrics,
    pub(crate) witness: Arc<WitnessMetrics>,
    pub(crate) retention: Arc<RetentionMetrics>,
    pub(crate) restore: RestoreMetrics,
    pub(crate) erasure: ErasureMetrics,
    pub(crate) index: Arc<IndexMetrics>,
    /// `event_audit_connection_tls{peer}`: 1 when the connection to a peer is encrypted.
    connection_tls: prometheus::IntGaugeVec,
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
            ingest: Arc::new(IngestMetrics::new(&registry)),
            recover: Arc::new(RecoverMetrics::new(&registry)),
            chain: ChainMetrics::new(&registry),
            rest: RestMetrics::new(&registry),
            reconcile: ReconcileMetrics::new(&registry),
            witness: Arc::new(WitnessMetrics::new(&registry)),
            retention: Arc::new(RetentionMetrics::new(&registry)),
            restore: RestoreMetrics::new(&registry),
            erasure: ErasureMetrics::new(&registry),
            index: Arc::new(IndexMetrics::new(&registry)),
            connection_tls: gauge_vec(
                &registry,
                "event_audit_connection_tls",
                "1 when the connection to the peer (database, nats, rest, object_store) is encrypted with TLS, 0 when it is in clear",
                &["peer"],
            ),
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

    /// Whether the connection to `peer` (`database`, `nats`, `rest`, `object_store`) is
    /// encrypted.
    pub(crate) fn set_connection_tls(&self, peer: &str, encrypted: bool) {
        self.connection_tls
            .with_label_values(&[peer])
            .set(i64::from(encrypted));
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
