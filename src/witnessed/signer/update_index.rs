//! The signer's account index: each round first brings the index up to the head
//! (`index::update`), so that the index's record is a row of the tree the round signs.

use std::time::Duration;

use tokio::sync::Mutex;

use super::Signer;

/// The index's time in the round at shutdown (updates are begun until it is spent).
const SHUTDOWN_BUDGET: Duration = Duration::from_secs(1);
/// The most rows an update of the round at shutdown indexes.
const SHUTDOWN_ROWS: u64 = 10_000;
/// The most time a round gives the index (half an interval, at most this): a log far ahead
/// of its index is caught up over several rounds.
const MAX_BUDGET: Duration = Duration::from_secs(30);

impl Signer {
    /// The signer with the account index: each round first indexes what the log gained, and
    /// records the index's root as a row of the log, which the checkpoint it signs then covers.
    pub(crate) fn with_index(mut self, updater: crate::index::update::Updater) -> Signer {
        self.index = Some(Mutex::new(updater));
        self
    }

    /// The account index's updates of this round (for half an interval at most; the rest
    /// next round). A failure is logged and counted, and signing goes on without it.
    pub(super) async fn update_index(&self) {
        let Some(index) = &self.index else {
            return;
        };
        let (budget, rows) = match self.stopping.load(std::sync::atomic::Ordering::Relaxed) {
            true => (SHUTDOWN_BUDGET, SHUTDOWN_ROWS),
            false => (
                (self.interval / 2).clamp(SHUTDOWN_BUDGET, MAX_BUDGET),
                crate::index::update::MAX_ROWS,
            ),
        };
        match index.lock().await.catch_up(budget, rows).await {
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
