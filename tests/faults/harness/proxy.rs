//! A TCP fault proxy: forwards 127.0.0.1:port to an upstream, with a mode switchable at run time.
//!
//! The mode acts on new and on existing connections. Every connection runs in its own task that
//! watches the shared mode (a `tokio::sync::watch`):
//!
//! | mode | new connections | existing connections |
//! | --- | --- | --- |
//! | `Pass` | forwarded | forwarded |
//! | `Refuse` | refused (the listener is closed: ECONNREFUSED) | reset (RST) |
//! | `Blackhole` | accepted, never forwarded nor answered | silent both ways, kept open |
//! | `Stall` | forwarded | silent both ways, kept open |
//! | `Latency(d)` | forwarded, `d` added per chunk and direction | the same |
//! | `Reset` | forwarded | reset once (SO_LINGER 0, then close); the mode then is `Pass` |
//!
//! "Silent" means no byte is read or written and no FIN or RST is sent; data already read is held
//! and forwarded when the mode allows it again (a healed partition). Limits of a user-space proxy:
//! the proxy's kernel still completes handshakes and ACKs (and answers TCP keepalive probes), so a
//! client sees its writes accepted until the socket buffers fill; only timeouts at the application
//! level (or `TCP_USER_TIMEOUT` once buffers are full) can detect a blackhole made here.
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does with traffic; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Mode {
    #[default]
    Pass,
    Refuse,
    Blackhole,
    Stall,
    Latency(Duration),
    Reset,
}

/// Counters, as a snapshot: connections accepted since start and open now, bytes forwarded
/// client → upstream (`up`) and back (`down`), connections the proxy reset (by mode, or when the
/// upstream refused).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProxyStats {
    pub accepted: u64,
    pub active: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub resets: u64,
}

/// The shared state: the mode, the connection ids below which connections are reset (and, under
/// `Stall`, silent), and a generation bumped on every change and acknowledged by the acceptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct State {
    mode: Mode,
    reset_below: u64,
    stall_below: u64,
    generation: u64,
    /// Where new connections go, once [`FaultProxy::retarget`] moved them.
    upstream: Option<SocketAddr>,
}

impl State {
    fn must_reset(&self, id: u64) -> bool {
        id < self.reset_below
    }

    /// `Some(delay)` when connection `id` may forward now, `None` while it must stay silent.
    fn forwarding(&self, id: u64) -> Option<Duration> {
        match self.mode {
            Mode::Pass | Mode::Reset => Some(Duration::ZERO),
            Mode::Latency(d) => Some(d),
            Mode::Stall if id >= self.stall_below => Some(Duration::ZERO),
            Mode::Stall | Mode::Blackhole | Mode::Refuse => None,
        }
    }
}

#[derive(Default)]
struct Counters {
    next_id: AtomicU64,
    accepted: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    resets: AtomicU64,
    open: Mutex<HashSet<u64>>,
}

/// The proxy. Dropping it closes the listener and resets every connection.
pub(crate) struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    tx: watch::Sender<State>,
    applied: watch::Receiver<u64>,
    counters: Arc<Counters>,
    acceptor: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on 127.0.0.1 (a free port) in `Pass` mode, forwarding to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fault proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (tx, rx) = watch::channel(State::default());
        let (applied_tx, applied) = watch::channel(0);
        let counters = Arc::new(Counters::default());
        let acceptor = tokio::spawn(accept_loop(
            listener,
            addr,
            upstream,
            rx,
            applied_tx,
            counters.clone(),
        ));
        FaultProxy {
            addr,
            upstream,
            tx,
            applied,
            counters,
            acceptor,
        }
    }

    /// The address clients connect to.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address traffic is forwarded to.
    pub(crate) fn upstream(&self) -> SocketAddr {
        self.tx.borrow().upstream.unwrap_or(self.upstream)
    }

    /// Sends new connections to `upstream` from now on and resets the open ones (a failover
    /// behind a stable address, as a TCP proxy or a DNS switch does it).
    pub(crate) async fn retarget(&self, upstream: SocketAddr) {
        let first_new = self.counters.next_id.load(Ordering::SeqCst);
        self.tx.send_modify(|s| {
            s.generation += 1;
            s.upstream = Some(upstream);
            s.reset_below = first_new;
        });
        self.wait_closed_below(first_new).await;
    }

    /// The mode in force (`Reset` reads back as `Pass` once applied).
    pub(crate) fn mode(&self) -> Mode {
        self.tx.borrow().mode
    }

    /// Switches the mode. Returns once the listener has applied it and the connections it resets
    /// (under `Refuse` and `Reset`) are closed (at most 2 s).
    pub(crate) async fn set_mode(&self, mode: Mode) {
        let first_new = self.counters.next_id.load(Ordering::SeqCst);
        let mut generation = 0;
        self.tx.send_modify(|s| {
            s.generation += 1;
            generation = s.generation;
            match mode {
                Mode::Reset | Mode::Refuse => s.reset_below = first_new,
                Mode::Stall => s.stall_below = first_new,
                _ => {}
            }
            s.mode = if mode == Mode::Reset {
                Mode::Pass
            } else {
                mode
            };
        });
        let mut applied = self.applied.clone();
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            applied.wait_for(|g| *g >= generation),
        )
        .await;
        if matches!(mode, Mode::Reset | Mode::Refuse) {
            self.wait_closed_below(first_new).await;
        }
    }

    /// Resets every open connection once (SO_LINGER 0, then close), leaving the mode as it is.
    pub(crate) async fn reset_all(&self) {
        let first_new = self.counters.next_id.load(Ordering::SeqCst);
        self.tx.send_modify(|s| {
            s.generation += 1;
            s.reset_below = first_new;
        });
        self.wait_closed_below(first_new).await;
    }

    async fn wait_closed_below(&self, first_new: u64) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if !self
                .counters
                .open
                .lock()
                .unwrap()
                .iter()
                .any(|&id| id < first_new)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub(crate) fn stats(&self) -> ProxyStats {
        let c = &self.counters;
        ProxyStats {
            accepted: c.accepted.load(Ordering::SeqCst),
            active: c.open.lock().unwrap().len() as u64,
            bytes_up: c.bytes_up.load(Ordering::SeqCst),
            bytes_down: c.bytes_down.load(Ordering::SeqCst),
            resets: c.resets.load(Ordering::SeqCst),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        // Connection tasks see the sender gone and reset their sockets.
    }
}

async fn accept_loop(
    listener: TcpListener,
    addr: SocketAddr,
    upstream: SocketAddr,
    mut rx: watch::Receiver<State>,
    applied: watch::Sender<u64>,
    counters: Arc<Counters>,
) {
    let mut listener = Some(listener);
    loop {
        let state = *rx.borrow_and_update();
        if state.mode == Mode::Refuse {
            listener = None; // closed: connects now get ECONNREFUSED
        } else if listener.is_none() {
            listener = rebind(addr).await;
        }
        applied.send_replace(state.generation);
        let Some(l) = listener.as_ref() else {
            if rx.changed().await.is_err() {
                return;
            }
            continue;
        };
        tokio::select! {
            accepted = l.accept() => {
                let Ok((client, _)) = accepted else { continue };
                let id = counters.next_id.fetch_add(1, Ordering::SeqCst);
                counters.accepted.fetch_add(1, Ordering::SeqCst);
                counters.open.lock().unwrap().insert(id);
                let (rx, counters) = (rx.clone(), counters.clone());
                tokio::spawn(async move {
                    connection(id, client, upstream, rx, &counters).await;
                    counters.open.lock().unwrap().remove(&id);
                });
            }
            changed = rx.changed() => if changed.is_err() { return },
        }
    }
}

/// Binds the proxy's port again after `Refuse` (SO_REUSEADDR is set by tokio on Unix).
async fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..200 {
        if let Ok(l) = TcpListener::bind(addr).await {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!("fault proxy: could not bind {addr} again after Refuse");
    None
}

/// How a direction (or the whole connection) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// The reader saw EOF; the FIN was passed on.
    Eof,
    /// The mode asked for a reset, or the proxy is gone.
    Reset,
    /// An I/O error on either socket.
    Error,
}

/// Waits until connection `id` may forward; `Err` when it must be reset.
async fn gate(id: u64, rx: &mut watch::Receiver<State>) -> Result<Duration, End> {
    loop {
        let state = *rx.borrow_and_update();
        if state.must_reset(id) {
            return Err(End::Reset);
        }
        if let Some(delay) = state.forwarding(id) {
            return Ok(delay);
        }
        if rx.changed().await.is_err() {
            return Err(End::Reset);
        }
    }
}

async fn connection(
    id: u64,
    mut client: TcpStream,
    upstream: SocketAddr,
    mut rx: watch::Receiver<State>,
    counters: &Counters,
) {
    // A connection accepted under Blackhole connects upstream only once it may forward.
    if gate(id, &mut rx).await.is_err() {
        return reset(&client, None, counters);
    }
    let upstream = rx.borrow().upstream.unwrap_or(upstream);
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return reset(&client, None, counters);
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let end = {
        let (cr, cw) = client.split();
        let (sr, sw) = server.split();
        let up = pump(id, cr, sw, rx.clone(), &counters.bytes_up);
        let down = pump(id, sr, cw, rx, &counters.bytes_down);
        tokio::pin!(up, down);
        tokio::select! {
            end = &mut up => if end == End::Eof { down.await } else { end },
            end = &mut down => if end == End::Eof { up.await } else { end },
        }
    };
    if end != End::Eof {
        reset(&client, Some(&server), counters);
    }
}

/// Closes with RST: SO_LINGER 0, then the sockets are dropped by the caller's return.
fn reset(client: &TcpStream, server: Option<&TcpStream>, counters: &Counters) {
    let _ = client.set_zero_linger();
    if let Some(server) = server {
        let _ = server.set_zero_linger();
    }
    counters.resets.fetch_add(1, Ordering::SeqCst);
}

/// Copies one direction chunk by chunk, holding data while the mode says silent.
async fn pump(
    id: u64,
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    mut rx: watch::Receiver<State>,
    bytes: &AtomicU64,
) -> End {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        if let Err(end) = gate(id, &mut rx).await {
            return end;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) => {
                    let _ = to.shutdown().await;
                    return End::Eof;
                }
                Ok(n) => n,
                Err(_) => return End::Error,
            },
            changed = rx.changed() => {
                if changed.is_err() {
                    return End::Reset;
                }
                continue;
            }
        };
        // Hold the chunk while silent, then add the latency in force.
        let delay = match gate(id, &mut rx).await {
            Ok(delay) => delay,
            Err(end) => return end,
        };
        if !delay.is_zero() {
            let deadline = tokio::time::Instant::now() + delay;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    changed = rx.changed() => {
                        if changed.is_err() || rx.borrow_and_update().must_reset(id) {
                            return End::Reset;
                        }
                    }
                }
            }
        }
        let mut done = 0;
        while done < n {
            if let Err(end) = gate(id, &mut rx).await {
                return end;
            }
            tokio::select! {
                written = to.write(&buf[done..n]) => match written {
                    Ok(0) | Err(_) => return End::Error,
                    Ok(w) => {
                        done += w;
                        bytes.fetch_add(w as u64, Ordering::SeqCst);
                    }
                },
                changed = rx.changed() => if changed.is_err() { return End::Reset },
            }
        }
    }
}
