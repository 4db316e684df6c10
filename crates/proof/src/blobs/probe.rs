//! A store proved before it is trusted: before the first write to a location, a probe object
//! (`.event-audit-probe-<random hex>` under the prefix) is created, then created again with other
//! bytes; a store that keeps `If-None-Match: *` refuses the second create. One that takes it
//! (Garage, older s3proxy, many emulators) would silently replace a full tile or an archive file:
//! it is refused ([`BlobError::Unsupported`], naming `object_store.conditional_writes`), unless
//! the store reads first (`read-first`), where every create reads the key before the put and
//! after it. The probe is removed afterwards (a key that may not delete leaves it, with a WARN).
//! A directory is not probed: its create links a file into place, and `link(2)` refuses a name
//! that exists on every POSIX file system.

use bytes::Bytes;

use super::{BlobError, Mode, Put, Store, Wrote};

/// The prefix of the probe's key (a random suffix follows, so that two probes never meet).
pub const PROBE_PREFIX: &str = ".event-audit-probe-";

/// What the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// A directory, or a store that refused the second create.
    Honoured,
    /// The store took the second create; it is used because every create reads first.
    ReadFirst,
}

impl Proof {
    /// For the probe's metric: 1 honoured, 0 read-first.
    pub fn value(self) -> i64 {
        match self {
            Proof::Honoured => 1,
            Proof::ReadFirst => 0,
        }
    }
}

impl Store {
    /// Proves that a create at this store never replaces other bytes (see the module's text).
    /// `what` names the location for the log lines (`tiles`, `archive`, `mirror`).
    pub async fn prove(&self, what: &str) -> Result<Proof, BlobError> {
        let Store::S3(s) = self else {
            return Ok(Proof::Honoured);
        };
        let key = format!("{PROBE_PREFIX}{:016x}", rand::random::<u64>());
        let create = Put {
            mode: Mode::Create,
            ..Put::default()
        };
        let first = Bytes::from_static(b"event-audit probe: first create\n");
        let second = Bytes::from_static(b"event-audit probe: second create, other bytes\n");
        s.put_conditional(&key, first, &create).await?;
        let taken = match s.put_conditional(&key, second, &create).await {
            Err(BlobError::Conflict { .. }) => false,
            Ok(Wrote::New) => true,
            Ok(Wrote::Same) => false,
            Err(e) => {
                self.remove_probe(&key).await;
                return Err(e);
            }
        };
        self.remove_probe(&key).await;
        match (taken, s.reads_first()) {
            (false, read_first) => {
                if read_first {
                    tracing::warn!(store = %self.place(), location = what, "object_store.conditional_writes = \"read-first\": every create reads the key first and reads it back after the put; two writers racing on one key are no longer excluded (this store refused the probe's second create: \"require\" would do)");
                }
                Ok(Proof::Honoured)
            }
            (true, true) => {
                tracing::warn!(store = %self.place(), location = what, "the store ignores conditional writes (it took a second create of its probe object): object_store.conditional_writes = \"read-first\", so every create reads the key first and reads it back after the put; two writers racing on one key are no longer excluded");
                Ok(Proof::ReadFirst)
            }
            (true, false) => Err(BlobError::Unsupported {
                place: self.place().to_owned(),
                what: "a conditional create (If-None-Match: *)",
                why: format!("the store took a second create of {key} with other bytes, so a full tile or an archive file there could be silently overwritten; use a store that refuses it (AWS S3, MinIO, R2, Ceph RGW), or set object_store.conditional_writes = \"read-first\" in the settings file"),
            }),
        }
    }

    async fn remove_probe(&self, key: &str) {
        if let Err(e) = self.delete(key).await {
            tracing::warn!(error = %e, "the store's probe object stays (remove it by hand; nothing reads it)");
        }
    }
}
