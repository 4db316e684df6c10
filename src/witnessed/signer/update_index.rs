//! The signer's account index: each round first brings the index up to the head
//! (`index::update`), so that the index's record is a row of the tree the round signs.

use std::time::Duration;

use tokio::sync::Mutex;

use super::Signer;

/// The index's time in the round at shutdown (updates are begun until it is spent).
const SHUTDOWN_BUDGET: Duration = Duration::from_secs(1);
/// The most rows an update of the round at shutdown indexes.
const SHUTDOWN_ROWS: u64 = 10_000;
/// While ingest is busy the index takes a tenth of each round (its cost on ingest stays about
/// that), while the log is quiet half of it.
const BUSY_SHARE: u32 = 10;
const QUIET_SHARE: u32 = 2;
/// The most time a round gives the index: a log far ahead
/// of its index is caught up over several rounds.
const MAX_BUDGET: Duration = Duration::from_secs(30);

impl Signer {
    /// The signer with the account index: each round first indexes what the log gained, and
    /// records the index's root as a row of the log, which the checkpoint it signs then covers.
    pub(crate) fn with_index(mut self, updater: crate::index::update::Updater) -> Signer {
        self.index = Some(Mutex::new(updater));
        self
    }

    /// The account index's updates of this round (a tenth of the interval while ingest is busy,
    /// half while the log is quiet; the rest next round). A failure is logged and counted, and
    /// signing goes on without it.
    pub(super) async fn update_index(&self) {
        let Some(index) = &self.index else {
            return;
        };
        let mut updater = index.lock().await;
        let (budget, rows) = match self.stopping.load(std::sync::atomic::Ordering::Relaxed) {
            true => (SHUTDOWN_BUDGET, SHUTDOWN_ROWS),
            false => {
                // Ingest busy (the log grew by more than the index would index in a tenth of
                // the round): the index takes a tenth of the round; the log quiet: half.
                let grown = updater.growth().await.unwrap_or(0) as f64;
                let busy = grown > updater.rate() * (self.interval / BUSY_SHARE).as_secs_f64();
                let share = if busy { BUSY_SHARE } else { QUIET_SHARE };
                (
                    (self.interval / share).clamp(SHUTDOWN_BUDGET, MAX_BUDGET),
                    crate::index::update::MAX_ROWS,
                )
            }
        };
        match updater.catch_up(budget, rows).await {
            Ok(done) => {
                if let Some(last) = done.last() {
                    let phases = |i: usize| done.iter().map(|u| u.phases[i]).sum::<f64>();
                    tracing::debug!(
                        updates = done.len(),
                        size = last.version,
                        labels = last.labels,
                        read_secs = phases(0),
                        label_secs = phases(1),
                        tree_secs = phases(2),
                        write_secs = phases(3),
                        "account index updated"
                    );
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "the account index was not updated (the checkpoint is signed without it; retried next round)")
            }
        }
    }
}
