//! Where checkpoints are published, outside the database: a JetStream stream created with
//! `deny_delete` and `deny_purge` and no limit that evicts (a published checkpoint cannot be
//! removed through NATS; NATS 2.9 has both), whose configuration is checked wherever it is used
//! (an existing stream is not trusted because of its name), and optionally a directory (one file
//! per checkpoint, never rewritten). Also reads them back for `verify`, `prove` and the signer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;

use crate::bus::{js_err, Bus, BusError};
use crate::config::defaults::CHECKPOINT_SUBJECT_PREFIX;
use crate::tlog::note::MAX_NOTE;

/// One checkpoint read from the witness, with where it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub(crate) label: String,
    pub note: String,
}

/// The subject checkpoints of `stream` are published on.
pub fn subject(stream: &str) -> String {
    format!("{CHECKPOINT_SUBJECT_PREFIX}.{stream}")
}

/// What makes a checkpoint stream unfit to keep evidence: each property it lacks.
pub(crate) fn config_problems(c: &stream::Config) -> Vec<String> {
    let mut out = Vec::new();
    if !c.deny_delete {
        out.push("deny_delete is off (a checkpoint can be deleted)".to_owned());
    }
    if !c.deny_purge {
        out.push("deny_purge is off (the stream can be purged)".to_owned());
    }
    if !c.max_age.is_zero() {
        out.push(format!(
            "max_age is {:?} (old checkpoints expire)",
            c.max_age
        ));
    }
    for (name, v) in [
        ("max_msgs", c.max_messages),
        ("max_bytes", c.max_bytes),
        ("max_msgs_per_subject", c.max_messages_per_subject),
    ] {
        if v > 0 {
            out.push(format!("{name} is {v} (old checkpoints are evicted)"));
        }
    }
    if c.allow_rollup {
        out.push("allow_rollup is on (a rollup replaces old checkpoints)".to_owned());
    }
    out
}

/// The witness stream, created when missing (file storage, deny delete, deny purge, no limit);
/// returns what its configuration lacks (empty when it is fit).
pub(crate) async fn ensure_stream(
    bus: &Bus,
    name: &str,
    replicas: usize,
    limit: Duration,
) -> Result<Vec<String>, BusError> {
    let config = stream::Config {
        name: name.to_owned(),
        subjects: vec![subject(name)],
        storage: stream::StorageType::File,
        num_replicas: replicas.max(1),
        deny_delete: true,
        deny_purge: true,
        ..Default::default()
    };
    match tokio::time::timeout(limit, bus.js.get_or_create_stream(config)).await {
        Ok(Ok(mut s)) => match tokio::time::timeout(limit, s.info()).await {
            Ok(Ok(info)) => Ok(config_problems(&info.config)),
            Ok(Err(e)) => Err(js_err("read the checkpoint stream", name, e)),
            Err(_) => Err(js_err("read the checkpoint stream", name, "timed out")),
        },
        Ok(Err(e)) => Err(js_err("create the checkpoint stream", name, e)),
        Err(_) => Err(js_err("create the checkpoint stream", name, "timed out")),
    }
}

/// The checkpoint stream and its info (read, never created).
async fn open(bus: &Bus, name: &str) -> Result<(stream::Stream, stream::Info), BusError> {
    let mut s = bus.js.get_stream(name).await.map_err(|e| {
        if crate::bus::is_not_found(&e.kind()) {
            BusError::NoCheckpointStream {
                stream: name.to_owned(),
            }
        } else {
            js_err("open the checkpoint stream", name, e)
        }
    })?;
    let info = s
        .info()
        .await
        .map_err(|e| js_err("read the checkpoint stream", name, e))?
        .clone();
    Ok((s, info))
}

/// `read` within `limit`; past it, an error naming the stream.
async fn within<T>(
    limit: Duration,
    name: &str,
    read: impl std::future::Future<Output = Result<T, BusError>>,
) -> Result<T, BusError> {
    match tokio::time::timeout(limit, read).await {
        Ok(r) => r,
        Err(_) => Err(js_err("read the checkpoint stream", name, "timed out")),
    }
}

/// What an existing checkpoint stream's configuration lacks (`verify`: read, never created).
pub(crate) async fn stream_problems(
    bus: &Bus,
    name: &str,
    limit: Duration,
) -> Result<Vec<String>, BusError> {
    within(limit, name, async {
        let (_, info) = open(bus, name).await?;
        Ok(config_problems(&info.config))
    })
    .await
}

/// The newest messages of the stream, newest first, at most `most` of them (the signer's
/// look for checkpoints its key signed that it does not remember).
pub(crate) async fn read_tail(
    bus: &Bus,
    name: &str,
    most: u64,
    limit: Duration,
) -> Result<Vec<Found>, BusError> {
    within(limit, name, async {
        let (s, info) = open(bus, name).await?;
        let state = info.state;
        let mut out = Vec::new();
        let mut seq = state.last_sequence;
        while seq >= state.first_sequence.max(1) && out.len() < most as usize {
            // A deleted message (deny_delete off) leaves a gap: skipped.
            if let Ok(m) = s.get_raw_message(seq).await {
                out.push(Found {
                    label: format!("stream {name} sequence {seq}"),
                    note: String::from_utf8_lossy(&m.payload).into_owned(),
                });
            }
            seq -= 1;
        }
        Ok(out)
    })
    .await
}

/// Publishes one checkpoint and waits for the stream's ack. The message id (`origin/size`)
/// makes a repeated publish (another daemon, a retry) a no-op within the dedupe window.
pub(crate) async fn publish(
    bus: &Bus,
    stream: &str,
    origin: &str,
    size: i64,
    note: &str,
    limit: Duration,
) -> Result<(), BusError> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", format!("{origin}/{size}").as_str());
    let sent = async {
        bus.js
            .publish_with_headers(subject(stream), headers, note.to_owned().into())
            .await
            .map_err(|e| js_err("publish a checkpoint", stream, e))?
            .await
            .map_err(|e| js_err("publish a checkpoint", stream, e))
    };
    match tokio::time::timeout(limit, sent).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(js_err("publish a checkpoint", stream, "no ack in time")),
    }
}

/// The file of the checkpoint of `size` of `log` in `dir` (the events log's files keep their
/// plain name).
pub(crate) fn file_of(dir: &Path, log: &str, size: i64) -> PathBuf {
    if log == crate::log::checkpoints::LOG_EVENTS {
        dir.join(format!("{size:020}.note"))
    } else {
        dir.join(format!("{log}-{size:020}.note"))
    }
}

/// Writes a checkpoint to `dir` (created if missing), fsynced; an existing file is never
/// rewritten (a note with more cosignatures than the first one published stays in the stream).
pub(crate) fn write_dir(dir: &Path, log: &str, size: i64, note: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match crate::files::create_new(&file_of(dir, log, size), note.as_bytes(), 0o644) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

/// Every checkpoint in `dir` (`*.note`, by name): each a regular file inside `dir` (a symlink
/// leading out, a device or a FIFO is refused), at most a note's bytes.
pub(crate) fn read_dir(dir: &Path) -> std::io::Result<Vec<Found>> {
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == "note"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let p = dir.join(&n);
            let at =
                |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", p.display()));
            let bytes =
                crate::files::bounded::read_beneath(dir, Path::new(&n), MAX_NOTE, "checkpoint")
                    .map_err(at)?
                    .ok_or_else(|| at(std::io::ErrorKind::NotFound.into()))?;
            let note = String::from_utf8(bytes).map_err(|_| {
                at(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not UTF-8 text, not a checkpoint",
                ))
            })?;
            Ok(Found {
                note,
                label: format!("file {}", p.display()),
            })
        })
        .collect()
}

/// Every checkpoint in the witness stream, in stream order (an ephemeral consumer, no acks).
pub async fn read_stream(bus: &Bus, name: &str, limit: Duration) -> Result<Vec<Found>, BusError> {
    within(limit, name, async {
        let (s, info) = open(bus, name).await?;
        let last = info.state.last_sequence;
        let mut out = Vec::new();
        if last == 0 {
            return Ok(out);
        }
        let c = s
            .create_consumer(consumer::pull::Config {
                ack_policy: consumer::AckPolicy::None,
                deliver_policy: consumer::DeliverPolicy::All,
                inactive_threshold: Duration::from_secs(60),
                ..Default::default()
            })
            .await
            .map_err(|e| js_err("read the checkpoint stream", name, e))?;
        let mut seen = 0u64;
        while seen < last {
            let mut batch = c
                .fetch()
                .max_messages(1000)
                .expires(Duration::from_secs(1))
                .messages()
                .await
                .map_err(|e| js_err("read the checkpoint stream", name, e))?;
            let mut got = 0;
            while let Some(m) = batch.next().await {
                let m: jetstream::Message =
                    m.map_err(|e| js_err("read the checkpoint stream", name, e))?;
                got += 1;
                if let Ok(info) = m.info() {
                    seen = info.stream_sequence;
                    out.push(Found {
                        label: format!("stream {name} sequence {seen}"),
                        note: String::from_utf8_lossy(&m.payload).into_owned(),
                    });
                }
            }
            if got == 0 {
                break;
            }
        }
        Ok(out)
    })
    .await
}
