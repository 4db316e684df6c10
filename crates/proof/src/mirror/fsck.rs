//! `tiles fsck`: a copy of a log (a directory, an `s3://` prefix, another daemon's `/log/`, a
//! mirror's copy under them) checked tile by tile against its newest checkpoint, as Tessera's
//! `cmd/fsck` does. The checkpoint is opened with the log's key; then every bundle is fetched in
//! order (8 at once, through the mirror's bounded reader, [`super::source`]), its entries pushed
//! onto a tree being rebuilt, and every hash tile that tree makes (full ones, and the partial
//! ones of the checkpoint's size) fetched and compared byte for byte; last, the rebuilt root is
//! compared with the signed one. A bundle whose entries hash to other leaves than its level-0
//! tile holds is the changed one when the root is not the signed one (else the tile is). Memory
//! is a tree's partial rows, the fetches in flight and at most [`MAX_NAMED`] findings; each
//! request is bounded by the reader's timeout and each object by its width's bytes; the work is
//! the objects of the signed size. A missing object stops the rebuild (the tree cannot go on
//! without it): the rest is still fetched, each object checked for its presence and form.
//! With the tree whole, the account index is rebuilt from its deltas and every root its records
//! state held against it ([`super::index::rebuild`]).

use futures::StreamExt;

use super::source::{FetchError, Source};
use crate::tlog::note::{self, Checkpoint, PublicKey};
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::{self, Kind, TileId, TILE_WIDTH};

/// Objects fetched at once.
const AT_ONCE: usize = 8;

/// The most findings named; beyond, they are counted.
pub const MAX_NAMED: usize = 1000;

/// Why a copy could not be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum FsckError {
    #[error("{0}")]
    Unusable(FetchError),
    #[error("{at}: {why} (is --public-key the log's key?)")]
    Key { at: String, why: String },
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    pub origin: String,
    pub size: u64,
    /// Tiles and bundles fetched and compared.
    pub checked: u64,
    /// One line per missing or wrong object (at most [`MAX_NAMED`]).
    pub findings: Vec<String>,
    /// Findings beyond those named.
    pub more: u64,
    /// Whether the tree rebuilt from the bundles has the signed root.
    pub root_ok: bool,
    /// The account index rebuilt from its deltas: updates whose roots hold, and labels.
    pub index: Option<(u64, u64)>,
}

impl Report {
    pub fn whole(&self) -> bool {
        self.findings.is_empty() && self.more == 0 && self.root_ok
    }

    fn found(&mut self, line: String) {
        if self.findings.len() < MAX_NAMED {
            self.findings.push(line);
        } else {
            self.more += 1;
        }
    }
}

/// A level-0 tile that differs from what its bundle's entries hash to.
struct Disagreement {
    bundle: String,
    tile: String,
}

/// Checks the copy at `source` against its newest checkpoint signed by `key`; `progress` is
/// told the leaves checked so far and the tree's size.
pub async fn fsck(
    source: &Source,
    key: &PublicKey,
    mut progress: impl FnMut(u64, u64),
) -> Result<Report, FsckError> {
    let (source, text) = source
        .locate(&key.name)
        .await
        .map_err(FsckError::Unusable)?;
    let cp: Checkpoint = note::open(&text, key).map_err(|e| FsckError::Key {
        at: source.shown("checkpoint"),
        why: e.to_string(),
    })?;
    let mut r = Report {
        origin: cp.origin.clone(),
        size: cp.size,
        ..Report::default()
    };
    let mut builder = Some(TileBuilder::new());
    let mut level0: Vec<Disagreement> = Vec::new();
    let mut upper: Vec<String> = Vec::new();
    let bundles = cp.size.div_ceil(TILE_WIDTH);
    let src = &source;
    let mut fetched = futures::stream::iter(0..bundles)
        .map(|i| async move {
            let width = (cp.size - i * TILE_WIDTH).min(TILE_WIDTH) as u16;
            let (b, t) = (TileId::entries(i, width), TileId::hashes(0, i, width));
            let (bundle, tile0) = futures::join!(src.tile(b), src.tile(t));
            (b, bundle, t, tile0)
        })
        .buffered(AT_ONCE);
    while let Some((bid, bundle, tid, tile0)) = fetched.next().await {
        r.checked += 2;
        let bundle = present(src, &mut r, &bid, bundle)?;
        let tile0 = present(src, &mut r, &tid, tile0)?;
        let Some(b) = builder.as_mut() else { continue };
        let Some(bundle) = bundle else {
            r.found(format!(
                "the tree cannot be rebuilt past leaf {}: the objects after it are checked for their presence and form only",
                bid.leaves().0
            ));
            builder = None;
            continue;
        };
        for e in tile::parse_bundle(&bid, &bundle).unwrap_or_default() {
            let _ = b.push(e);
        }
        let mut made = b.take_full();
        if bid.leaves().1 >= cp.size {
            made.extend(b.partials());
        }
        for (id, want) in made {
            if id.kind == Kind::Entries {
                continue;
            }
            let got = if id == tid {
                tile0.clone()
            } else {
                r.checked += 1;
                present(src, &mut r, &id, src.tile(id).await)?
            };
            match got {
                Some(g) if g == want => {}
                Some(g) if id.level() == 0 => level0.push(Disagreement {
                    bundle: src.shown(&bid.path()),
                    tile: format!("{} (sha256 {})", src.shown(&id.path()), sha256(&g)),
                }),
                Some(g) => upper.push(wrong(src, &id, &g, &want)),
                None => {}
            }
        }
        progress(bid.leaves().1.min(cp.size), cp.size);
    }
    r.root_ok = builder.as_ref().is_some_and(|b| b.root() == cp.root);
    judge(&mut r, level0, upper, builder.is_some(), &cp);
    if r.root_ok {
        let rebuilt = super::index::rebuild(src, cp.size)
            .await
            .map_err(FsckError::Unusable)?;
        if let Some(why) = rebuilt.broken {
            r.found(why);
        }
        if rebuilt.updates > 0 {
            r.index = Some((rebuilt.updates, rebuilt.labels));
        }
    }
    Ok(r)
}

/// Names the level-0 disagreements: the bundles when the root is not the signed one, else the
/// tiles; the higher tiles that differ (unless a changed bundle explains them); and the root.
fn judge(
    r: &mut Report,
    level0: Vec<Disagreement>,
    upper: Vec<String>,
    rebuilt: bool,
    cp: &Checkpoint,
) {
    if r.root_ok || level0.is_empty() {
        for line in upper {
            r.found(line);
        }
    }
    for d in level0 {
        r.found(match r.root_ok {
            true => format!("WRONG {}: holds other bytes than its bundle's entries hash to, under the signed root", d.tile),
            false => format!("WRONG {}: its entries hash to other leaves than {} holds, and the tree they make is not the signed one: the bundle was changed", d.bundle, d.tile),
        });
    }
    if rebuilt && !r.root_ok {
        r.found(format!(
            "the tree rebuilt from the bundles does not make the root the checkpoint signs at size {}",
            cp.size
        ));
    }
}

/// The object's bytes; a missing or malformed one named (`None`); an unreachable copy ends the
/// check.
fn present(
    src: &Source,
    r: &mut Report,
    id: &TileId,
    got: Result<Vec<u8>, FetchError>,
) -> Result<Option<Vec<u8>>, FsckError> {
    match got {
        Ok(b) => Ok(Some(b)),
        Err(FetchError::NotFound { .. }) => {
            r.found(format!("MISSING {}", src.shown(&id.path())));
            Ok(None)
        }
        Err(e) if e.is_unreachable() => Err(FsckError::Unusable(e)),
        Err(e) => {
            r.found(format!("WRONG {e}"));
            Ok(None)
        }
    }
}

fn wrong(src: &Source, id: &TileId, got: &[u8], want: &[u8]) -> String {
    format!(
        "WRONG {}: holds other bytes than the tree's (sha256 {}, the tree's {})",
        src.shown(&id.path()),
        sha256(got),
        sha256(want)
    )
}

fn sha256(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    crate::hex(&Sha256::digest(b))[..16].to_owned()
}
