//! Where checkpoints are witnessed, outside the database: a JetStream stream created with
//! `deny_delete` and `deny_purge` (a published checkpoint cannot be removed through NATS;
//! NATS 2.9 has both), and optionally a directory (one file per checkpoint, never rewritten).
//! Also reads them back for `verify` and `prove`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;

use crate::config::defaults::CHECKPOINT_SUBJECT_PREFIX;
use crate::ingest::source::{Bus, BusError};

/// One checkpoint read from the witness, with where it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub label: String,
    pub note: String,
}

fn js(action: &'static str, name: &str, e: impl std::fmt::Display) -> BusError {
    BusError::JetStream {
        action,
        name: name.to_owned(),
        message: e.to_string(),
    }
}

/// The subject checkpoints of `stream` are published on.
pub fn subject(stream: &str) -> String {
    format!("{CHECKPOINT_SUBJECT_PREFIX}.{stream}")
}

/// The witness stream, created when missing (file storage, deny delete, deny purge).
pub async fn ensure_stream(bus: &Bus, name: &str, limit: Duration) -> Result<(), BusError> {
    let config = stream::Config {
        name: name.to_owned(),
        subjects: vec![subject(name)],
        storage: stream::StorageType::File,
        deny_delete: true,
        deny_purge: true,
        ..Default::default()
    };
    match tokio::time::timeout(limit, bus.js.get_or_create_stream(config)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(js("create the checkpoint stream", name, e)),
        Err(_) => Err(js("create the checkpoint stream", name, "timed out")),
    }
}

/// Publishes one checkpoint and waits for the stream's ack. The message id (`origin/size`)
/// makes a repeated publish (another daemon, a retry) a no-op within the dedupe window.
pub async fn publish(
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
            .map_err(|e| js("publish a checkpoint", stream, e))?
            .await
            .map_err(|e| js("publish a checkpoint", stream, e))
    };
    match tokio::time::timeout(limit, sent).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(js("publish a checkpoint", stream, "no ack in time")),
    }
}

/// The file of the checkpoint of `size` in `dir`.
pub fn file_of(dir: &Path, size: i64) -> PathBuf {
    dir.join(format!("{size:020}.note"))
}

/// Writes a checkpoint to `dir` (created if missing); an existing file is never rewritten.
pub fn write_dir(dir: &Path, size: i64, note: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = file_of(dir, size);
    if path.exists() {
        return Ok(());
    }
    let tmp = dir.join(format!(".{size:020}.tmp"));
    std::fs::write(&tmp, note)?;
    std::fs::rename(tmp, path)
}

/// Every checkpoint in `dir` (`*.note`, by name).
pub fn read_dir(dir: &Path) -> std::io::Result<Vec<Found>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "note"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            Ok(Found {
                note: std::fs::read_to_string(&p)?,
                label: format!("file {}", p.display()),
            })
        })
        .collect()
}

/// Every checkpoint in the witness stream, in stream order (an ephemeral consumer, no acks).
pub async fn read_stream(bus: &Bus, name: &str, limit: Duration) -> Result<Vec<Found>, BusError> {
    let get = async {
        let mut s = bus
            .js
            .get_stream(name)
            .await
            .map_err(|e| js("open the checkpoint stream", name, e))?;
        let last = s
            .info()
            .await
            .map_err(|e| js("read the checkpoint stream", name, e))?
            .state
            .last_sequence;
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
            .map_err(|e| js("read the checkpoint stream", name, e))?;
        let mut seen = 0u64;
        while seen < last {
            let mut batch = c
                .fetch()
                .max_messages(1000)
                .expires(Duration::from_secs(1))
                .messages()
                .await
                .map_err(|e| js("read the checkpoint stream", name, e))?;
            let mut got = 0;
            while let Some(m) = batch.next().await {
                let m: jetstream::Message =
                    m.map_err(|e| js("read the checkpoint stream", name, e))?;
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
    };
    match tokio::time::timeout(limit, get).await {
        Ok(r) => r,
        Err(_) => Err(js("read the checkpoint stream", name, "timed out")),
    }
}
