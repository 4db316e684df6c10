//! The bus: the NATS connection every room that talks to NATS shares (a list of seed servers,
//! exactly one way of authenticating from files or the environment, credentials never passed
//! on in a URL, TLS as configured), its JetStream context, and the errors at the bus boundary.
//! What ingest does on it (stream, durable consumer) is `ingest::source`; a stream's state
//! (sequences, deleted ones, creation) is [`state`].

mod auth;
pub(crate) mod state;

use std::time::Duration;

use async_nats::jetstream;

use crate::config::secrets;
use crate::config::{redact_nats_url, NatsSettings};

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
    /// The server's certificate (or the handshake) refused: one line, not retried.
    #[error("{line}")]
    Tls { line: String },
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
    #[error("the checkpoint stream `{stream}` does not exist: pass --checkpoint-stream with the stream the daemon publishes its checkpoints to, or --checkpoint-dir DIR")]
    NoCheckpointStream { stream: String },
    #[error("JetStream {action} `{name}`: {message}")]
    JetStream {
        action: &'static str,
        name: String,
        message: String,
    },
}

#[derive(Clone)]
pub struct Bus {
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
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
            Ok(Err(source)) => {
                return Err(match crate::tls::refusal(&source) {
                    Some(r) => BusError::Tls {
                        line: r.line("NATS", &shown, "nats"),
                    },
                    None => BusError::Connect { url: shown, source },
                })
            }
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

    /// Whether the connection is encrypted: TLS asked for (a `tls://` or `wss://` URL, a CA
    /// or a client certificate), or required by the server (async-nats then upgrades).
    pub(crate) fn encrypted(&self, s: &NatsSettings) -> bool {
        let url = s.url.trim_start();
        url.starts_with("tls://")
            || url.starts_with("wss://")
            || s.tls_ca_file.is_some()
            || s.tls_cert_file.is_some()
            || self.client.server_info().tls_required
    }

    pub fn connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }
}

/// Whether a get-stream error says the stream does not exist.
pub(crate) fn is_not_found(kind: &jetstream::context::GetStreamErrorKind) -> bool {
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
