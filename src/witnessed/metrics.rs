//! Metrics of the witnessed log, written only by the daemon's checkpoint signer; and those of
//! the independent witness (`witness serve`), in its own registry.

use prometheus::{IntCounter, IntCounterVec, IntGauge};

use crate::telemetry::metrics::{counter, counter_vec, gauge, Registry};

/// Every reason the signer refuses to sign (the `reason` label's vocabulary).
pub(crate) const REFUSAL_REASONS: &[&str] = &[
    "smaller",
    "rewritten",
    "forked",
    "head_forged",
    "corrupt",
    "memory",
    "witness",
];

pub struct WitnessMetrics {
    /// Tree size of the last checkpoint this daemon published.
    pub size: IntGauge,
    /// Unix time of the last checkpoint this daemon published.
    pub(crate) time: IntGauge,
    pub failures: IntCounter,
    /// Signed checkpoints not yet published (waiting for the stream or the witnesses' quorum).
    pub backlog: IntGauge,
    /// 1 while the signer signs, 0 while it refuses (the reason in its ERROR line).
    pub signer_ok: IntGauge,
    pub refusals: IntCounterVec,
    /// 1 when the checkpoint stream's configuration keeps evidence, 0 when it does not.
    pub(crate) stream_ok: IntGauge,
    /// Stored checkpoints that do not open with the signing key (inserted by someone else).
    pub foreign: IntCounter,
    /// Submissions a witness of the policy did not cosign (the WARN line names the witness).
    pub witness_failures: IntCounter,
    /// Tree size of the checkpoint the tile directory serves (`--tiles-dir`).
    pub(crate) tiles_size: IntGauge,
    /// Rounds whose tiles could not be written (the WARN line says why; retried next round).
    pub(crate) tiles_failures: IntCounter,
    /// 1: the tiles' store refused the probe's second create (or is a directory); 0: it took
    /// it, and every create reads first (`object_store.conditional_writes = "read-first"`).
    pub(crate) tiles_store_probe: IntGauge,
    /// Published tiles the last repair pass found missing and could not write again.
    pub(crate) tiles_missing: IntGauge,
    /// Published tiles found missing and written again from the database.
    pub(crate) tiles_repaired: IntCounter,
    /// Published tiles holding other bytes than the log's tree (never overwritten).
    pub(crate) tiles_mismatched: IntGauge,
}

impl WitnessMetrics {
    /// The signer refuses to sign (`reason` from its vocabulary): counted and its state set at
    /// each round, the ERROR line written when the refusal is `new` (not the same as last round).
    pub(crate) fn signer_refuses(&self, reason: &str, text: &str, new: bool) {
        self.signer_ok.set(0);
        self.refusals.with_label_values(&[reason]).inc();
        if new {
            tracing::error!(reason, "checkpoint signer refuses: {text}");
        }
    }

    /// A stored checkpoint that does not open with the signing key: logged and counted in one
    /// call.
    pub(crate) fn foreign_checkpoint(&self, log: &str, size: i64) {
        self.foreign.inc();
        tracing::error!(log, tree_size = size, "a stored checkpoint does not open with the signing key, for this log's origin and size: ignored, never published (someone with the database's writer role inserted it)");
    }

    /// No signing key: the signer's and the stream's state are neither good nor bad (-1).
    pub(crate) fn checkpoints_off(&self) {
        self.signer_ok.set(-1);
        self.stream_ok.set(-1);
    }

    pub fn new(r: &Registry) -> WitnessMetrics {
        let refusals = counter_vec(
            r,
            "event_audit_checkpoint_refusals_total",
            "Signer rounds that signed nothing because the tree does not extend what the key signed (by reason)",
            &["reason"],
        );
        for reason in REFUSAL_REASONS {
            refusals.with_label_values(&[reason]);
        }
        let m = WitnessMetrics {
            size: gauge(
                r,
                "event_audit_checkpoint_size_rows",
                "Tree size (rows) of the last checkpoint published to the witness",
            ),
            time: gauge(
                r,
                "event_audit_checkpoint_timestamp_seconds",
                "Unix time the last checkpoint was published to the witness",
            ),
            failures: counter(
                r,
                "event_audit_checkpoint_publish_failures_total",
                "Checkpoint rounds that could not publish to the witness (retried)",
            ),
            backlog: gauge(
                r,
                "event_audit_checkpoint_backlog_checkpoints",
                "Signed checkpoints waiting to be published (stream, directory, witnesses' quorum)",
            ),
            signer_ok: gauge(
                r,
                "event_audit_checkpoint_signer_ok",
                "1 while the checkpoint signer signs, 0 while it refuses (see its ERROR line), -1 when checkpoints are off (no signing key)",
            ),
            refusals,
            stream_ok: gauge(
                r,
                "event_audit_checkpoint_stream_ok",
                "1 when the checkpoint stream denies delete and purge and evicts nothing, else 0; -1 when checkpoints are off (no signing key)",
            ),
            foreign: counter(
                r,
                "event_audit_checkpoint_foreign_notes_total",
                "Stored checkpoints that do not open with the signing key (ignored, never published)",
            ),
            witness_failures: counter(
                r,
                "event_audit_checkpoint_witness_failures_total",
                "Checkpoint submissions a witness of the policy did not cosign",
            ),
            tiles_size: gauge(
                r,
                "event_audit_tiles_size_rows",
                "Tree size (rows) of the checkpoint the tile directory serves (C2SP tlog-tiles)",
            ),
            tiles_failures: counter(
                r,
                "event_audit_tiles_write_failures_total",
                "Signer rounds whose tiles could not be written to the tile directory (retried)",
            ),
            tiles_store_probe: gauge(
                r,
                "event_audit_tiles_store_conditional_writes",
                "1 when the tiles' store refused the start-up probe's second create (If-None-Match: *), 0 when it took it and every create reads first (read-first)",
            ),
            tiles_missing: gauge(
                r,
                "event_audit_tiles_missing",
                "Published full tiles and bundles the repair pass found missing from the store and could not write again",
            ),
            tiles_repaired: counter(
                r,
                "event_audit_tiles_repaired_total",
                "Published full tiles and bundles found missing from the store and written again from the database",
            ),
            tiles_mismatched: gauge(
                r,
                "event_audit_tiles_mismatched",
                "Published tiles the last repair pass found holding other bytes than the log's tree (named in ERROR lines, never overwritten)",
            ),
        };
        m.signer_ok.set(1);
        m.tiles_store_probe.set(1);
        m.stream_ok.set(1);
        m
    }
}
