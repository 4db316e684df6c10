//! Messages by their stream sequence, for what the consumer cannot deliver: fetched as stored
//! through the JSON `STREAM.MSG.GET` API (the client does not parse that header block), checked
//! against the client's own header parsing, and acked by sequence.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::bus::{js_err, Bus, BusError, API_TIMEOUT};
use crate::row::record::Meta;

impl Bus {
    /// Message `seq` of `stream` as stored (headers and data untouched), through the JSON
    /// `STREAM.MSG.GET` API, which the client delivers without parsing the header block.
    /// `None` when the stream holds no such message.
    pub(crate) async fn stored_message(
        &self,
        stream: &str,
        seq: u64,
    ) -> Result<Option<Stored>, BusError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            message: Option<RawStored>,
            error: Option<serde_json::Value>,
        }
        #[derive(serde::Deserialize)]
        struct RawStored {
            subject: String,
            seq: u64,
            #[serde(default)]
            data: String,
            hdrs: Option<String>,
            time: DateTime<Utc>,
        }
        let body = serde_json::json!({ "seq": seq });
        let request = self
            .js
            .request::<_, _, Answer>(format!("STREAM.MSG.GET.{stream}"), &body);
        let answer = match tokio::time::timeout(API_TIMEOUT, request).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return Err(js_err("get message", stream, e)),
            Err(_) => return Err(js_err("get message", stream, "timed out")),
        };
        let Some(m) = answer.message else {
            return match answer.error {
                Some(e) if e["err_code"] == 10037 => Ok(None),
                Some(e) => Err(js_err("get message", stream, e)),
                None => Ok(None),
            };
        };
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let decode = |s: &str| {
            b64.decode(s)
                .map_err(|e| js_err("decode message", stream, format!("sequence {seq}: {e}")))
        };
        Ok(Some(Stored {
            subject: m.subject,
            seq: m.seq,
            headers: m.hdrs.as_deref().map(decode).transpose()?,
            data: decode(&m.data)?,
            published_at: DateTime::from_timestamp_micros(m.time.timestamp_micros())
                .unwrap_or(m.time),
        }))
    }

    /// Whether the bus client fails to parse the header block of message `seq` (it then drops
    /// its connection on every delivery, and the consumer never sees the message).
    pub(crate) async fn headers_unparsable(
        &self,
        stream: &str,
        seq: u64,
    ) -> Result<bool, BusError> {
        let s = self
            .js
            .get_stream_no_info(stream)
            .await
            .map_err(|e| js_err("get stream", stream, e))?;
        let got = tokio::time::timeout(API_TIMEOUT, s.get_raw_message(seq)).await;
        Ok(match got {
            Ok(Ok(_)) => false,
            Ok(Err(e)) => {
                use async_nats::jetstream::stream::RawMessageErrorKind as K;
                let text = e.to_string();
                matches!(e.kind(), K::Other)
                    && ["header", "NATS/1.0", "status code"]
                        .iter()
                        .any(|w| text.contains(w))
            }
            Err(_) => false,
        })
    }

    /// Acks message `seq` of `stream` for `consumer` without having received it: the v1 ack
    /// subject, where nats-server 2.9 looks the message up by its stream sequence alone.
    pub(crate) async fn ack_by_sequence(
        &self,
        stream: &str,
        consumer: &str,
        seq: u64,
    ) -> Result<(), BusError> {
        let subject = format!("$JS.ACK.{stream}.{consumer}.1.{seq}.0.0.0");
        self.client
            .publish(subject, "+ACK".into())
            .await
            .map_err(|e| js_err("ack", consumer, e))?;
        tokio::time::timeout(API_TIMEOUT, self.client.flush())
            .await
            .map_err(|_| js_err("ack", consumer, "flush timed out"))?
            .map_err(|e| js_err("ack", consumer, e))
    }
}

/// A message as the stream stores it.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) subject: String,
    pub(crate) seq: u64,
    /// The raw header block, when there is one.
    pub(crate) headers: Option<Vec<u8>>,
    pub(crate) data: Vec<u8>,
    pub(crate) published_at: DateTime<Utc>,
}

impl Stored {
    /// Its bus metadata. Delivery count 0: fetched by sequence, never received whole.
    pub(crate) fn meta(&self, stream: &str) -> Meta {
        Meta {
            stream: Arc::from(stream),
            stream_seq: self.seq,
            published_at: self.published_at,
            subject: self.subject.clone(),
            delivery_count: 0,
            headers: Vec::new(),
        }
    }
}
