//! Reading a long run of sequences at the stream's own pace: an ephemeral ordered consumer
//! delivering from the run's first sequence (no acks; the client recreates it on a gap), its
//! messages recorded in batches through the sink, until the run's last sequence. A message the
//! client cannot parse, or a stream that stops delivering before the run's end, hands the rest
//! of the run back to the reader by sequence, which also names what the stream no longer holds.

use std::time::Duration;

use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::consumer::DeliverPolicy;
use futures::StreamExt;

use super::{Recover, RecoverError, Recovered};
use crate::bus::js_err;
use crate::row::record::{record, Record};

/// How long the stream may stay silent before the rest of the run is read by sequence.
const IDLE: Duration = Duration::from_secs(5);

impl Recover<'_> {
    /// Records what the stream delivers of `[a, b]`; returns the first sequence not read (past
    /// `b` when all was), from which the caller reads by sequence.
    pub(super) async fn read_ordered(
        &self,
        stream: &str,
        [a, b]: [u64; 2],
        out: &mut Recovered,
    ) -> Result<u64, RecoverError> {
        let handle = self
            .bus
            .js
            .get_stream(stream)
            .await
            .map_err(|e| js_err("get stream", stream, e))?;
        let consumer = handle
            .create_consumer(OrderedConfig {
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: a },
                ..Default::default()
            })
            .await
            .map_err(|e| js_err("create an ordered consumer", stream, e))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| js_err("read an ordered consumer", stream, e))?;
        let mut batch: Vec<Record> = Vec::with_capacity(self.batch_size.min(10_000));
        let mut next = a;
        while next <= b {
            let Ok(Some(Ok(m))) = tokio::time::timeout(IDLE, messages.next()).await else {
                break;
            };
            let Some(mut meta) = crate::ingest::source::meta_of(&m) else {
                break;
            };
            if meta.stream_seq > b {
                break;
            }
            // Deleted sequences between are skipped by the stream; the reader by sequence
            // does not see them again, so they are named here.
            for gone in next..meta.stream_seq {
                super::push_lost(&mut out.lost, gone);
            }
            next = meta.stream_seq + 1;
            meta.delivery_count = 0;
            batch.push(record(
                meta,
                m.payload.clone(),
                self.naming,
                chrono::Utc::now(),
            ));
            if batch.len() >= self.batch_size.max(1) {
                self.write(&mut batch, out).await?;
            }
        }
        self.write(&mut batch, out).await?;
        Ok(next)
    }
}
