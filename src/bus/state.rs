//! A stream's state on the bus, as JetStream's stream info with deleted details says it: its
//! first and last sequence, the sequences deleted between them, and when it was created (a
//! stream recreated under the same name starts its sequences again at 1). Read by `verify`'s
//! completeness and by ingest's recovery.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{is_not_found, js_err, Bus, BusError};

/// How long one stream-info request may take.
const INFO_TIMEOUT: Duration = Duration::from_secs(10);

/// The stream's state on the bus.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct BusState {
    pub(crate) first_seq: u64,
    pub(crate) last_seq: u64,
    /// Sequences deleted between the first and the last, ascending.
    #[serde(skip)]
    pub(crate) deleted: Vec<u64>,
    pub(crate) deleted_count: u64,
    /// When the stream was created (its sequences count from then).
    #[serde(skip)]
    pub(crate) created: Option<DateTime<Utc>>,
}

impl BusState {
    /// Whether the stream still holds message `seq`.
    pub(crate) fn holds(&self, seq: u64) -> bool {
        seq >= self.first_seq && seq <= self.last_seq && self.deleted.binary_search(&seq).is_err()
    }
}

impl Bus {
    /// The state of `stream`, deleted sequences included; `None` when it does not exist.
    pub(crate) async fn stream_state(&self, stream: &str) -> Result<Option<BusState>, BusError> {
        let info = tokio::time::timeout(INFO_TIMEOUT, async {
            let s = match self.js.get_stream(stream).await {
                Ok(s) => s,
                Err(e) if is_not_found(&e.kind()) => return Ok(None),
                Err(e) => return Err(e.to_string()),
            };
            s.info_builder()
                .with_deleted(true)
                .fetch()
                .await
                .map(|i| Some(i.info))
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|_| {
            js_err(
                "stream info",
                stream,
                format!("no answer within {INFO_TIMEOUT:?}"),
            )
        })?
        .map_err(|e| js_err("stream info", stream, e))?;
        Ok(info.map(|i| {
            let mut deleted = i.state.deleted.unwrap_or_default();
            deleted.sort_unstable();
            BusState {
                first_seq: i.state.first_sequence,
                last_seq: i.state.last_sequence,
                deleted_count: deleted.len() as u64,
                deleted,
                created: Some(i.created),
            }
        }))
    }
}
