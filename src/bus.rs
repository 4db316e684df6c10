//! The bus: NATS JetStream connection, stream and durable pull consumer (created when missing,
//! or only bound), and consumer state for readiness and metrics.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, stream};
/// The durable pull consumer type.
pub type PullConsumer = jetstream::consumer::Consumer<pull::Config>;

/// Errors at the bus boundary; all are transient from the daemon's point of view except a
/// stream that is missing while `--bind-only` is set.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("stream `{stream}` does not exist and --bind-only forbids creating it")]
    StreamMissing { stream: String },
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

pub struct Bus {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
}

impl Bus {
    pub async fn connect(url: &str) -> Result<Bus, BusError> {
        let client = async_nats::ConnectOptions::new()
            .name("event-audit")
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(|source| BusError::Connect {
                url: redact_nats_url(url),
                source,
            })?;
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
            .get_or_create_consumer(
                &b.consumer,
                pull::Config {
                    durable_name: Some(b.consumer.clone()),
                    ack_policy: jetstream::consumer::AckPolicy::Explicit,
                    ack_wait: b.ack_wait,
                    max_ack_pending: b.max_ack_pending,
                    deliver_policy: jetstream::consumer::DeliverPolicy::All,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| js_err("bind consumer", &b.consumer, e))
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

fn is_not_found(kind: &jetstream::context::GetStreamErrorKind) -> bool {
    matches!(kind, jetstream::context::GetStreamErrorKind::JetStream(e)
        if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}

fn js_err(action: &'static str, name: &str, e: impl std::fmt::Display) -> BusError {
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

/// A NATS URL with any credentials replaced, for messages.
pub fn redact_nats_url(url: &str) -> String {
    // async-nats also accepts a comma-separated list of servers: redact each one.
    url.split(',')
        .map(|part| match url::Url::parse(part.trim()) {
            Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
                let _ = u.set_username("***");
                let _ = u.set_password(None);
                u.to_string()
            }
            Ok(u) => u.to_string(),
            Err(_) => "<unparsable NATS URL>".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_never_survive_redaction() {
        let r = super::redact_nats_url("nats://user:secret@h1:4222, nats://h2:4222");
        assert!(!r.contains("secret") && !r.contains("user"), "{r}");
        assert!(r.contains("h2"), "{r}");
        let d = crate::store::redact_url("postgres://u:pw@h/db?password=hunter2");
        assert!(!d.contains("pw") && !d.contains("hunter2"), "{d}");
    }
}
