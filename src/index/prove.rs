//! A label's proof at an index version, read back from the stored index: the depth-8 nodes, the
//! depth-16 nodes under the label's first byte and the labels of its bucket as of that version
//! (and the lone label a path above depth 16 ends at), made into `tlog::index::Proof`.

use sqlx::PgConnection;

use crate::db::DbError;
use crate::log::index as store;
use crate::tlog::index::path::{self, range, Levels, PathError};
use crate::tlog::index::{Label, Node, Proof};

/// The proof of `label` in the index as of `version`; `None` when the stored levels do not
/// make one another's hashes.
pub(crate) async fn proof_at(
    tx: &mut PgConnection,
    label: &Label,
    version: i64,
) -> Result<Option<Proof>, DbError> {
    let top: Vec<(u8, Node)> = store::nodes(tx, 8, (0, 255), version)
        .await?
        .into_iter()
        .map(|(p, n)| (u8::try_from(p).unwrap_or(0), n))
        .collect();
    let lo = u16::from(label[0]) << 8;
    let mid: Vec<(u8, Node)> = store::nodes(tx, 16, (lo, lo | 0xff), version)
        .await?
        .into_iter()
        .map(|(p, n)| (p.to_be_bytes()[1], n))
        .collect();
    let bucket = store::values_in(tx, &[range(label, 16)], version).await?;
    let levels = Levels {
        top: &top,
        mid: &mid,
        bucket: &bucket,
    };
    match path::prove(label, &levels, None) {
        Ok(p) => Ok(Some(p)),
        Err(PathError::Lone { lo, hi }) => {
            let lone = store::values_in(tx, &[(lo, hi)], version).await?;
            Ok(path::prove(label, &levels, lone.first()).ok())
        }
        Err(PathError::Inconsistent) => Ok(None),
    }
}
