//! A store that ignores conditional writes, made from one that keeps them: a TCP proxy in front
//! of an HTTP server (moto) that removes one request header (`If-None-Match`) from every request
//! it forwards, as Garage and older s3proxy ignore it. Each request's head is read (at most
//! 64 KiB), the header dropped, and its body (`Content-Length` bytes) forwarded after it; the
//! answers flow back untouched. Requests on a kept-alive connection are each filtered. The
//! signature still names the header, which moto does not check. Stops when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy, listening on 127.0.0.1.
pub(crate) struct DroppingProxy {
    /// `http://127.0.0.1:PORT`, the endpoint to give the store.
    pub endpoint: String,
    /// Headers removed so far.
    pub dropped: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl DroppingProxy {
    /// A proxy to `upstream` (`http://host:port`) dropping the header `name` (any case).
    pub(crate) async fn start(upstream: &str, name: &str) -> DroppingProxy {
        let target = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (count, header) = (dropped.clone(), format!("{}:", name.to_ascii_lowercase()));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (target, header, count) = (target.clone(), header.clone(), count.clone());
                tokio::spawn(async move {
                    if let Ok(up) = TcpStream::connect(&target).await {
                        relay(client, up, &header, &count).await;
                    }
                });
            }
        });
        DroppingProxy {
            endpoint,
            dropped,
            task,
        }
    }

    pub(crate) fn dropped(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for DroppingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Forwards the requests of `client` to `up`, each without `header`; the answers back as they are.
async fn relay(client: TcpStream, up: TcpStream, header: &str, count: &AtomicUsize) {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = up.into_split();
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut ur, &mut cw).await;
        let _ = cw.shutdown().await;
    });
    let mut buf: Vec<u8> = Vec::new();
    'requests: loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if buf.len() > 64 << 10 || !more(&mut cr, &mut buf).await {
                break 'requests;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut out = String::new();
        let mut len = 0usize;
        for (i, line) in head.split("\r\n").enumerate() {
            let lower = line.to_ascii_lowercase();
            if i > 0 && lower.starts_with(header) {
                count.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if let Some(v) = lower.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        buf.drain(..end + 4);
        while buf.len() < len {
            if !more(&mut cr, &mut buf).await {
                break 'requests;
            }
        }
        let body: Vec<u8> = buf.drain(..len).collect();
        if uw.write_all(out.as_bytes()).await.is_err() || uw.write_all(&body).await.is_err() {
            break;
        }
    }
    let _ = uw.shutdown().await;
    let _ = back.await;
}

/// Reads more of the client's bytes; false at its end.
async fn more(r: &mut tokio::net::tcp::OwnedReadHalf, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 << 10];
    match r.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}
