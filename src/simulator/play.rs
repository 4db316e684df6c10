//! Plays the planned batch onto the bus: publishes every envelope in order through JetStream,
//! with a window of publishes awaiting their acknowledgement (as `publish` does), and returns
//! once JetStream has stored all of them.

use std::collections::VecDeque;

use anyhow::Context;

use crate::bus::Bus;
use crate::publish::ensure_stream;

/// Publishes `events` to `subject`; returns how many were stored.
pub async fn publish(
    nats_url: &str,
    stream: &str,
    subjects: &[String],
    subject: &str,
    events: &[Vec<u8>],
    window: usize,
) -> anyhow::Result<usize> {
    let bus = Bus::connect(nats_url).await?;
    ensure_stream(&bus, stream, subjects).await?;
    let mut inflight = VecDeque::with_capacity(window);
    for e in events {
        let ack = bus
            .js
            .publish(subject.to_owned(), e.clone().into())
            .await
            .context("publishing")?;
        inflight.push_back(ack);
        if inflight.len() >= window.max(1) {
            if let Some(a) = inflight.pop_front() {
                a.await.context("JetStream did not store an event")?;
            }
        }
    }
    for a in inflight {
        a.await.context("JetStream did not store an event")?;
    }
    Ok(events.len())
}
