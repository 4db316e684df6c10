//! `event-audit publish`: the load generator. Publishes N catalogue events of a realistic mix
//! (both envelopes, ~2% invalid/unknown/malformed) to a subject, at a rate (every message
//! paced: message i is sent i/rate seconds after the start) or as fast as the server
//! acknowledges them (a window of in-flight JetStream publishes). The mix is seeded; without
//! `--seed` the seed is random, so envelope ids are never reused across runs.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::Context;

use tokio_util::sync::CancellationToken;

use crate::bus::Bus;
use crate::config::{NatsSettings, Settings, StreamSettings};
use crate::dev::sample::Mix;
use crate::ingest::source::Binding;

/// Publishes `settings.publish.count` messages (or until `stop`); returns (messages, seconds).
/// With a rate, every message is paced (`-n 50 --rate 10` takes five seconds).
pub async fn run(
    settings: &Settings,
    stop: Option<CancellationToken>,
) -> anyhow::Result<(usize, f64)> {
    let p = &settings.publish;
    let bus = Bus::connect(&settings.nats).await?;
    ensure_stream(&bus, &settings.stream).await?;
    // Without a seed, a random one: re-runs never reuse envelope ids (each would be a
    // `conflict` finding in the audit log).
    let seed = p.seed.unwrap_or_else(rand::random);
    let started = Instant::now();
    let mut window = Window::new(&bus, p.window);
    let mut sent = 0;
    for (i, sample) in Mix::new(p.count, seed).live().enumerate() {
        if stop.as_ref().is_some_and(|s| s.is_cancelled()) {
            break;
        }
        if p.rate > 0 {
            let due = Duration::from_secs_f64(i as f64 / p.rate as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                match &stop {
                    Some(s) => {
                        let _ = tokio::time::timeout(wait, s.cancelled()).await;
                        if s.is_cancelled() {
                            break;
                        }
                    }
                    None => tokio::time::sleep(wait).await,
                }
            }
        }
        sent += 1;
        window.publish(&p.subject, sample.bytes.into()).await?;
    }
    window.finish().await?;
    Ok((sent, started.elapsed().as_secs_f64()))
}

/// JetStream publishes with at most `size` of them awaiting their acknowledgement.
pub(crate) struct Window<'a> {
    bus: &'a Bus,
    inflight: VecDeque<async_nats::jetstream::context::PublishAckFuture>,
    size: usize,
}

impl<'a> Window<'a> {
    pub fn new(bus: &'a Bus, size: usize) -> Self {
        Window {
            bus,
            inflight: VecDeque::with_capacity(size.max(1)),
            size: size.max(1),
        }
    }

    /// Publishes one message, first waiting for the oldest ack when the window is full.
    pub(crate) async fn publish(
        &mut self,
        subject: &str,
        payload: bytes::Bytes,
    ) -> anyhow::Result<()> {
        let ack = self
            .bus
            .js
            .publish(subject.to_owned(), payload)
            .await
            .context("publishing")?;
        self.inflight.push_back(ack);
        if self.inflight.len() >= self.size {
            if let Some(a) = self.inflight.pop_front() {
                a.await.context("JetStream did not store a message")?;
            }
        }
        Ok(())
    }

    /// Waits until JetStream has stored every message published through the window.
    pub async fn finish(self) -> anyhow::Result<()> {
        for a in self.inflight {
            a.await.context("JetStream did not store a message")?;
        }
        Ok(())
    }
}

/// Creates the stream when missing (publishing may come before the daemon's first run).
pub(crate) async fn ensure_stream(bus: &Bus, stream: &StreamSettings) -> anyhow::Result<()> {
    let binding = Binding {
        stream: stream.name.clone(),
        subjects: stream.subjects.clone(),
        consumer: String::new(),
        bind_only: false,
        ack_wait: stream.ack_wait.get(),
        max_ack_pending: 1,
        replicas: stream.replicas,
        start_seq: 1,
    };
    bus.ensure_stream(&binding).await?;
    Ok(())
}

/// Connects to NATS (for callers outside the daemon).
pub async fn connect(nats: &NatsSettings) -> anyhow::Result<Bus> {
    Ok(Bus::connect(nats).await?)
}
