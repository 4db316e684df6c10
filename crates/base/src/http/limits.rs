//! What keeps the HTTP listener from starving the daemon: a connection must send its request
//! head within `header_timeout` (slow clients are closed, and so are kept-alive connections
//! that send nothing more), one that moves no byte for `idle_timeout` is closed, one older than
//! `max_age` (when set: the witness) closes after its request in progress, request heads
//! over `max_header_bytes` get 431, and at most `max_connections` are served at once: at the
//! cap, a new connection replaces the oldest one that is not serving a request (so `/metrics`
//! and `/healthz` keep answering however many idle connections someone opens). At start-up the
//! soft descriptor limit is raised to the hard one, and the cap must leave room for PostgreSQL,
//! NATS and the REST client.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::config::HttpSettings;

/// Descriptors kept free for everything but HTTP: the pool, NATS, the REST client, files.
pub const RESERVED_DESCRIPTORS: u64 = 128;

/// The listener's limits, from the settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
    /// How long a connection may stay open at most (none: as long as it is used).
    pub max_age: Option<Duration>,
}

impl Limits {
    pub fn from_settings(s: &HttpSettings) -> Limits {
        Limits {
            header_timeout: s.header_timeout.get(),
            idle_timeout: s.idle_timeout.get(),
            max_connections: s.max_connections,
            max_header_bytes: s.max_header_bytes,
            max_age: None,
        }
    }
}

/// The descriptor limit cannot hold the HTTP cap and the daemon's own connections.
#[derive(Debug, thiserror::Error)]
#[error("the open-file limit is {soft} (hard limit {hard}): too low for `http.max_connections` = {cap} plus {RESERVED_DESCRIPTORS} descriptors for PostgreSQL, NATS and the REST client; raise `ulimit -n` or lower --http-max-connections")]
pub struct DescriptorError {
    soft: u64,
    hard: u64,
    cap: usize,
}

/// Raises the soft open-file limit to the hard one and checks that `cap` HTTP connections
/// leave [`RESERVED_DESCRIPTORS`] free. Returns the soft limit.
pub fn reserve_descriptors(cap: usize) -> Result<u64, DescriptorError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed by pointer.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if got != 0 {
        return Ok(u64::MAX);
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    let (soft, hard): (u64, u64) = (lim.rlim_cur, lim.rlim_max);
    if (cap as u64).saturating_add(RESERVED_DESCRIPTORS) > soft {
        return Err(DescriptorError { soft, hard, cap });
    }
    Ok(soft)
}

fn now_ms(origin: Instant) -> i64 {
    i64::try_from(origin.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// One served connection, as the listener sees it.
#[derive(Clone)]
pub struct Slot {
    /// Requests in progress on it.
    pub busy: Arc<AtomicUsize>,
    /// Milliseconds (since the listener started) of its last byte either way.
    pub last: Arc<AtomicI64>,
    /// Cancelled to close it at once.
    pub close: CancellationToken,
    opened: Instant,
}

/// The connections being served, for the cap.
pub struct Slots {
    origin: Instant,
    next: AtomicI64,
    open: Mutex<HashMap<i64, Slot>>,
}

impl Slots {
    pub fn new() -> Slots {
        Slots {
            origin: Instant::now(),
            next: AtomicI64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Milliseconds since the listener started.
    pub fn now(&self) -> i64 {
        now_ms(self.origin)
    }

    /// A slot for a new connection, making room at the cap by closing the oldest connection
    /// that serves no request; `None` when every one is busy.
    pub fn admit(&self, cap: usize) -> Option<(i64, Slot)> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= cap {
            let oldest = open
                .iter()
                .filter(|(_, s)| s.busy.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, s)| s.opened)
                .map(|(id, _)| *id)?;
            if let Some(s) = open.remove(&oldest) {
                s.close.cancel();
            }
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let slot = Slot {
            busy: Arc::new(AtomicUsize::new(0)),
            last: Arc::new(AtomicI64::new(self.now())),
            close: CancellationToken::new(),
            opened: Instant::now(),
        };
        open.insert(id, slot.clone());
        Some((id, slot))
    }

    pub fn release(&self, id: i64) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for Slots {
    fn default() -> Self {
        Self::new()
    }
}

/// A socket that notes when it last moved a byte.
pub struct Watched {
    inner: TcpStream,
    last: Arc<AtomicI64>,
    origin: Instant,
}

impl Watched {
    pub fn new(inner: TcpStream, slot: &Slot, slots: &Slots) -> Watched {
        Watched {
            inner,
            last: slot.last.clone(),
            origin: slots.origin,
        }
    }

    fn touch(&self) {
        self.last.store(now_ms(self.origin), Ordering::SeqCst);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let slots = Slots::new();
        let (a, sa) = slots.admit(2).expect("room");
        let (_b, sb) = slots.admit(2).expect("room");
        sa.busy.store(1, Ordering::SeqCst);
        let (_c, _) = slots.admit(2).expect("b makes room");
        assert!(sb.close.is_cancelled() && !sa.close.is_cancelled());
        assert_eq!(slots.len(), 2);
        slots.release(a);
        assert_eq!(slots.len(), 1);
    }

    #[test]
    fn every_connection_busy_means_no_room() {
        let slots = Slots::new();
        let (_, s) = slots.admit(1).expect("room");
        s.busy.store(1, Ordering::SeqCst);
        assert!(slots.admit(1).is_none());
    }

    #[test]
    fn the_soft_descriptor_limit_is_raised_and_checked() {
        let soft = reserve_descriptors(1).expect("a limit above 129");
        assert!(soft > RESERVED_DESCRIPTORS);
        assert!(reserve_descriptors(usize::MAX).is_err());
    }
}
