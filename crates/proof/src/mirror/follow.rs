//! `mirror --follow`: a pull every interval until stopped, never exiting on a failure: an
//! unreachable or refused log is retried at the next interval, and once the log signed a tree
//! that contradicts the copy (rollback or fork) the copy is kept as it is from then on (pulls
//! still check, and report each new pair of notes). With a metrics address, `GET /metrics`
//! serves [`super::metrics`] in the Prometheus text format.

use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::metrics::MirrorMetrics;
use super::{pull, Log, PullError, Pulled};
use crate::http::limits::Limits;
use crate::metrics::Registry;

/// What `--follow` runs with.
pub struct Follow {
    pub log: Log,
    pub dir: crate::tiles::Tiles,
    pub every: Duration,
    /// Where `/metrics` is served, already bound.
    pub metrics: Option<TcpListener>,
}

/// Pulls every `every` until `stop` is cancelled.
pub async fn run(f: Follow, stop: CancellationToken) {
    let registry = Registry::new();
    let metrics = MirrorMetrics::new(&registry);
    let server = f.metrics.map(|listener| {
        let router = Router::new()
            .route("/metrics", get(render))
            .with_state(registry.clone());
        let limits = Limits::from_settings(&crate::config::HttpSettings::default());
        tokio::spawn(crate::http::serve(
            listener,
            router,
            limits,
            None,
            stop.clone(),
        ))
    });
    let mut tick = tokio::time::interval(f.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let write = !metrics.is_inconsistent();
        let result = tokio::select! {
            _ = stop.cancelled() => break,
            r = pull::pull(&f.log, &f.dir, write) => r,
        };
        let result = match result {
            Ok(Pulled::Added { from, size, .. }) if !write => Err(PullError::Refused(format!(
                "the log now signs {size} leaves extending the copy's {from}, but it contradicted the copy before: the copy is kept as it is (investigate, then restart the mirror)"
            ))),
            other => other,
        };
        metrics.pulled(&result);
    }
    if let Some(s) = server {
        let _ = s.await;
    }
}

async fn render(State(r): State<Registry>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::metrics::render(&r),
    )
}
