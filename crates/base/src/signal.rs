//! The process's stop: a token cancelled on SIGTERM or SIGINT, for every binary's long-running command.

use tokio_util::sync::CancellationToken;

/// A token cancelled on SIGTERM or SIGINT; `then` says what the process does next (logged
/// as `shutdown requested: {then}`), each command its own: the daemon finishes the batches
/// in hand, the witness the requests it is answering.
pub fn shutdown_signal(then: &'static str) -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = term => {},
            _ = tokio::signal::ctrl_c() => {},
        }
        tracing::info!("shutdown requested: {then}");
        t.cancel();
    });
    token
}
