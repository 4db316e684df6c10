//! The signer's publishing side: the queue of signed checkpoints, each opened with the signer's
//! own key before it goes anywhere, cosigned by the witness policy's quorum when there is one
//! (and the remembered checkpoint submitted once at start-up, so a witness that has seen more
//! stops the signer at once), then written to the directory and the stream, in order.

use crate::db::DbError;
use crate::row::reverdict::chain_order;
use crate::tlog::merkle::MemTree;
use crate::tlog::note::{self, PublicKey};

use super::publish;
use super::sign::Refusal;
use super::submit::Witnesses;
use super::{CheckpointError, Round, Signer};
use crate::log::checkpoints::{CheckpointStore, LOG_EVENTS, LOG_REVERDICTS};
use crate::log::signed::Memory;

impl Signer {
    /// Publishes every queued note of each log in order (cosigned first when there is a
    /// policy); stops a log at the first that cannot go out (that failure is returned beside
    /// the outcome: what was published stays marked).
    pub(super) async fn publish(
        &self,
        tx: &mut sqlx::PgConnection,
        out: &mut Round,
    ) -> Result<(Result<(), Refusal>, Option<CheckpointError>), CheckpointError> {
        let mut failed: Option<CheckpointError> = None;
        for (log, origin) in self.logs() {
            let queue = CheckpointStore::newer_or_queued(tx, log, i64::MAX).await?;
            let mut pending = queue.len();
            for c in queue {
                let ok = note::open(&c.note, &self.public)
                    .is_ok_and(|cp| cp.origin == origin && cp.size as i64 == c.tree_size);
                if !ok {
                    self.foreign(log, c.tree_size);
                    pending -= 1;
                    continue;
                }
                let (text, lines) = match &self.witnesses {
                    None => (c.note.clone(), None),
                    Some(w) => {
                        let mut w = w.lock().await;
                        match self
                            .cosign(&mut w, log, &origin, &c.note, c.tree_size)
                            .await?
                        {
                            Ok(Some(lines)) => {
                                (note::with_signatures(&c.note, &lines), Some(lines))
                            }
                            Ok(None) => break,
                            Err(r) => return Ok((Err(r), failed)),
                        }
                    }
                };
                if let Err(e) = self.send(log, &origin, c.tree_size, &text).await {
                    failed = Some(e);
                    break;
                }
                CheckpointStore::mark_published(tx, log, c.tree_size, lines.as_deref()).await?;
                self.remember_cosigned(&origin, c.tree_size, &text);
                pending -= 1;
                out.published += 1;
                if log == LOG_EVENTS {
                    self.metrics.size.set(c.tree_size);
                    self.metrics.time.set(chrono::Utc::now().timestamp());
                }
            }
            out.backlog += pending;
        }
        Ok((Ok(()), failed))
    }

    /// The policy witnesses' cosignature lines on one note, once the quorum cosigned
    /// (`Ok(None)`: not yet, retried next round), or the evidence that makes the signer stop.
    async fn cosign(
        &self,
        w: &mut Witnesses,
        log: &str,
        origin: &str,
        note_text: &str,
        size: i64,
    ) -> Result<Result<Option<String>, Refusal>, CheckpointError> {
        let size = u64::try_from(size).unwrap_or(0);
        let leaves = if log == LOG_REVERDICTS {
            let mut tx = self
                .store
                .db()
                .pool()
                .acquire()
                .await
                .map_err(|e| DbError::Sql {
                    action: "read the re-verdict run ends",
                    place: None,
                    cause: e,
                })?;
            chain_order(&CheckpointStore::run_ends(&mut tx).await?)
        } else {
            Vec::new()
        };
        let mem = MemTree {
            leaves: leaves
                .iter()
                .map(|l| crate::tlog::merkle::leaf_hash(l))
                .collect(),
        };
        let trees = &self.trees;
        // A proof the stored tree cannot make (a leaf without its row, a stored subtree gone)
        // is the database's corruption, not the witness's unavailability: a refusal.
        let corrupt = std::sync::Mutex::new(None);
        let got = w
            .submit(origin, note_text, size, |old| {
                let (mem, corrupt) = (&mem, &corrupt);
                async move {
                    if log == LOG_REVERDICTS {
                        if (mem.leaves.len() as u64) < size {
                            return Err("the re-verdict runs changed".to_owned());
                        }
                        Ok(mem.consistency(old, size))
                    } else {
                        trees.consistency(old, size).await.map_err(|e| {
                            if let DbError::Corrupt { what, why } = e {
                                if let Ok(mut c) = corrupt.lock() {
                                    c.get_or_insert((old, what, why));
                                }
                            }
                            e.to_string()
                        })
                    }
                }
            })
            .await;
        if let Some((from, what, why)) = corrupt.into_inner().ok().flatten() {
            return Ok(Err(Refusal::Unprovable {
                log: origin.to_owned(),
                from,
                size,
                what,
                why,
            }));
        }
        for f in &got.failures {
            self.metrics.witness_failures.inc();
            if f.is_evidence() {
                return Ok(Err(Refusal::Witness {
                    log: origin.to_owned(),
                    why: f.to_string(),
                }));
            }
        }
        if !w.policy.met_by(&got.by) {
            let why: Vec<String> = got.failures.iter().map(ToString::to_string).collect();
            tracing::warn!(log, size, cosigned = got.by.len(), quorum = %w.policy.describe(), failures = %why.join("; "), "checkpoint waits for the witnesses' quorum; retried at the next round");
            return Ok(Ok(None));
        }
        Ok(Ok(Some(got.lines)))
    }

    /// Publishes one note to the directory and the stream.
    async fn send(
        &self,
        log: &str,
        origin: &str,
        size: i64,
        text: &str,
    ) -> Result<(), CheckpointError> {
        if let Some(dir) = &self.dir {
            publish::write_dir(dir, log, size, text).map_err(|source| CheckpointError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        publish::publish(&self.bus, &self.stream, origin, size, text, self.limit).await?;
        Ok(())
    }

    /// Keeps the cosigned note in the memory when it is the one remembered.
    fn remember_cosigned(&self, origin: &str, size: i64, text: &str) {
        let Ok(Some(mut m)) = Memory::load(&self.state, &self.public) else {
            return;
        };
        if m.logs.get(origin).is_some_and(|r| r.size() as i64 == size) {
            if let Some(note) = m.logs.note_mut(origin) {
                *note = text.to_owned();
            }
            if let Err(e) = m.save(&self.state, &self.public) {
                tracing::warn!(error = %e, "the cosigned checkpoint could not be kept in the signer's memory");
            }
        }
    }

    /// At the first round with a witness policy: the remembered checkpoint of each log
    /// submitted again, so that a witness which has cosigned more (the signer's memory and the
    /// database both rolled back) stops the signer before it publishes anything.
    pub(super) async fn cross_check(&self) -> Result<Result<(), Refusal>, CheckpointError> {
        let Some(w) = &self.witnesses else {
            return Ok(Ok(()));
        };
        let mut checked = self.cross_checked.lock().await;
        if *checked {
            return Ok(Ok(()));
        }
        let Ok(Some(memory)) = Memory::load(&self.state, &self.public) else {
            return Ok(Ok(()));
        };
        let mut all = true;
        let mut w = w.lock().await;
        for (log, origin) in self.logs() {
            let Some(r) = memory.logs.get(&origin) else {
                continue;
            };
            let plain = plain_note(&r.note, &self.public);
            match self
                .cosign(&mut w, log, &origin, &plain, r.size() as i64)
                .await?
            {
                Ok(Some(_)) => {}
                Ok(None) => all = false,
                Err(refusal) => return Ok(Err(refusal)),
            }
        }
        *checked = all;
        Ok(Ok(()))
    }
}

/// A note with only its text and the log key's own signature (cosignatures removed).
pub(super) fn plain_note(text: &str, key: &PublicKey) -> String {
    let body: String = text
        .split_inclusive('\n')
        .take_while(|l| !l.starts_with(note::DASH))
        .collect();
    format!("{body}{}", signature_of(text, key))
}

/// The signature line(s) of `key` in a note (with their newlines).
fn signature_of(text: &str, key: &PublicKey) -> String {
    let prefix = format!("{}{} ", note::DASH, key.name);
    text.split_inclusive('\n')
        .filter(|l| l.starts_with(&prefix))
        .collect()
}
