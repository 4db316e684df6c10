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
    /// Stream to create (with --subjects) when it does not exist yet.
    #[arg(long, env = "EVENT_AUDIT_STREAM", default_value = "EVENTS")]
    pub stream: String,
    /// Subjects of the stream when it is created, comma-separated.
    #[arg(
        long,
        env = "EVENT_AUDIT_SUBJECTS",
        value_delimiter = ',',
        default_value = "events.>"
    )]
    pub subjects: Vec<String>,
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
    ensure_stream(&bus, &args.stream, &args.subjects).await?;
    let started = Instant::now();
    let mut inflight = VecDeque::with_capacity(args.window);
    let mut sent = 0;
    for (i, sample) in Mix::new(args.count, args.seed).live().enumerate() {
        if stop.as_ref().is_some_and(|s| *s.borrow()) {
            break;
        }
        sent += 1;
        let ack = bus
            .js
            .publish(args.subject.clone(), sample.bytes.into())
            .await
            .context("publishing")?;
        inflight.push_back(ack);
        if inflight.len() >= args.window.max(1) {
            if let Some(a) = inflight.pop_front() {
                a.await.context("JetStream did not store a message")?;
            }
        }
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
    for a in inflight {
        a.await.context("JetStream did not store a message")?;
    }
    Ok((sent, started.elapsed().as_secs_f64()))
}

/// Creates the stream when missing (so that publishing may come before the daemon's first run).
pub async fn ensure_stream(bus: &Bus, stream: &str, subjects: &[String]) -> anyhow::Result<()> {
    let binding = Binding {
        stream: stream.to_owned(),
        subjects: subjects.to_vec(),
        consumer: String::new(),
        bind_only: false,
        ack_wait: Duration::from_secs(30),
        max_ack_pending: 1,
    };
    bus.ensure_stream(&binding).await?;
    Ok(())
}
