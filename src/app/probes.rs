//! The daemon's probers and pollers, each the only writer of what it measures: PostgreSQL's
//! and NATS's `connection_up`, the consumer's backlog gauges, the chain metrics, and the
//! partitions created ahead. Each runs until its stop token is cancelled.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::metrics::Metrics;
use crate::bus::Bus;
use crate::db::Db;
use crate::ingest::source::{self, PullConsumer};
use crate::log::Reader;
use crate::telemetry::health::Health;

/// How often the probers and pollers look.
const PROBE_EVERY: Duration = Duration::from_secs(2);
const POLL_EVERY: Duration = Duration::from_secs(5);
/// Partitions are created ahead this often.
const PARTITIONS_EVERY: Duration = Duration::from_secs(3600);
/// How often the log's statistics are looked at (refreshed when it grew by a tenth), first one
/// period after start: a restart's catch-up does not share the database with an `ANALYZE` of the
/// whole log, which only the reading commands' plans need (the writes use none).
const STATISTICS_EVERY: Duration = Duration::from_secs(60);

/// Starts the probers and the chain poller in `tasks`, until `stop`.
pub(super) fn spawn(
    tasks: &TaskTracker,
    db: &Db,
    bus: &Bus,
    consumer: &PullConsumer,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: &CancellationToken,
) {
    tasks.spawn(probe_postgres(db.clone(), health.clone(), stop.clone()));
    tasks.spawn(probe_nats(
        bus.client.clone(),
        consumer.clone(),
        metrics.clone(),
        health.clone(),
        stop.clone(),
    ));
    tasks.spawn(poll_chain(db.clone(), metrics.clone(), stop.clone()));
}

/// The only writer of `connection_up{postgres}`.
async fn probe_postgres(db: Db, health: Arc<Health>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(PROBE_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => health.set_postgres(db.ping().await),
        }
    }
}

/// The only writer of `connection_up{nats, jetstream}`, of the consumer's backlog gauges and
/// of the leader changes (polled at once, then every `POLL_EVERY`).
async fn probe_nats(
    client: async_nats::Client,
    consumer: PullConsumer,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    stop: CancellationToken,
) {
    let js = async_nats::jetstream::new(client.clone());
    let mut leaders = source::Leaders::default();
    let mut tick = tokio::time::interval(PROBE_EVERY);
    let mut n = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        health.set_nats(client.connection_state() == async_nats::connection::State::Connected);
        n += 1;
        if (n - 1) % (POLL_EVERY.as_secs() / PROBE_EVERY.as_secs()).max(1) == 0 {
            let limit = crate::bus::API_TIMEOUT;
            leaders
                .observe(&js, &consumer, &metrics.ingest, &health, limit)
                .await;
        }
    }
}

/// The only writer of the chain metrics (the head can move through other instances and
/// `verify` runs elsewhere), of the partitions created ahead and of the log's statistics.
async fn poll_chain(db: Db, metrics: Arc<Metrics>, stop: CancellationToken) {
    let verify = Reader::new(db.clone());
    let mut tick = tokio::time::interval(POLL_EVERY);
    let mut partitions = tokio::time::interval(PARTITIONS_EVERY);
    let mut statistics =
        tokio::time::interval_at(Instant::now() + STATISTICS_EVERY, STATISTICS_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = partitions.tick() => {
                if let Err(e) = db.ensure_partitions(chrono::Utc::now()).await {
                    tracing::warn!(error = %e, "could not create partitions ahead");
                }
            }
            _ = statistics.tick() => match db.analyze_log().await {
                Ok(true) => tracing::debug!("statistics of audit.events refreshed"),
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not refresh the log's statistics"),
            },
            _ = tick.tick() => {
                let m = &metrics.chain;
                if let Ok((head, _)) = verify.chain_head().await {
                    m.head.set(head);
                }
                if let Ok(Some(run)) = verify.last_run().await {
                    run.export(m);
                }
            }
        }
    }
}
