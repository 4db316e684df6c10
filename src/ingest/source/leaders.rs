//! Who leads the audit stream and the durable consumer in a JetStream cluster, as the NATS
//! prober sees them each poll: a change of leader is logged (naming both servers) and counted,
//! a poll the consumer does not answer (no leader, no quorum) marks JetStream down for
//! readiness, and the consumer's backlog comes from the same answer.

use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::context::ConsumerInfoErrorKind;

use super::PullConsumer;
use crate::ingest::metrics::IngestMetrics;
use crate::telemetry::health::Health;

/// The leaders last seen, per role (`None` before the first answer naming one).
#[derive(Debug, Default)]
pub(crate) struct Leaders {
    stream: Option<String>,
    consumer: Option<String>,
    /// Whether the last poll found JetStream answering (to log an outage once).
    answering: Option<bool>,
}

/// A leader seen now for `role`, compared with the last one: `Some((old, new))` on a change.
fn changed(last: &mut Option<String>, now: Option<String>) -> Option<(String, String)> {
    let now = now?;
    match last.replace(now.clone()) {
        Some(old) if old != now => Some((old, now)),
        _ => None,
    }
}

impl Leaders {
    /// One poll: the consumer's info (backlog, consumer leader) and the stream's info (stream
    /// leader), each bounded by `limit`. Sets the backlog gauges, `connection_up{jetstream}`
    /// and readiness, and logs and counts leader changes.
    pub(crate) async fn observe(
        &mut self,
        js: &jetstream::Context,
        consumer: &PullConsumer,
        metrics: &IngestMetrics,
        health: &Health,
        limit: Duration,
    ) {
        let stream_name = consumer.cached_info().stream_name.clone();
        let info = tokio::time::timeout(limit, consumer.get_info()).await;
        let info = match info {
            Ok(Ok(i)) => i,
            // Deleted: JetStream answered; recreating it is the pipeline's part.
            Ok(Err(e))
                if matches!(
                    e.kind(),
                    ConsumerInfoErrorKind::NotFound | ConsumerInfoErrorKind::StreamNotFound
                ) =>
            {
                return self.answered(health, &stream_name)
            }
            Ok(Err(e)) => return self.not_answering(health, &stream_name, &e.to_string()),
            Err(_) => return self.not_answering(health, &stream_name, "no answer in time"),
        };
        let m = metrics;
        m.consumer_pending
            .set(i64::try_from(info.num_pending).unwrap_or(i64::MAX));
        m.consumer_ack_pending
            .set(i64::try_from(info.num_ack_pending).unwrap_or(i64::MAX));
        let consumer_leader = info.cluster.as_ref().and_then(|c| c.leader.clone());
        // `get_stream` is the stream's info request: its answer is the cached info.
        let stream_leader = match tokio::time::timeout(limit, js.get_stream(&stream_name)).await {
            Ok(Ok(s)) => s
                .cached_info()
                .cluster
                .as_ref()
                .and_then(|c| c.leader.clone()),
            _ => None,
        };
        self.answered(health, &stream_name);
        for (role, last, now) in [
            ("stream", &mut self.stream, stream_leader),
            ("consumer", &mut self.consumer, consumer_leader),
        ] {
            if let Some((from, to)) = changed(last, now) {
                health.leader_changed(role, &stream_name, &info.name, &from, &to);
            }
        }
    }

    fn answered(&mut self, health: &Health, stream: &str) {
        if self.answering == Some(false) {
            tracing::info!(stream = %stream, "JetStream answers again for the durable consumer");
        }
        self.answering = Some(true);
        health.set_jetstream(true);
    }

    fn not_answering(&mut self, health: &Health, stream: &str, why: &str) {
        if self.answering != Some(false) {
            tracing::warn!(stream = %stream, reason = %why, "JetStream does not answer for the durable consumer (no leader, or no quorum in the cluster); ingest waits");
        }
        self.answering = Some(false);
        health.set_jetstream(false);
    }
}

#[cfg(test)]
mod tests {
    use super::changed;

    #[test]
    fn a_change_needs_two_named_leaders_that_differ() {
        let mut last = None;
        assert_eq!(changed(&mut last, Some("n1".into())), None);
        assert_eq!(changed(&mut last, Some("n1".into())), None);
        assert_eq!(changed(&mut last, None), None);
        assert_eq!(
            last.as_deref(),
            Some("n1"),
            "a leaderless poll keeps the last leader"
        );
        assert_eq!(
            changed(&mut last, Some("n2".into())),
            Some(("n1".into(), "n2".into()))
        );
        assert_eq!(last.as_deref(), Some("n2"));
    }
}
