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
    run_to(settings, stop).await.map(|(n, secs, _)| (n, secs))
}

/// [`run`], also returning the subject published to: `publish.subject` when the stream
/// captures it; the default one (`events.load`) becomes `<prefix>.load` of the stream's first
/// subject (`ORDERS.>` → `ORDERS.load`); any other subject the stream does not capture is
/// refused before anything is published, naming the stream's subjects and `--subject`.
pub(crate) async fn run_to(
    settings: &Settings,
    stop: Option<CancellationToken>,
) -> anyhow::Result<(usize, f64, String)> {
    let p = &settings.publish;
    let bus = Bus::connect(&settings.nats).await?;
    let subjects = ensure_stream(&bus, &settings.stream).await?;
    let subject = subject_for(&p.subject, &settings.stream.name, &subjects)?;
    // Without a seed, a random one: re-runs never reuse envelope ids (each would be a
    // `conflict` finding in the audit log).
    let seed = p.seed.unwrap_or_else(rand::random);
    crate::dev::sample::draw_accounts_from(p.accounts);
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
        window.publish(&subject, sample.bytes.into()).await?;
    }
    window.finish().await?;
    Ok((sent, started.elapsed().as_secs_f64(), subject))
}

/// See [`run_to`].
fn subject_for(asked: &str, stream: &str, subjects: &[String]) -> anyhow::Result<String> {
    if subjects.iter().any(|f| captures(f, asked)) {
        return Ok(asked.to_owned());
    }
    let derived = subjects.first().map(|f| {
        f.split('.')
            .map(|t| if t == "*" || t == ">" { "load" } else { t })
            .collect::<Vec<_>>()
            .join(".")
    });
    if asked == crate::config::defaults::PUBLISH_SUBJECT {
        if let Some(d) = derived
            .clone()
            .filter(|d| subjects.iter().any(|f| captures(f, d)))
        {
            return Ok(d);
        }
    }
    anyhow::bail!(
        "subject `{asked}` is not captured by stream `{stream}` (its subjects: {}): pass --subject with a subject they capture{}",
        subjects.join(", "),
        derived.map_or(String::new(), |d| format!(" (e.g. --subject {d})"))
    )
}

/// Whether the NATS subject filter `filter` captures `subject` (`*` one token, `>` the rest).
fn captures(filter: &str, subject: &str) -> bool {
    let mut s = subject.split('.');
    for f in filter.split('.') {
        match (f, s.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (f, Some(t)) if f == t => {}
            _ => return false,
        }
    }
    s.next().is_none()
}

/// JetStream publishes with at most `size` of them awaiting their acknowledgement.
pub(crate) struct Window<'a> {
    bus: &'a Bus,
    inflight: VecDeque<async_nats::jetstream::context::PublishAckFuture>,
    size: usize,
}

impl<'a> Window<'a> {
    pub(crate) fn new(bus: &'a Bus, size: usize) -> Self {
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
    pub(crate) async fn finish(self) -> anyhow::Result<()> {
        for a in self.inflight {
            a.await.context("JetStream did not store a message")?;
        }
        Ok(())
    }
}

/// Creates the stream when missing (publishing may come before the daemon's first run);
/// returns its subjects (the server's, which may differ from the settings').
pub(crate) async fn ensure_stream(
    bus: &Bus,
    stream: &StreamSettings,
) -> anyhow::Result<Vec<String>> {
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
    let s = bus.ensure_stream(&binding).await?;
    Ok(s.cached_info().config.subjects.clone())
}

/// Connects to NATS (for callers outside the daemon).
pub(crate) async fn connect(nats: &NatsSettings) -> anyhow::Result<Bus> {
    Ok(Bus::connect(nats).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_is_one_the_stream_captures() {
        assert!(captures("a.>", "a.b.c") && captures("a.*", "a.b") && captures("a.b", "a.b"));
        assert!(!captures("a.>", "a") && !captures("a.*", "a.b.c") && !captures("a.b", "a.c"));
        let s = |asked: &str, subjects: &[&str]| {
            let subjects: Vec<String> = subjects.iter().map(|s| s.to_string()).collect();
            subject_for(asked, "S", &subjects).map_err(|e| e.to_string())
        };
        assert_eq!(s("events.load", &["events.>"]), Ok("events.load".into()));
        assert_eq!(s("events.load", &["ORDERS.>"]), Ok("ORDERS.load".into()));
        assert_eq!(s("events.load", &["x.*.y"]), Ok("x.load.y".into()));
        let err = s("other.load", &["ORDERS.>", "B.*"]).expect_err("refused");
        assert!(
            err.contains("`other.load`")
                && err.contains("ORDERS.>, B.*")
                && err.contains("--subject ORDERS.load"),
            "{err}"
        );
    }
}
