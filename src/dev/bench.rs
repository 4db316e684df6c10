//! The throughput ceilings `scripts/bench-ingest.sh` compares the daemon against: an ack-only
//! consumer draining the same stream (the bus ceiling) and a raw binary COPY of the same rows
//! into the same table (the database ceiling).

use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use futures::StreamExt;

use crate::bus::Bus;
use crate::config::{DatabaseSettings, Dur, NatsSettings};
use crate::db::Db;
use crate::dev::sample::Mix;
use crate::ingest::sink::Sink;
use crate::ingest::source::Binding;
use crate::log::append::copy_body;
use crate::row::record::{record, Meta, Naming};

fn nats(url: &str) -> NatsSettings {
    NatsSettings {
        url: url.to_owned(),
        ..NatsSettings::default()
    }
}

/// Deletes a stream (benchmark clean-up).
pub(crate) async fn delete_stream(nats_url: &str, stream: &str) -> anyhow::Result<()> {
    let bus = Bus::connect(&nats(nats_url)).await?;
    bus.js
        .delete_stream(stream)
        .await
        .map_err(|e| anyhow::anyhow!("deleting stream {stream}: {e}"))?;
    Ok(())
}

/// Drains `stream` through a fresh durable consumer, acking every message and doing nothing
/// else. Returns (messages, seconds from the first message to the last ack).
pub(crate) async fn ack_only(
    nats_url: &str,
    stream: &str,
    consumer: &str,
    batch: usize,
) -> anyhow::Result<(u64, f64)> {
    let bus = Bus::connect(&nats(nats_url)).await?;
    let binding = Binding {
        stream: stream.into(),
        subjects: vec![],
        consumer: consumer.into(),
        bind_only: true,
        ack_wait: Duration::from_secs(30),
        max_ack_pending: i64::try_from(batch * 4).unwrap_or(i64::MAX),
        replicas: 1,
        start_seq: 1,
    };
    let c = bus.bind(&binding).await?;
    let total = crate::ingest::source::consumer_state(&c)
        .await
        .map_or(0, |(p, _)| p);
    let mut msgs = c
        .stream()
        .max_messages_per_batch(batch)
        .messages()
        .await?
        .ready_chunks(batch);
    let mut n = 0u64;
    let mut first: Option<Instant> = None;
    while n < total {
        let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(10), msgs.next()).await
        else {
            break;
        };
        first.get_or_insert_with(Instant::now);
        for m in chunk.into_iter().flatten() {
            let _ = m.ack().await;
            n += 1;
        }
    }
    bus.client.flush().await?;
    let secs = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
    Ok((n, secs))
}

/// Where `copy_ceiling` writes the rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CopyInto {
    /// `audit.events` as the daemon has it: partitioned, every index.
    Log,
    /// A plain table of the log's columns with its primary key only (the floor any design with
    /// the same rows and key pays).
    PrimaryKeyOnly,
    /// The daemon's sink, one batch at a time: rows, envelope-id claims, drift observations
    /// and the chain link.
    Sink,
}

impl CopyInto {
    /// The first word of `bench copy`'s output line.
    pub(crate) fn label(self) -> &'static str {
        match self {
            CopyInto::Log => "copy",
            CopyInto::PrimaryKeyOnly => "copy-pk",
            CopyInto::Sink => "sink",
        }
    }
}

/// The plain table `CopyInto::PrimaryKeyOnly` fills.
const PK_ONLY_TABLE: &str = "public.bench_events_pk_only";

/// Builds the rows the daemon would write for the same `Mix`, then times only the COPY into
/// `into` (batches of `batch` rows, one transaction each, as the daemon commits).
pub(crate) async fn copy_ceiling(
    database_url: &str,
    count: usize,
    seed: u64,
    batch: usize,
    into: CopyInto,
) -> anyhow::Result<(u64, f64)> {
    let through_sink = into == CopyInto::Sink;
    let store = Sink::new(
        Db::open_writer(&DatabaseSettings {
            url: database_url.to_owned(),
            connections: 2,
            connect_timeout: Dur::secs(10),
            ..DatabaseSettings::default()
        })
        .await?,
        "bench",
    );
    let naming = Naming::default();
    let now = Utc::now();
    let stream: std::sync::Arc<str> = std::sync::Arc::from("COPYBENCH");
    let (mut bodies, mut batches) = (Vec::new(), Vec::new());
    // A full batch: kept as records for the sink, else encoded now (records dropped).
    let mut keep = |rows: Vec<_>| {
        if through_sink {
            batches.push(rows);
        } else {
            bodies.push(copy_body(&rows, 1));
        }
    };
    let mut rows = Vec::with_capacity(batch);
    let mut seq = 0u64;
    for s in Mix::new(count, seed) {
        seq += 1;
        let meta = Meta {
            stream: stream.clone(),
            stream_seq: seq,
            // A bus time a microsecond after the last, as a stream's are: increasing.
            published_at: now
                + chrono::Duration::microseconds(i64::try_from(seq).unwrap_or(i64::MAX)),
            subject: "events.load".into(),
            delivery_count: 1,
            headers: vec![],
        };
        rows.push(record(meta, Bytes::from(s.bytes), &naming, now));
        if rows.len() == batch {
            keep(std::mem::replace(&mut rows, Vec::with_capacity(batch)));
        }
    }
    if !rows.is_empty() {
        keep(rows);
    }
    if through_sink {
        let started = Instant::now();
        for mut b in batches {
            store.write_batch(&mut b).await?;
        }
        return Ok((seq, started.elapsed().as_secs_f64()));
    }
    let table = match into {
        CopyInto::PrimaryKeyOnly => {
            crate::db::create_primary_key_only_copy(
                database_url,
                PK_ONLY_TABLE,
                crate::log::append::EVENTS,
            )
            .await?;
            PK_ONLY_TABLE
        }
        _ => crate::log::append::EVENTS,
    };
    let started = Instant::now();
    for body in bodies {
        store.copy_raw(body, table).await?;
    }
    Ok((seq, started.elapsed().as_secs_f64()))
}
