//! The small HTTP server every event-audit binary runs (the daemon's listener, a mirror's, the
//! witness's): [`serve`] on a bound listener within [`limits`] (connections, heads, bodies and
//! time), TLS first when given, a drain on stop; and [`plain_paths`], the middleware that
//! refuses a path whose percent-decoding is not plain text.

pub mod limits;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use limits::{Limits, Slot, Slots, Watched};

/// A path whose percent-decoding is not UTF-8 text without control characters (`%00`,
/// `%FF`) is the client's mistake: 400, before any handler sees it.
pub async fn plain_paths(req: Request, next: Next) -> Response {
    if !path_is_plain(req.uri().path()) {
        return (
            StatusCode::BAD_REQUEST,
            "bad path: percent-encoded control characters or invalid UTF-8\n",
        )
            .into_response();
    }
    next.run(req).await
}

fn path_is_plain(path: &str) -> bool {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .is_ok_and(|s| !s.chars().any(char::is_control))
}

/// How long connections may finish their requests once the listener stops.
const DRAIN: Duration = Duration::from_secs(2);

/// Serves `router` on an already bound listener until `stop` is cancelled, within `limits`
/// (see [`limits`]); then lets requests in progress finish for a moment and closes the rest.
/// With `tls`, each connection's handshake comes first, within the head timeout.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Slots::new());
    let mut conns = tokio::task::JoinSet::new();
    let mut refused_at = None::<std::time::Instant>;
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            a = listener.accept() => a,
        };
        let sock = match accepted {
            Ok((sock, _)) => sock,
            Err(e) => {
                // Out of descriptors (or another accept error): say so, at most once a minute,
                // and give the closing connections a moment.
                if refused_at.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    tracing::warn!(error = %e, open = slots.len(), "HTTP accept failed");
                    refused_at = Some(std::time::Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some((id, slot)) = slots.admit(limits.max_connections) else {
            // Every connection is serving a request: this one waits for none.
            drop(sock);
            continue;
        };
        let _ = sock.set_nodelay(true);
        let watched = Watched::new(sock, &slot, &slots);
        let (router, slots, stop) = (router.clone(), slots.clone(), stop.clone());
        match tls.clone() {
            None => conns.spawn(serve_one(watched, router, limits, slot, id, slots, stop)),
            Some(acceptor) => conns.spawn(async move {
                let shaken =
                    tokio::time::timeout(limits.header_timeout, acceptor.accept(watched)).await;
                match shaken {
                    Ok(Ok(stream)) => {
                        serve_one(stream, router, limits, slot, id, slots, stop).await;
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(error = %e, "TLS handshake with a client failed");
                        slots.release(id);
                    }
                    Err(_) => slots.release(id),
                }
            }),
        };
    }
    let drained =
        tokio::time::timeout(DRAIN, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        conns.abort_all();
    }
}

/// One connection: HTTP/1.1 with the head limits, closed when idle too long, when its slot is
/// given to a newer connection, or (after its request in progress) when the listener stops or
/// it is older than `max_age`.
async fn serve_one<S>(
    sock: S,
    router: Router,
    limits: Limits,
    slot: Slot,
    id: i64,
    slots: Arc<Slots>,
    stop: CancellationToken,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(sock);
    let busy = slot.busy.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let mut router = router.clone();
        let busy = busy.clone();
        busy.fetch_add(1, Ordering::SeqCst);
        async move {
            let resp =
                tower_service::Service::call(&mut router, req.map(axum::body::Body::new)).await;
            busy.fetch_sub(1, Ordering::SeqCst);
            resp
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(limits.max_header_bytes)
        .max_headers(100);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut tick = tokio::time::interval((limits.idle_timeout / 4).max(Duration::from_millis(100)));
    let idle_ms = i64::try_from(limits.idle_timeout.as_millis()).unwrap_or(i64::MAX);
    let mut draining = false;
    let aged = async {
        match limits.max_age {
            Some(age) => tokio::time::sleep(age).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(aged);
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            _ = slot.close.cancelled() => break,
            _ = stop.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = &mut aged, if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = tick.tick() => {
                if slots.now() - slot.last.load(Ordering::SeqCst) > idle_ms {
                    break;
                }
            }
        }
    }
    slots.release(id);
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_and_invalid_utf8_in_paths_are_refused() {
        assert!(super::path_is_plain("/accounts/A-1%20B/events"));
        assert!(super::path_is_plain("/accounts/%C3%A9/events"));
        assert!(!super::path_is_plain("/accounts/%00/events"));
        assert!(!super::path_is_plain("/accounts/%0A/events"));
        assert!(!super::path_is_plain("/accounts/%FF/events"));
    }
}
