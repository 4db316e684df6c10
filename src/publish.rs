//! `event-audit publish`: the load generator. Publishes N catalogue events of a realistic mix
//! (both envelopes, ~2% invalid/unknown/malformed) to a subject, at a rate or as fast as the
//! server acknowledges them (a window of in-flight JetStream publishes).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::bus::{Binding, Bus};
use crate::sample::Mix;

/// Options of `event-audit publish`.
#[derive(clap::Args, Debug, Clone)]
pub struct PublishArgs {
    /// NATS URL.
    #[arg(long, env = "NATS_URL", default_value = crate::config::DEFAULT_NATS_URL, hide_env_values = true)]
    pub nats_url: String,
    /// Messages to publish.
    #[arg(long, short = 'n', default_value_t = 10_000)]
    pub count: usize,
    /// Subject to publish to (must be captured by the stream).
    #[arg(long, default_value = "events.load")]
    pub subject: String,
    /// Messages per second; 0 = as fast as possible.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// Seed of the deterministic mix.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub stream: StreamArgs,
    /// JetStream publishes awaiting their ack at once.
    #[arg(long, default_value_t = 512)]
    pub window: usize,
}

/// Publishes; returns (messages, seconds).
pub async fn run(args: &PublishArgs) -> anyhow::Result<(usize, f64)> {
    run_until(args, None).await
}

/// Publishes until done or until `stop` turns true (then waits for the messages in flight).
pub async fn run_until(
    args: &PublishArgs,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> anyhow::Result<(usize, f64)> {
    let bus = Bus::connect(&args.nats_url).await?;
    ensure_stream(&bus, &args.stream).await?;
    let started = Instant::now();
    let mut window = Window::new(&bus, args.window);
    let mut sent = 0;
    for (i, sample) in Mix::new(args.count, args.seed).live().enumerate() {
        if stop.as_ref().is_some_and(|s| *s.borrow()) {
            break;
        }
        sent += 1;
        window.publish(&args.subject, sample.bytes.into()).await?;
        if args.rate > 0 && i % 100 == 0 {
            let due = Duration::from_secs_f64(i as f64 / args.rate as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                match &stop {
                    Some(s) => {
                        let mut s = s.clone();
                        let _ = tokio::time::timeout(wait, s.wait_for(|v| *v)).await;
                    }
                    None => tokio::time::sleep(wait).await,
                }
            }
        }
    }
    window.finish().await?;
    Ok((sent, started.elapsed().as_secs_f64()))
}

/// The stream a publisher writes into, created when missing (so that publishing may come
/// before the daemon's first run). Shared by `publish` and `simulate-platform`.
#[derive(clap::Args, Debug, Clone)]
pub struct StreamArgs {
    /// Stream to create (with --subjects) when it does not exist yet.
    #[arg(
        long = "stream",
        value_name = "STREAM",
        env = "EVENT_AUDIT_STREAM",
        default_value = "EVENTS"
    )]
    pub name: String,
    /// Subjects of the stream when it is created, comma-separated.
    #[arg(
        long,
        env = "EVENT_AUDIT_SUBJECTS",
        value_delimiter = ',',
        default_value = "events.>"
    )]
    pub subjects: Vec<String>,
}

/// JetStream publishes with at most `size` of them awaiting their acknowledgement.
pub struct Window<'a> {
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
    pub async fn publish(&mut self, subject: &str, payload: bytes::Bytes) -> anyhow::Result<()> {
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

/// Creates the stream when missing.
pub async fn ensure_stream(bus: &Bus, stream: &StreamArgs) -> anyhow::Result<()> {
    let binding = Binding {
        stream: stream.name.clone(),
        subjects: stream.subjects.clone(),
        consumer: String::new(),
        bind_only: false,
        ack_wait: Duration::from_secs(30),
        max_ack_pending: 1,
    };
    bus.ensure_stream(&binding).await?;
    Ok(())
}
