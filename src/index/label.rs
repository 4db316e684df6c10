//! Identifiers to labels: each identifier's label is the VRF output (ECVRF-EDWARDS25519-SHA512-TAI
//! over `tlog::index::alpha`) under the log's index key, stored once with its proof in
//! `audit.index_labels`, found again by the identifier's keyed hash (`SHA-256(pepper ‖
//! identifier)`, the pepper of `audit.erasure_pepper`). Remembered per process by that hash
//! (never by the identifier), bounded: the memory is emptied when it reaches [`MAX_CACHED`]
//! labels, and whenever the log records another erasure (so that a label an erasure forgot is
//! stored again if its identifier comes back). The identifiers are personal data: they stay in
//! this process's memory for one update, never logged.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use super::IndexError;
use crate::log::index::{self as store, StoredLabel};
use crate::tlog::index::{alpha, label_of, Label};
use crate::tlog::vrf::VrfKey;

/// The most labels remembered at once.
pub(crate) const MAX_CACHED: usize = 200_000;

/// Makes and finds labels with the log's index key.
pub(crate) struct Labeler {
    key: Arc<VrfKey>,
    pepper: Option<Vec<u8>>,
    cache: HashMap<[u8; 32], Label>,
    /// The erasures the log recorded when the cache was last checked.
    erasures: i64,
    /// VRF proofs made (labels new to the log).
    pub(crate) evaluated: u64,
}

impl Labeler {
    pub(crate) fn new(key: VrfKey) -> Labeler {
        Labeler {
            key: Arc::new(key),
            pepper: None,
            cache: HashMap::new(),
            erasures: -1,
            evaluated: 0,
        }
    }

    /// The index key's public half.
    pub(crate) fn public(&self) -> [u8; 32] {
        self.key.public()
    }

    fn subject(pepper: &[u8], id: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(pepper);
        h.update(id.as_bytes());
        h.finalize().into()
    }

    /// The label of each of `ids`, and the labels new to the log (to be stored with the update).
    pub(crate) async fn labels(
        &mut self,
        tx: &mut PgConnection,
        ids: &BTreeSet<&str>,
    ) -> Result<(HashMap<String, Label>, Vec<StoredLabel>), IndexError> {
        let pepper = match &self.pepper {
            Some(p) => p.clone(),
            None => {
                let p = store::pepper(tx).await?;
                self.pepper = Some(p.clone());
                p
            }
        };
        let erasures = store::erasures(tx).await?;
        if erasures != self.erasures {
            self.cache.clear();
            self.erasures = erasures;
        }
        let mut out = HashMap::with_capacity(ids.len());
        let mut missing: Vec<(&str, [u8; 32])> = Vec::new();
        for id in ids {
            let s = Self::subject(&pepper, id);
            match self.cache.get(&s) {
                Some(l) => {
                    out.insert((*id).to_owned(), *l);
                }
                None => missing.push((id, s)),
            }
        }
        if missing.is_empty() {
            return Ok((out, Vec::new()));
        }
        let subjects: Vec<[u8; 32]> = missing.iter().map(|(_, s)| *s).collect();
        let known: HashMap<[u8; 32], Label> = store::labels_of_subjects(tx, &subjects)
            .await?
            .into_iter()
            .map(|s| (s.subject, s.label))
            .collect();
        let mut fresh: Vec<(String, [u8; 32])> = Vec::new();
        for (id, s) in missing {
            match known.get(&s) {
                Some(l) => {
                    out.insert(id.to_owned(), *l);
                    self.remember(s, *l);
                }
                None => fresh.push((id.to_owned(), s)),
            }
        }
        // The new identifiers' proofs, off the async workers (about 0.1 ms each).
        let key = self.key.clone();
        let proven = tokio::task::spawn_blocking(move || {
            fresh
                .into_iter()
                .map(|(id, s)| {
                    let (proof, beta) = key.prove(&alpha(&id));
                    (id, s, label_of(&beta), proof)
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| IndexError::Labels(e.to_string()))?;
        let mut new = Vec::with_capacity(proven.len());
        for (id, subject, label, proof) in proven {
            self.evaluated += 1;
            self.remember(subject, label);
            out.insert(id, label);
            new.push(StoredLabel {
                subject,
                label,
                proof: proof.to_vec(),
            });
        }
        Ok((out, new))
    }

    fn remember(&mut self, subject: [u8; 32], label: Label) {
        if self.cache.len() >= MAX_CACHED {
            self.cache.clear();
        }
        self.cache.insert(subject, label);
    }
}
