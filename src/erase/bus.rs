//! The bus's copy of erased messages: deleted (JetStream message delete, each bounded by the
//! connect timeout) from the stream the daemon owns (its `stream.name`, created by it:
//! `stream.bind_only` off) unless the stream denies deletes; for any other stream, or when
//! NATS cannot be reached, the report says what the operator must do.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::bus::Bus;
use crate::config::{NatsSettings, StreamSettings};
use crate::row::erasure::Erased;

/// What became of one stream's copy of the erased messages.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OnTheBus {
    pub(crate) stream: String,
    /// Deleted now (or already gone from the stream).
    pub(crate) deleted: Vec<i64>,
    /// Still held by the bus, and why.
    pub(crate) left: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

/// The erased rows' sequences per stream.
fn by_stream(rows: &[Erased]) -> BTreeMap<&str, Vec<i64>> {
    let mut out: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for r in rows {
        out.entry(&r.stream).or_default().push(r.stream_seq);
    }
    out
}

/// Whether the daemon owns `stream` (and may delete from it).
fn owned(stream: &str, own: &StreamSettings) -> bool {
    stream == own.name && !own.bind_only
}

/// What a dry run would leave on the bus: every stream's sequences, and whether they would be
/// deleted.
pub(crate) fn plan(rows: &[Erased], own: &StreamSettings) -> Vec<OnTheBus> {
    by_stream(rows)
        .into_iter()
        .map(|(stream, seqs)| OnTheBus {
            stream: stream.to_owned(),
            deleted: Vec::new(),
            left: seqs,
            why: (!owned(stream, own)).then(|| not_owned(stream)),
        })
        .collect()
}

fn not_owned(stream: &str) -> String {
    format!("the daemon does not own stream {stream} (not its stream.name: pass --daemon-stream or EVENT_AUDIT_STREAM_NAME as the daemon has it; or stream.bind_only)")
}

/// Stream sequences as sorted ranges: `1-500,502,504-1099`.
pub(crate) fn ranges(seqs: &[i64]) -> String {
    let mut sorted = seqs.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let first = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        out.push(match sorted[i] {
            last if last == first => first.to_string(),
            last => format!("{first}-{last}"),
        });
        i += 1;
    }
    out.join(",")
}

/// Deletes the erased messages from the streams the daemon owns.
pub(crate) async fn delete(
    nats: &NatsSettings,
    own: &StreamSettings,
    rows: &[Erased],
) -> Vec<OnTheBus> {
    let mut out = plan(rows, own);
    if out.iter().all(|o| o.why.is_some()) {
        return out;
    }
    let bus = match Bus::connect(nats).await {
        Ok(b) => b,
        Err(e) => {
            for o in out.iter_mut().filter(|o| o.why.is_none()) {
                o.why = Some(format!("NATS could not be reached: {e}"));
            }
            return out;
        }
    };
    let limit = nats.connect_timeout.get();
    for o in out.iter_mut().filter(|o| o.why.is_none()) {
        o.why = delete_from(&bus, limit, o).await;
    }
    out
}

/// Deletes `o.left` from its stream; what it could not, and why, stays in `o`.
async fn delete_from(bus: &Bus, limit: std::time::Duration, o: &mut OnTheBus) -> Option<String> {
    let stream = match tokio::time::timeout(limit, bus.js.get_stream(&o.stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Some(format!("stream {}: {e}", o.stream)),
        Err(_) => return Some(format!("stream {}: no answer within {limit:?}", o.stream)),
    };
    if stream.cached_info().config.deny_delete {
        return Some(format!("stream {} denies deletes (deny_delete)", o.stream));
    }
    let mut left = Vec::new();
    let mut why = None;
    for seq in std::mem::take(&mut o.left) {
        let Ok(n) = u64::try_from(seq) else {
            left.push(seq);
            continue;
        };
        match tokio::time::timeout(limit, stream.delete_message(n)).await {
            Ok(Ok(_)) => o.deleted.push(seq),
            // Already gone (its limits aged it out, or an operator deleted it).
            Ok(Err(e)) if e.to_string().contains("no message found") => o.deleted.push(seq),
            Ok(Err(e)) => {
                why.get_or_insert_with(|| format!("stream {}: {e}", o.stream));
                left.push(seq);
            }
            Err(_) => {
                why.get_or_insert_with(|| {
                    format!("stream {}: no answer within {limit:?}", o.stream)
                });
                left.push(seq);
            }
        }
    }
    o.left = left;
    why
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn sequences_are_printed_as_ranges() {
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[7]), "7");
        assert_eq!(ranges(&[3, 4]), "3-4");
        let mut many: Vec<i64> = (1..=1099).filter(|s| *s != 501).collect();
        many.reverse();
        assert_eq!(ranges(&many), "1-500,502-1099");
        assert_eq!(ranges(&[9, 1, 2, 2, 5]), "1-2,5,9");
    }
}
