//! The columns of `audit.events`, written once: the writer's COPY, `verify`'s SELECT and the
//! typed row it reads all follow this list (the migration is the only other place).

/// A column's PostgreSQL type, as far as reading and writing it differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Text,
    Int4,
    Int8,
    Timestamptz,
    Jsonb,
    Bytea,
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub ty: Ty,
}

const fn col(name: &'static str, ty: Ty) -> Column {
    Column { name, ty }
}

/// Whether a row of `audit.events` (aliased `e`) claims its envelope id: it has an id, an event
/// name and a payload text (stored as jsonb, or refused with a reason), which is when its record
/// had an `id_digest`. Ingest's lookup of an id's first occurrence and `verify`'s recomputed
/// findings both select with it.
pub const CLAIMS_ITS_ID: &str = "(e.event_id IS NOT NULL AND e.event_type IS NOT NULL \
     AND (e.payload IS NOT NULL OR e.payload_error IS NOT NULL))";

/// `audit.events`, in COPY order.
pub const EVENTS: &[Column] = &[
    col("stream", Ty::Text),
    col("stream_seq", Ty::Int8),
    col("published_at", Ty::Timestamptz),
    col("received_at", Ty::Timestamptz),
    col("subject", Ty::Text),
    col("delivery_count", Ty::Int4),
    col("headers", Ty::Jsonb),
    col("envelope", Ty::Text),
    col("event_id", Ty::Text),
    col("event_type", Ty::Text),
    col("event_version", Ty::Text),
    col("status", Ty::Text),
    col("errors", Ty::Jsonb),
    col("unknown_fields", Ty::Jsonb),
    col("payload", Ty::Jsonb),
    col("account_number", Ty::Text),
    col("occurred_at", Ty::Timestamptz),
    col("payload_error", Ty::Text),
    col("catalogue", Ty::Text),
    col("raw", Ty::Bytea),
    col("batch_id", Ty::Int8),
    col("row_hash", Ty::Bytea),
];

/// `stream, stream_seq, ...` for `COPY audit.events (...)`.
pub fn copy_list() -> String {
    EVENTS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}

/// The SELECT list reading every column by name, jsonb as its text.
pub fn select_list(alias: &str) -> String {
    EVENTS
        .iter()
        .map(|c| match c.ty {
            Ty::Jsonb => format!("{alias}.{0}::text AS {0}", c.name),
            _ => format!("{alias}.{}", c.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number of columns, as a COPY tuple header states it.
pub fn count() -> i16 {
    i16::try_from(EVENTS.len()).unwrap_or(i16::MAX)
}
