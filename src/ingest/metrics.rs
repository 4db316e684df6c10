//! Metrics of ingest, written only by the ingest pipeline (and its consumer poller): messages
//! by event and status, bytes, batches, latencies, lag, id findings, retries, unknown fields,
//! error codes, catalogue coverage and the consumer's backlog. Hot-path handles are cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge};

use crate::decode::catalogue::rt::ErrorCode;
use crate::decode::catalogue::{self, EVENTS};
use crate::decode::verdict::Status;
use crate::telemetry::metrics::{counter, counter_vec, gauge, histogram, Registry};

pub(crate) struct IngestMetrics {
    messages: IntCounterVec,
    /// Cached `messages{event, status}` for every catalogue event: [decoded, invalid].
    known: Vec<[IntCounter; 2]>,
    other: Mutex<HashMap<(String, Status), IntCounter>>,
    pub(crate) bytes: IntCounter,
    pub(crate) batches: IntCounter,
    pub(crate) batch_size: Histogram,
    pub(crate) decode_seconds: Histogram,
    pub(crate) write_seconds: Histogram,
    pub(crate) lag_seconds: Histogram,
    pub(crate) duplicates: IntCounter,
    pub(crate) conflicts: IntCounter,
    pub(crate) redeliveries: IntCounter,
    pub(crate) write_retries: IntCounter,
    /// Rows appended to the audit log by this process.
    pub(crate) rows: IntCounter,
    unknown_fields: IntCounterVec,
    /// Undeclared field paths new to the log (never observed before), by event.
    new_fields: IntCounterVec,
    /// Field errors by code (the reasons behind `invalid` and `malformed`); cached per code.
    errors_by_code: Vec<(ErrorCode, IntCounter)>,
    /// Catalogue coverage: which event versions this process has seen at least once.
    seen: Vec<AtomicBool>,
    catalogue_seen: IntGauge,
    catalogue_unseen: IntGauge,
    pub(crate) consumer_pending: IntGauge,
    pub(crate) consumer_ack_pending: IntGauge,
}

/// Every error code, for the cached per-code counters.
const CODES: [ErrorCode; 11] = [
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
    ErrorCode::InvalidHeaders,
];

impl IngestMetrics {
    pub(crate) fn new(r: &Registry) -> IngestMetrics {
        let (messages, known) = messages_by_event(r);
        let (catalogue_seen, catalogue_unseen) = catalogue_coverage(r);
        let (new_fields, unknown_fields) = field_drift(r);
        let [batch_size, decode_seconds, write_seconds, lag_seconds] = batch_histograms(r);
        let [duplicates, conflicts, redeliveries] = repeats(r);
        IngestMetrics {
            new_fields,
            errors_by_code: errors_by_code(r),
            seen: EVENTS.iter().map(|_| AtomicBool::new(false)).collect(),
            catalogue_seen,
            catalogue_unseen,
            known,
            other: Mutex::new(HashMap::new()),
            bytes: counter(
                r,
                "event_audit_ingest_bytes_total",
                "Message bytes recorded",
            ),
            batches: counter(r, "event_audit_ingest_batches_total", "Batches committed"),
            batch_size,
            decode_seconds,
            write_seconds,
            lag_seconds,
            duplicates,
            conflicts,
            redeliveries,
            write_retries: counter(
                r,
                "event_audit_db_write_retries_total",
                "Batch writes retried after a transient database error",
            ),
            rows: counter(
                r,
                "event_audit_audit_rows_total",
                "Rows appended to the audit log by this process",
            ),
            unknown_fields,
            consumer_pending: gauge(
                r,
                "event_audit_consumer_pending_messages",
                "Messages in the stream not yet delivered to the consumer",
            ),
            consumer_ack_pending: gauge(
                r,
                "event_audit_consumer_ack_pending_messages",
                "Messages delivered and not yet acked",
            ),
            messages,
        }
    }

    /// Counts the error codes of one recorded message.
    pub(crate) fn errors(&self, codes: &[ErrorCode]) {
        for code in codes {
            if let Some((_, c)) = self.errors_by_code.iter().find(|(k, _)| k == code) {
                c.inc();
            }
        }
    }

    /// Counts undeclared field paths new to the log, per event (a catalogue name, else
    /// `other`: the label stays bounded).
    pub(crate) fn new_fields(&self, per_event: &[(String, u64)]) {
        for (event, n) in per_event {
            let label = catalogue::find_event(event).map_or("other", |e| e.name);
            self.new_fields.with_label_values(&[label]).inc_by(*n);
        }
    }

    /// Counts one recorded message. `name` (the event's name, as the message gave it) is made
    /// only for a message without a catalogue entry's decoded or invalid counter.
    pub(crate) fn message(
        &self,
        idx: Option<u16>,
        status: Status,
        name: impl FnOnce() -> Option<String>,
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
                    Status::UnknownVersion => name()
                        .as_deref()
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
}

/// `messages{event, status}`, with the cached counters of every catalogue event: [decoded,
/// invalid].
fn messages_by_event(r: &Registry) -> (IntCounterVec, Vec<[IntCounter; 2]>) {
    let messages = counter_vec(
        r,
        "event_audit_ingest_messages_total",
        "Messages recorded, by event and status",
        &["event", "status"],
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
    (messages, known)
}

/// `errors{code}`, one cached counter per error code.
fn errors_by_code(r: &Registry) -> Vec<(ErrorCode, IntCounter)> {
    let errors = counter_vec(
        r,
        "event_audit_ingest_errors_total",
        "Field and envelope errors found in recorded messages, by code",
        &["code"],
    );
    CODES
        .iter()
        .map(|c| (*c, errors.with_label_values(&[c.as_str()])))
        .collect()
}

/// Catalogue coverage: the event versions the catalogue knows (set once), and the gauges of
/// those seen and not yet seen (seen, unseen).
fn catalogue_coverage(r: &Registry) -> (IntGauge, IntGauge) {
    gauge(
        r,
        "event_audit_catalogue_event_versions",
        "Event versions the catalogue knows",
    )
    .set(EVENTS.len() as i64);
    let catalogue_unseen = gauge(
        r,
        "event_audit_catalogue_unseen_event_versions",
        "Catalogue event versions this process has not seen yet",
    );
    catalogue_unseen.set(EVENTS.len() as i64);
    let catalogue_seen = gauge(
        r,
        "event_audit_catalogue_seen_event_versions",
        "Catalogue event versions this process has seen at least once",
    );
    (catalogue_seen, catalogue_unseen)
}

/// Fields outside the catalogue, by event: those new to the log, and every unknown one (new,
/// unknown). Every catalogue event starts at 0, so that the first is an increase a rule can
/// see.
fn field_drift(r: &Registry) -> (IntCounterVec, IntCounterVec) {
    let new_fields = counter_vec(
        r,
        "event_audit_drift_new_fields_total",
        "Undeclared field paths seen for the first time in the log, by event",
        &["event"],
    );
    let unknown_fields = counter_vec(
        r,
        "event_audit_unknown_fields_total",
        "Fields not in the catalogue, by event",
        &["event"],
    );
    for e in EVENTS.iter() {
        new_fields.with_label_values(&[e.name]);
        unknown_fields.with_label_values(&[e.name]);
    }
    (new_fields, unknown_fields)
}

/// The batches' histograms: [messages per batch, decode time, write time, lag to commit].
fn batch_histograms(r: &Registry) -> [Histogram; 4] {
    let latency = prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap_or_default();
    let lag = prometheus::exponential_buckets(0.005, 2.0, 20).unwrap_or_default();
    let sizes = prometheus::exponential_buckets(1.0, 2.0, 14).unwrap_or_default();
    [
        histogram(
            r,
            "event_audit_ingest_batch_messages",
            "Messages per committed batch",
            sizes,
        ),
        histogram(
            r,
            "event_audit_decode_duration_seconds",
            "Time to decode one batch",
            latency.clone(),
        ),
        histogram(
            r,
            "event_audit_db_write_duration_seconds",
            "Time to write and commit one batch",
            latency,
        ),
        histogram(
            r,
            "event_audit_ingest_lag_seconds",
            "Envelope time (or bus time) to commit",
            lag,
        ),
    ]
}

/// Messages the log had seen before: [same envelope id and payload (duplicates), same id with
/// another payload (conflicts), redelivered (already in the log)].
fn repeats(r: &Registry) -> [IntCounter; 3] {
    [
        counter(
            r,
            "event_audit_ingest_duplicates_total",
            "Messages whose envelope id was seen with the same payload",
        ),
        counter(
            r,
            "event_audit_ingest_conflicts_total",
            "Messages whose envelope id was seen with a different payload",
        ),
        counter(
            r,
            "event_audit_ingest_redeliveries_total",
            "Redelivered messages already in the log (acked, nothing added)",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_made_only_for_a_message_outside_the_catalogues_counters() {
        let m = IngestMetrics::new(&Registry::new());
        m.message(
            Some(0),
            Status::Decoded,
            || panic!("a catalogue event's counter needs no name"),
            0,
        );
        m.message(
            None,
            Status::UnknownVersion,
            || Some("account.created-v9".into()),
            0,
        );
        m.message(None, Status::UnknownType, || None, 0);
        assert_eq!(m.known[0][0].get(), 1);
        let unknown = |label: &str, status: Status| {
            m.messages
                .with_label_values(&[label, status.as_str()])
                .get()
        };
        assert_eq!(unknown("account.created-?", Status::UnknownVersion), 1);
        assert_eq!(unknown("other", Status::UnknownType), 1);
    }
}
