//! Plays the planned batch onto the bus: publishes every envelope in order through JetStream,
//! with a window of publishes awaiting their acknowledgement (as `publish` does), and returns
//! once JetStream has stored all of them.

use crate::bus::Bus;
use crate::publish::{ensure_stream, StreamArgs, Window};

/// Publishes `events` to `subject`; returns how many were stored.
pub async fn publish(
    nats_url: &str,
    stream: &StreamArgs,
    subject: &str,
    events: &[Vec<u8>],
    window: usize,
) -> anyhow::Result<usize> {
    let bus = Bus::connect(nats_url).await?;
    ensure_stream(&bus, stream).await?;
    let mut w = Window::new(&bus, window);
    for e in events {
        w.publish(subject, e.clone().into()).await?;
    }
    w.finish().await?;
    Ok(events.len())
}
