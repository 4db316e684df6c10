//! Plays the planned batch onto the bus: publishes every envelope in order through JetStream,
//! with a window of publishes awaiting their acknowledgement (as `publish` does), and returns
//! once JetStream has stored all of them.

use crate::bus::Bus;
use crate::config::{NatsSettings, StreamSettings};
use crate::dev::publish::{ensure_stream, Window};

/// Publishes `events` to `subject`; returns how many were stored.
pub(crate) async fn publish(
    nats: &NatsSettings,
    stream: &StreamSettings,
    subject: &str,
    events: &[Vec<u8>],
    window: usize,
) -> anyhow::Result<usize> {
    let bus = Bus::connect(nats).await?;
    ensure_stream(&bus, stream).await?;
    let mut w = Window::new(&bus, window);
    for e in events {
        w.publish(subject, e.clone().into()).await?;
    }
    w.finish().await?;
    Ok(events.len())
}
