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
pub mod sink;
pub(crate) mod source;
mod unparsed;
mod writer;

pub use outcome::{IngestError, Totals};
pub use pipeline::Ingest;
