//! The source: NATS JetStream connection (authenticated and TLS as configured, credentials never
//! passed on in a URL), stream and durable pull consumer (created when missing, or only bound;
//! recreated after a deletion), consumer state for readiness and metrics, each message's bus
//! metadata, and messages fetched by their stream sequence.

mod auth;
mod stored;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy};
use async_nats::jetstream::context::ConsumerInfoErrorKind;
use async_nats::jetstream::{self, consumer::pull, stream};
use chrono::DateTime;

use crate::audit::record::Meta;
use crate::config::secrets;
use crate::config::{redact_nats_url, IngestSettings, NatsSettings, StreamSettings};
pub use stored::Stored;

/// The durable pull consumer type.
pub type PullConsumer = jetstream::consumer::Consumer<pull::Config>;

/// How long a JetStream API call made by the daemon itself may take.
pub(crate) const API_TIMEOUT: Duration = Duration::from_secs(5);

/// Errors at the bus boundary.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("cannot connect to NATS at {url}: {source}; check that nats-server listens there, and the credentials and TLS settings")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("NATS at {url} did not answer within {after:?}; check that nats-server listens there")]
    ConnectTimeout { url: String, after: Duration },
    #[error("NATS credentials: {0}")]
    Credentials(String),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error("stream `{stream}` does not exist and --bind-only forbids creating it")]
    StreamMissing { stream: String },
    #[error("durable consumer `{consumer}` of stream `{stream}` was deleted and --bind-only forbids recreating it; recreate it (or run without --bind-only) and restart")]
    ConsumerDeleted { stream: String, consumer: String },
    #[error(
        "stream `{stream}` was deleted under the daemon; nothing more can be consumed from it"
    )]
    StreamDeleted { stream: String },
    #[error("JetStream {action} `{name}`: {message}")]
    JetStream {
        action: &'static str,
        name: String,
        message: String,
    },
}

/// Where to consume from.
#[derive(Debug, Clone)]
pub struct Binding {
    pub stream: String,
    pub subjects: Vec<String>,
    pub consumer: String,
    pub bind_only: bool,
    /// How long JetStream waits for an ack before redelivering.
    pub ack_wait: Duration,
    /// Unacked messages the server lets this consumer have at once (bounds memory).
    pub max_ack_pending: i64,
}

impl Binding {
    /// The consumer the daemon binds, from its settings.
    pub fn new(stream: &StreamSettings, ingest: &IngestSettings) -> Binding {
        Binding {
            stream: stream.name.clone(),
            subjects: stream.subjects.clone(),
            consumer: stream.consumer.clone(),
            bind_only: stream.bind_only,
            ack_wait: stream.ack_wait.get(),
            max_ack_pending: ingest.max_ack_pending(),
        }
    }

    fn consumer_config(&self, start: u64) -> pull::Config {
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

#[derive(Clone)]
pub struct Bus {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
}

impl Bus {
    /// Connects within the connect timeout; an address with nothing listening, refused
    /// credentials or a TLS failure is reported at once, naming the address.
    pub async fn connect(s: &NatsSettings) -> Result<Bus, BusError> {
        let shown = redact_nats_url(&s.url);
        let limit = s.connect_timeout.get();
        let (url, options) = auth::connect_options(s).await?;
        // A comma-separated list of seed servers, as every NATS client takes them (with or
        // without a scheme): each its own address, tried until one answers.
        let servers: Vec<&str> = url
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let connect = options.connect(servers);
        let client = match tokio::time::timeout(limit, connect).await {
            Ok(Ok(c)) => c,
            Ok(Err(source)) => return Err(BusError::Connect { url: shown, source }),
            Err(_) => {
                return Err(BusError::ConnectTimeout {
                    url: shown,
                    after: limit,
                })
            }
        };
        let js = jetstream::new(client.clone());
        Ok(Bus { client, js })
    }

    pub fn connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Binds to (or creates) the stream and the durable pull consumer.
    pub async fn bind(&self, b: &Binding) -> Result<PullConsumer, BusError> {
        let stream = self.ensure_stream(b).await?;
        stream
            .get_or_create_consumer(&b.consumer, b.consumer_config(1))
            .await
            .map_err(|e| js_err("bind consumer", &b.consumer, e))
    }

    /// Creates the durable consumer again after a deletion, delivering from `start`.
    pub async fn recreate(&self, b: &Binding, start: u64) -> Result<PullConsumer, BusError> {
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
    pub async fn ensure_stream(&self, b: &Binding) -> Result<stream::Stream, BusError> {
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
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| js_err("create stream", &b.stream, e))?
            }
            Err(e) => return Err(js_err("get stream", &b.stream, e)),
        })
    }
}

/// Whether a get-stream error says the stream does not exist.
pub fn is_not_found(kind: &jetstream::context::GetStreamErrorKind) -> bool {
    matches!(kind, jetstream::context::GetStreamErrorKind::JetStream(e)
        if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}

pub(crate) fn js_err(action: &'static str, name: &str, e: impl std::fmt::Display) -> BusError {
    BusError::JetStream {
        action,
        name: name.to_owned(),
        message: e.to_string(),
    }
}

/// Pending and ack-pending counts of a consumer, for metrics and readiness.
pub async fn consumer_state(consumer: &PullConsumer) -> Option<(u64, usize)> {
    consumer
        .get_info()
        .await
        .ok()
        .map(|i| (i.num_pending, i.num_ack_pending))
}

/// What the server says about the durable consumer.
pub enum ConsumerCheck {
    Present(Box<jetstream::consumer::Info>),
    Deleted,
    StreamDeleted,
    /// No answer (connectivity): nothing can be concluded.
    Unknown(String),
}

/// Asks the server whether the consumer (and its stream) still exist.
pub async fn check_consumer(consumer: &PullConsumer) -> ConsumerCheck {
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
pub fn meta_of(msg: &async_nats::jetstream::Message) -> Option<Meta> {
    let info = msg.info().ok()?;
    let published_at = DateTime::from_timestamp_micros(info.published.timestamp_micros())?;
    let headers = msg
        .headers
        .as_ref()
        .map(|h| {
            h.iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| (k.to_string(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Some(Meta {
        stream: Arc::from(info.stream),
        stream_seq: info.stream_sequence,
        published_at,
        subject: msg.subject.to_string(),
        delivery_count: info.delivered,
        headers,
    })
}
