//! The source: on the bus's connection (`crate::bus`), the stream and durable pull consumer
//! (created when missing, or only bound; recreated after a deletion), consumer state for
//! readiness and metrics, each message's bus metadata, and messages fetched by their stream
//! sequence.

mod leaders;
mod stored;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy};
use async_nats::jetstream::context::ConsumerInfoErrorKind;
use async_nats::jetstream::{self, consumer::pull, stream};
use chrono::DateTime;

pub(crate) use crate::bus::{is_not_found, Bus, BusError};
use crate::bus::{js_err, API_TIMEOUT};
use crate::config::{IngestSettings, StreamSettings};
use crate::row::record::Meta;
pub(crate) use leaders::Leaders;

/// The durable pull consumer type.
pub(crate) type PullConsumer = jetstream::consumer::Consumer<pull::Config>;

/// Where to consume from.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub(crate) stream: String,
    pub(crate) subjects: Vec<String>,
    pub(crate) consumer: String,
    pub(crate) bind_only: bool,
    /// How long JetStream waits for an ack before redelivering.
    pub(crate) ack_wait: Duration,
    /// Unacked messages the server lets this consumer have at once (bounds memory).
    pub(crate) max_ack_pending: i64,
    /// Replicas of the stream when it is created.
    pub(crate) replicas: usize,
    /// The first sequence the log records (`stream.start_seq`).
    pub(crate) start_seq: u64,
}

impl Binding {
    /// The consumer the daemon binds, from its settings.
    pub(crate) fn new(stream: &StreamSettings, ingest: &IngestSettings) -> Binding {
        Binding {
            stream: stream.name.clone(),
            subjects: stream.subjects.clone(),
            consumer: stream.consumer.clone(),
            bind_only: stream.bind_only,
            ack_wait: stream.ack_wait.get(),
            max_ack_pending: ingest.max_ack_pending(),
            replicas: stream.replicas,
            start_seq: stream.start_seq.max(1),
        }
    }

    fn consumer_config(&self, start: u64) -> pull::Config {
        let start = start.max(self.start_seq);
        pull::Config {
            durable_name: Some(self.consumer.clone()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: self.ack_wait,
            max_ack_pending: self.max_ack_pending,
            deliver_policy: if start > 1 {
                DeliverPolicy::ByStartSequence {
                    start_sequence: start,
                }
            } else {
                DeliverPolicy::All
            },
            ..Default::default()
        }
    }
}

/// The bus as ingest uses it: its stream and durable consumer.
impl Bus {
    /// Binds to (or creates) the stream and the durable pull consumer.
    pub(crate) async fn bind(&self, b: &Binding) -> Result<PullConsumer, BusError> {
        let stream = self.ensure_stream(b).await?;
        stream
            .get_or_create_consumer(&b.consumer, b.consumer_config(1))
            .await
            .map_err(|e| js_err("bind consumer", &b.consumer, e))
    }

    /// Creates the durable consumer again after a deletion, delivering from `start`.
    pub(crate) async fn recreate(&self, b: &Binding, start: u64) -> Result<PullConsumer, BusError> {
        let stream = match self.js.get_stream(&b.stream).await {
            Ok(s) => s,
            Err(e) if is_not_found(&e.kind()) => {
                return Err(BusError::StreamDeleted {
                    stream: b.stream.clone(),
                })
            }
            Err(e) => return Err(js_err("get stream", &b.stream, e)),
        };
        stream
            .get_or_create_consumer(&b.consumer, b.consumer_config(start))
            .await
            .map_err(|e| js_err("recreate consumer", &b.consumer, e))
    }

    /// The stream, created when missing unless `bind_only`.
    pub(crate) async fn ensure_stream(&self, b: &Binding) -> Result<stream::Stream, BusError> {
        Ok(match self.js.get_stream(&b.stream).await {
            Ok(s) => s,
            Err(e) if is_not_found(&e.kind()) => {
                if b.bind_only {
                    return Err(BusError::StreamMissing {
                        stream: b.stream.clone(),
                    });
                }
                self.js
                    .get_or_create_stream(stream::Config {
                        name: b.stream.clone(),
                        subjects: b.subjects.clone(),
                        storage: stream::StorageType::File,
                        num_replicas: b.replicas.max(1),
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| js_err("create stream", &b.stream, e))?
            }
            Err(e) => return Err(js_err("get stream", &b.stream, e)),
        })
    }
}

/// Pending and ack-pending counts of a consumer, for metrics and readiness.
pub(crate) async fn consumer_state(consumer: &PullConsumer) -> Option<(u64, usize)> {
    consumer
        .get_info()
        .await
        .ok()
        .map(|i| (i.num_pending, i.num_ack_pending))
}

/// What the server says about the durable consumer.
pub(crate) enum ConsumerCheck {
    Present(Box<jetstream::consumer::Info>),
    Deleted,
    StreamDeleted,
    /// No answer (connectivity): nothing can be concluded.
    Unknown(String),
}

/// Asks the server whether the consumer (and its stream) still exist.
pub(crate) async fn check_consumer(consumer: &PullConsumer) -> ConsumerCheck {
    match tokio::time::timeout(API_TIMEOUT, consumer.get_info()).await {
        Ok(Ok(info)) => ConsumerCheck::Present(Box::new(info)),
        Ok(Err(e)) if e.kind() == ConsumerInfoErrorKind::NotFound => ConsumerCheck::Deleted,
        Ok(Err(e)) if e.kind() == ConsumerInfoErrorKind::StreamNotFound => {
            ConsumerCheck::StreamDeleted
        }
        Ok(Err(e)) => ConsumerCheck::Unknown(e.to_string()),
        Err(_) => ConsumerCheck::Unknown("no answer in time".into()),
    }
}

/// A message's bus metadata (`None` for a message without JetStream metadata).
pub(crate) fn meta_of(msg: &async_nats::jetstream::Message) -> Option<Meta> {
    let info = msg.info().ok()?;
    let published_at = DateTime::from_timestamp_micros(info.published.timestamp_micros())?;
    let headers = msg.headers.as_ref().map(headers_of).unwrap_or_default();
    Some(Meta {
        stream: Arc::from(info.stream),
        stream_seq: info.stream_sequence,
        published_at,
        subject: msg.subject.to_string(),
        delivery_count: info.delivered,
        headers,
    })
}

/// A message's headers as the row keeps them: every value of every name, in the map's order.
pub(crate) fn headers_of(h: &async_nats::HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| (k.to_string(), v.to_string())))
        .collect()
}
