//! The signer's tiles: at the end of each round (under its lock), the tile directory or bucket
//! brought to the newest published checkpoint (`witnessed::tile_writer`).

use super::{CheckpointError, Signer};
use crate::log::checkpoints::CheckpointStore;
use crate::witnessed::tile_writer::Outcome;

impl Signer {
    /// Brings the tile directory to the newest published checkpoint (under the round's lock);
    /// a failure is logged and counted, and retried next round.
    pub(super) async fn write_tiles(
        &self,
        tx: &mut sqlx::PgConnection,
    ) -> Result<(), CheckpointError> {
        let Some(tiles) = &self.tiles else {
            return Ok(());
        };
        let Some(note) = CheckpointStore::newest_published(tx).await? else {
            return Ok(());
        };
        let started = std::time::Instant::now();
        let tapped = self.tapped.lock().await.take();
        let rows = tapped.as_ref().map(|(from, rows)| (*from, rows.as_slice()));
        match tiles.lock().await.publish(&self.trees, &note, rows).await {
            Ok(Outcome::Wrote { from, size }) => {
                tracing::debug!(
                    from,
                    size,
                    ms = started.elapsed().as_millis() as u64,
                    "tiles written"
                )
            }
            Ok(Outcome::Current { .. }) => {}
            Err(e) => {
                self.metrics.tiles_failures.inc();
                tracing::warn!(error = %e, "the log's tiles were not written (the served checkpoint stays the previous one); retried next round");
            }
        }
        Ok(())
    }
}
