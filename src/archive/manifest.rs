//! An archive directory's `manifest.json`: the archive's format, the log it was cut from and
//! its signed checkpoint at the time, and each partition file with its rows, its bytes' SHA-256
//! and the SHA-256 of its rows' hashes. Read strictly (unknown fields refused). Pure.

use serde::{Deserialize, Serialize};

/// The archive format this build writes and reads.
pub(crate) const FORMAT: &str = "event-audit-archive/1";

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The witnessed log's origin, when the log is witnessed.
    pub origin: Option<String>,
    /// When the archive was written (RFC 3339, UTC).
    pub created_at: String,
    /// The signed checkpoint note's text at archive time: the archived rows' leaves are proven
    /// against it.
    pub checkpoint: Option<String>,
    pub partitions: Vec<PartitionFile>,
}

/// One partition of `audit.events`, archived as one JSON Lines file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PartitionFile {
    /// The partition's table name.
    pub partition: String,
    /// The partition's range of bus times (RFC 3339, UTC): from, inclusive, to, exclusive.
    pub published_from: String,
    pub published_to: String,
    /// The number of rows (lines) in the file.
    pub rows: u64,
    /// The file's name, relative to the manifest's directory.
    pub file: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// SHA-256 of the rows' 32-byte row hashes concatenated in file order, lowercase hex.
    pub row_hashes_sha256: String,
    /// The rows' first and last leaf index in the witnessed log (none when the file is empty or
    /// the log is not witnessed).
    pub first_leaf: Option<u64>,
    pub last_leaf: Option<u64>,
}

/// Why `manifest.json` cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("manifest.json is not an archive manifest: {0}")]
    Json(#[from] serde_json::Error),
    #[error("manifest.json has format {found:?}; this build reads {FORMAT}")]
    Format { found: String },
    #[error("manifest.json: partition {partition:?}: `{field}` {why}")]
    Field {
        partition: String,
        field: &'static str,
        why: &'static str,
    },
}

impl Manifest {
    /// Reads `manifest.json`: its JSON, the format this build reads, each digest 64 lowercase
    /// hex digits and each leaf range in order.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let m: Manifest = serde_json::from_slice(bytes)?;
        if m.format != FORMAT {
            return Err(ManifestError::Format { found: m.format });
        }
        for p in &m.partitions {
            let field = |field, why| ManifestError::Field {
                partition: p.partition.clone(),
                field,
                why,
            };
            for (name, digest) in [
                ("sha256", &p.sha256),
                ("row_hashes_sha256", &p.row_hashes_sha256),
            ] {
                let hex = digest.len() == 64
                    && digest
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                if !hex {
                    return Err(field(name, "is not a SHA-256 in lowercase hex"));
                }
            }
            match (p.first_leaf, p.last_leaf) {
                (Some(a), Some(b)) if a > b => {
                    return Err(field("first_leaf", "is after `last_leaf`"))
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(field(
                        "first_leaf",
                        "and `last_leaf` are not both set or both null",
                    ))
                }
                _ => {}
            }
        }
        Ok(m)
    }

    /// The manifest as the pretty-printed JSON `manifest.json` holds.
    pub(crate) fn to_json_pretty(&self) -> String {
        // Strings, numbers and lists always serialise.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT.to_owned(),
            origin: Some("example.com/audit".to_owned()),
            created_at: "2026-11-26T03:00:00.123456Z".to_owned(),
            checkpoint: Some("example.com/audit\n12\nAAAA\n\nsigned\n".to_owned()),
            partitions: vec![PartitionFile {
                partition: "events_2026_10".to_owned(),
                published_from: "2026-10-01T00:00:00.000000Z".to_owned(),
                published_to: "2026-11-01T00:00:00.000000Z".to_owned(),
                rows: 12,
                file: "events_2026_10.jsonl".to_owned(),
                sha256: "ab".repeat(32),
                row_hashes_sha256: "0c".repeat(32),
                first_leaf: Some(0),
                last_leaf: Some(11),
            }],
        }
    }

    #[test]
    fn a_manifest_round_trips_and_is_read_strictly() {
        let m = manifest();
        let text = m.to_json_pretty();
        assert!(
            text.contains("\n  \"format\": \"event-audit-archive/1\""),
            "{text}"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).expect("parses"), m);
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        v["partitions"][0]["extra"] = 1.into();
        let e = Manifest::parse(v.to_string().as_bytes()).expect_err("an unknown field");
        assert!(e.to_string().contains("extra"), "{e}");
        let bad = |f: fn(&mut Manifest)| {
            let mut m = manifest();
            f(&mut m);
            Manifest::parse(m.to_json_pretty().as_bytes())
                .expect_err("refused")
                .to_string()
        };
        assert!(bad(|m| m.format = "event-audit-archive/2".into()).contains("format"));
        let e = bad(|m| m.partitions[0].sha256 = "AB".repeat(32));
        assert!(
            e.contains("events_2026_10") && e.contains("`sha256`"),
            "{e}"
        );
        let e = bad(|m| m.partitions[0].row_hashes_sha256.pop().map_or((), drop));
        assert!(e.contains("`row_hashes_sha256`"), "{e}");
        assert!(bad(|m| m.partitions[0].first_leaf = Some(12)).contains("after"));
        assert!(bad(|m| m.partitions[0].last_leaf = None).contains("both"));
        let empty = Manifest {
            origin: None,
            checkpoint: None,
            partitions: vec![],
            ..manifest()
        };
        assert_eq!(
            Manifest::parse(empty.to_json_pretty().as_bytes()).expect("parses"),
            empty
        );
    }
}
