//! Messages the bus client cannot parse (a malformed NATS header block): the client drops its
//! connection on every delivery of one, so the consumer never sees it, the server redelivers it
//! after every ack wait, and the messages pulled with it are lost with it each time. No API
//! reports this; the consumer's ack floor stops moving. This watch notices that, looks at the
//! messages past the floor by their stream sequence (the JSON `STREAM.MSG.GET`, which the
//! client does not parse), records each unparsable one as `malformed` (`invalid_headers`, the
//! raw header block kept), and acks it by sequence after the commit. Its neighbours then come
//! again on their next redelivery.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use tokio_util::sync::CancellationToken;

use super::sink::Sink;
use super::source::{Binding, Bus, PullConsumer};
use crate::ingest::metrics::IngestMetrics;
use crate::row::record::{record_unparsed, Naming};
use crate::telemetry::health::Health;

/// How many sequences past the ack floor one look examines.
const LOOK_AHEAD: u64 = 64;

/// What the watch needs.
pub(crate) struct Watch {
    pub(crate) bus: Bus,
    pub(crate) binding: Binding,
    pub(crate) sink: Sink,
    pub(crate) naming: Naming,
    pub(crate) health: Arc<Health>,
    pub(crate) metrics: Arc<IngestMetrics>,
    /// The consumer's ack floor as last seen, shared with the pipeline.
    pub(crate) floor: Arc<AtomicU64>,
}

/// Polls the consumer every ack wait until `stop`; when its ack floor has not moved for two
/// ack waits while messages await their ack, examines the messages past it.
pub(crate) async fn watch(w: Watch, consumer: PullConsumer, stop: CancellationToken) {
    let every = w.binding.ack_wait.max(Duration::from_secs(1));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = (0u64, Instant::now());
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Ok(Ok(info)) = tokio::time::timeout(every, consumer.get_info()).await else {
            continue;
        };
        let floor = info.ack_floor.stream_sequence;
        w.floor.fetch_max(floor, Ordering::SeqCst);
        if floor != seen.0 || info.num_ack_pending == 0 {
            seen = (floor, Instant::now());
            continue;
        }
        if seen.1.elapsed() < every * 2 {
            continue;
        }
        let top = info.delivered.stream_sequence.min(floor + LOOK_AHEAD);
        for seq in floor + 1..=top {
            if stop.is_cancelled() {
                return;
            }
            if let Ok(true) = w.bus.headers_unparsable(&w.binding.stream, seq).await {
                if let Err(why) = w.record(seq).await {
                    tracing::warn!(stream_seq = seq, error = %why, "a message the bus client cannot parse could not be recorded yet; trying again");
                }
            }
        }
        // Look again only after another two ack waits without progress.
        seen.1 = Instant::now();
    }
}

impl Watch {
    /// Fetches message `seq` as stored, records it, and acks it once committed.
    async fn record(&self, seq: u64) -> Result<(), String> {
        let stream = &self.binding.stream;
        let stored = self
            .bus
            .stored_message(stream, seq)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the stream no longer holds it")?;
        let block = stored.headers.clone().unwrap_or_default();
        let mut recs = vec![record_unparsed(
            stored.meta(stream),
            &block,
            Bytes::from(stored.data),
            &self.naming,
            Utc::now(),
        )];
        let out = self
            .sink
            .write_batch(&mut recs)
            .await
            .map_err(|e| e.to_string())?;
        self.bus
            .ack_by_sequence(stream, &self.binding.consumer, seq)
            .await
            .map_err(|e| e.to_string())?;
        // Counted once per message: a second look that finds it already recorded (its
        // ack by sequence not yet seen by the server) writes nothing and counts nothing.
        self.health.unparsable.inc_by(out.inserted as u64);
        let m = &self.metrics;
        m.rows.inc_by(out.inserted as u64);
        for r in recs.iter().take(out.inserted) {
            m.message(
                r.catalogue_index,
                r.status,
                || r.event_name(),
                r.unknown_field_count,
            );
            m.errors(&r.error_codes);
        }
        tracing::warn!(
            stream_seq = seq,
            written = out.inserted,
            "a message whose NATS header block the bus client cannot parse was fetched by its sequence, recorded as malformed (invalid_headers) and acked"
        );
        Ok(())
    }
}
