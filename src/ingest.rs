//! Ingest, the hot path: [`source`] (NATS connection, stream and durable consumer, message
//! metadata) → [`pipeline`] (batching, decoding, writers, retries, ack after commit) →
//! `writer` (write, retry, ack after the commit) → [`sink`] (one transaction per batch: COPY,
//! envelope ids, chain link); [`unparsed`] finds and
//! records the messages the bus client cannot parse; [`recover`] records what the bus still
//! holds and the log lacks (at start-up, when the consumer is bound, and on demand).

pub(crate) mod metrics;
mod outcome;
mod pipeline;
pub(crate) mod recover;
pub(crate) mod sink;
pub(crate) mod source;
mod unparsed;
mod writer;

#[allow(unreachable_pub)]
// public through `test_support` (the lint misses re-exports of re-exports)
pub use outcome::{IngestError, Totals};
pub(crate) use pipeline::Ingest;
