//! Prometheus metrics, named `event_audit_<noun>_<unit>[_total]`, labels bounded: the event
//! label is a catalogue name, `<type>-?` for an unknown version of a known type, `other` for
//! unknown types and `none` when there is no name. Hot-path handles are cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

use crate::catalogue::rt::ErrorCode;
use crate::catalogue::{self, EVENTS};
use crate::verdict::Status;

pub struct Metrics {
    pub registry: Registry,
    messages: IntCounterVec,
    /// Cached `messages{event, status}` for every catalogue event: [decoded, invalid].
    known: Vec<[IntCounter; 2]>,
    other: Mutex<HashMap<(String, Status), IntCounter>>,
    pub bytes: IntCounter,
    pub batches: IntCounter,
    pub batch_size: Histogram,
    pub decode_seconds: Histogram,
    pub write_seconds: Histogram,
    pub lag_seconds: Histogram,
    pub duplicates: IntCounter,
    pub conflicts: IntCounter,
    pub redeliveries: IntCounter,
    pub write_retries: IntCounter,
    unknown_fields: IntCounterVec,
    pub consumer_pending: IntGauge,
    pub consumer_ack_pending: IntGauge,
    pub up: IntGaugeVec,
    pub chain_head: IntGauge,
    pub rows: IntCounter,
    pub verify_ok: IntGauge,
    pub verify_time: IntGauge,
    pub rest_requests: IntCounterVec,
    pub rest_seconds: HistogramVec,
    pub rest_retries: IntCounter,
    /// Accounts per verdict of the latest run, by supplier.
    pub reconcile_accounts: IntGaugeVec,
    /// Unix time of the latest completed run, by supplier.
    pub reconcile_last_run: IntGaugeVec,
    /// Runs by supplier and outcome (`ok`, `mismatches`, `incomplete`).
    pub reconcile_runs: IntCounterVec,
    /// Field errors by code (the reasons behind `invalid` and `malformed`); cached per code.
    errors_by_code: Vec<(ErrorCode, IntCounter)>,
    /// Catalogue coverage: which event versions this process has seen at least once.
    seen: Vec<AtomicBool>,
    pub catalogue_seen: IntGauge,
    pub catalogue_unseen: IntGauge,
}

/// Every error code, for the cached per-code counters.
const CODES: [ErrorCode; 10] = [
    ErrorCode::MissingField,
    ErrorCode::NullValue,
    ErrorCode::InvalidType,
    ErrorCode::OutOfRange,
    ErrorCode::DuplicateField,
    ErrorCode::NotJson,
    ErrorCode::NotAnObject,
    ErrorCode::NoEventName,
    ErrorCode::NoPayload,
    ErrorCode::InvalidEnvelope,
];

fn reg<T: prometheus::core::Collector + Clone + 'static>(r: &Registry, c: T) -> T {
    // Names are fixed and distinct: registration cannot fail.
    let _ = r.register(Box::new(c.clone()));
    c
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    reg(
        r,
        IntCounter::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    reg(
        r,
        IntGauge::new(name, help).unwrap_or_else(|_| unreachable!()),
    )
}

fn histogram(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    reg(
        r,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
            .unwrap_or_else(|_| unreachable!()),
    )
}

impl Metrics {
    pub fn new() -> Metrics {
        let r = Registry::new();
        let messages = reg(
            &r,
            IntCounterVec::new(
                Opts::new(
                    "event_audit_ingest_messages_total",
                    "Messages recorded, by event and status",
                ),
                &["event", "status"],
            )
            .unwrap_or_else(|_| unreachable!()),
        );
        let known = EVENTS
            .iter()
            .map(|e| {
                [
                    messages.with_label_values(&[e.name, Status::Decoded.as_str()]),
                    messages.with_label_values(&[e.name, Status::Invalid.as_str()]),
                ]
            })
            .collect();
        let errors = reg(
            &r,
            IntCounterVec::new(
                Opts::new(
                    "event_audit_ingest_errors_total",
                    "Field and envelope errors found in recorded messages, by code",
                ),
                &["code"],
            )
            .unwrap_or_else(|_| unreachable!()),
        );
        let errors_by_code = CODES
            .iter()
            .map(|c| (*c, errors.with_label_values(&[c.as_str()])))
            .collect();
        let versions = gauge(
            &r,
            "event_audit_catalogue_event_versions",
            "Event versions the catalogue knows",
        );
        versions.set(EVENTS.len() as i64);
        let catalogue_unseen = gauge(
            &r,
            "event_audit_catalogue_unseen_event_versions",
            "Catalogue event versions this process has not seen yet",
        );
        catalogue_unseen.set(EVENTS.len() as i64);
        let build = reg(
            &r,
            IntGaugeVec::new(
                Opts::new(
                    "event_audit_build_info",
                    "Version and git commit of this build (always 1)",
                ),
                &["version", "git_hash"],
            )
            .unwrap_or_else(|_| unreachable!()),
        );
        build
            .with_label_values(&[env!("CARGO_PKG_VERSION"), env!("EVENT_AUDIT_GIT_HASH")])
            .set(1);
        let start = gauge(
            &r,
            "event_audit_process_start_time_seconds",
            "Unix time the process started",
        );
        start.set(chrono::Utc::now().timestamp());
        let latency = prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap_or_default();
        let lag = prometheus::exponential_buckets(0.005, 2.0, 20).unwrap_or_default();
        let sizes = prometheus::exponential_buckets(1.0, 2.0, 14).unwrap_or_default();
        Metrics {
            errors_by_code,
            seen: EVENTS.iter().map(|_| AtomicBool::new(false)).collect(),
            catalogue_seen: gauge(
                &r,
                "event_audit_catalogue_seen_event_versions",
                "Catalogue event versions this process has seen at least once",
            ),
            catalogue_unseen,
            known,
            other: Mutex::new(HashMap::new()),
            bytes: counter(
                &r,
                "event_audit_ingest_bytes_total",
                "Message bytes recorded",
            ),
            batches: counter(&r, "event_audit_ingest_batches_total", "Batches committed"),
            batch_size: histogram(
                &r,
                "event_audit_ingest_batch_messages",
                "Messages per committed batch",
                sizes,
            ),
            decode_seconds: histogram(
                &r,
                "event_audit_decode_duration_seconds",
                "Time to decode one batch",
                latency.clone(),
            ),
            write_seconds: histogram(
                &r,
                "event_audit_db_write_duration_seconds",
                "Time to write and commit one batch",
                latency,
            ),
            lag_seconds: histogram(
                &r,
                "event_audit_ingest_lag_seconds",
                "Envelope time (or bus time) to commit",
                lag,
            ),
            duplicates: counter(
                &r,
                "event_audit_ingest_duplicates_total",
                "Messages whose envelope id was seen with the same payload",
            ),
            conflicts: counter(
                &r,
                "event_audit_ingest_conflicts_total",
                "Messages whose envelope id was seen with a different payload",
            ),
            redeliveries: counter(
                &r,
                "event_audit_ingest_redeliveries_total",
                "Redelivered messages already in the log (acked, nothing added)",
            ),
            write_retries: counter(
                &r,
                "event_audit_db_write_retries_total",
                "Batch writes retried after a transient database error",
            ),
            unknown_fields: reg(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "event_audit_unknown_fields_total",
                        "Fields not in the catalogue, by event",
                    ),
                    &["event"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            consumer_pending: gauge(
                &r,
                "event_audit_consumer_pending_messages",
                "Messages in the stream not yet delivered to the consumer",
            ),
            consumer_ack_pending: gauge(
                &r,
                "event_audit_consumer_ack_pending_messages",
                "Messages delivered and not yet acked",
            ),
            up: reg(
                &r,
                IntGaugeVec::new(
                    Opts::new(
                        "event_audit_connection_up",
                        "1 when the connection to the component works",
                    ),
                    &["component"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            chain_head: gauge(
                &r,
                "event_audit_chain_head_link",
                "Sequence number of the latest hash-chain link",
            ),
            rows: counter(
                &r,
                "event_audit_audit_rows_total",
                "Rows appended to the audit log by this process",
            ),
            verify_ok: gauge(
                &r,
                "event_audit_verify_ok",
                "1 when the last chain verification passed, 0 when it failed, -1 never run",
            ),
            verify_time: gauge(
                &r,
                "event_audit_verify_timestamp_seconds",
                "Unix time of the last chain verification",
            ),
            rest_requests: reg(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "event_audit_rest_requests_total",
                        "REST requests by endpoint and status class",
                    ),
                    &["endpoint", "class"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            rest_seconds: reg(
                &r,
                HistogramVec::new(
                    HistogramOpts::new(
                        "event_audit_rest_request_duration_seconds",
                        "REST request latency by endpoint",
                    ),
                    &["endpoint"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            rest_retries: counter(
                &r,
                "event_audit_rest_retries_total",
                "REST requests retried",
            ),
            reconcile_accounts: reg(
                &r,
                IntGaugeVec::new(
                    Opts::new(
                        "event_audit_reconcile_accounts",
                        "Accounts per verdict in the latest reconciliation run, by supplier",
                    ),
                    &["supplier", "verdict"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            reconcile_last_run: reg(
                &r,
                IntGaugeVec::new(
                    Opts::new(
                        "event_audit_reconcile_last_run_timestamp_seconds",
                        "Unix time of the latest completed reconciliation run, by supplier",
                    ),
                    &["supplier"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            reconcile_runs: reg(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "event_audit_reconcile_runs_total",
                        "Reconciliation runs by supplier and outcome (ok, mismatches, incomplete)",
                    ),
                    &["supplier", "outcome"],
                )
                .unwrap_or_else(|_| unreachable!()),
            ),
            messages,
            registry: r,
        }
    }

    /// Counts the error codes of one recorded message.
    pub fn errors(&self, codes: &[ErrorCode]) {
        for code in codes {
            if let Some((_, c)) = self.errors_by_code.iter().find(|(k, _)| k == code) {
                c.inc();
            }
        }
    }

    /// Counts one recorded message.
    pub fn message(
        &self,
        idx: Option<u16>,
        status: Status,
        name: Option<&str>,
        unknown_fields: usize,
    ) {
        if let Some(i) = idx {
            if let Some(flag) = self.seen.get(usize::from(i)) {
                if !flag.swap(true, Ordering::Relaxed) {
                    self.catalogue_seen.inc();
                    self.catalogue_unseen.dec();
                }
            }
        }
        match (idx, status) {
            (Some(i), Status::Decoded) => self.known[usize::from(i)][0].inc(),
            (Some(i), Status::Invalid) => self.known[usize::from(i)][1].inc(),
            _ => {
                let label = match status {
                    Status::UnknownVersion => name
                        .and_then(catalogue::split_name)
                        .map_or_else(|| "other".to_owned(), |(t, _)| format!("{t}-?")),
                    Status::UnknownType => "other".to_owned(),
                    _ => "none".to_owned(),
                };
                let mut other = self.other.lock().unwrap_or_else(|p| p.into_inner());
                other
                    .entry((label.clone(), status))
                    .or_insert_with(|| self.messages.with_label_values(&[&label, status.as_str()]))
                    .inc();
            }
        }
        if unknown_fields > 0 {
            if let Some(i) = idx {
                self.unknown_fields
                    .with_label_values(&[EVENTS[usize::from(i)].name])
                    .inc_by(unknown_fields as u64);
            }
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut buf = String::new();
        let enc = prometheus::TextEncoder::new();
        let _ = enc.encode_utf8(&self.registry.gather(), &mut buf);
        buf
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
