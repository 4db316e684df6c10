//! A minimal NATS protocol client over plain TCP, for what async-nats cannot do: publish a
//! message whose header block is malformed (nats-server 2.9 stores it as it is).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) struct RawConn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl RawConn {
    /// Connects, reads INFO, sends CONNECT (headers on) and waits for the PONG of a PING.
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> RawConn {
        let s = TcpStream::connect(addr).await.expect("connect");
        let mut c = RawConn { s, buf: Vec::new() };
        let info = c.line().await;
        assert!(info.starts_with("INFO "), "{info}");
        c.send(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1}\r\nPING\r\n").await;
        loop {
            let l = c.line().await;
            if l == "PONG" {
                return c;
            }
            assert!(!l.starts_with("-ERR"), "{l}");
        }
    }

    pub(crate) async fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.expect("write");
    }

    async fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return l;
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk).await.expect("read");
            assert!(n > 0, "connection closed by the server");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Publishes with `HPUB` and the header block as given; returns JetStream's PubAck text.
    pub(crate) async fn hpub_stored(
        &mut self,
        subject: &str,
        hdr: &[u8],
        payload: &[u8],
    ) -> String {
        self.send(b"SUB _INBOX.rawack 9\r\n").await;
        let mut out = format!(
            "HPUB {subject} _INBOX.rawack {} {}\r\n",
            hdr.len(),
            hdr.len() + payload.len()
        )
        .into_bytes();
        out.extend_from_slice(hdr);
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\r\n");
        self.send(&out).await;
        loop {
            let l = self.line().await;
            if l == "PING" {
                self.send(b"PONG\r\n").await;
                continue;
            }
            let f: Vec<&str> = l.split(' ').collect();
            if f[0] == "MSG" {
                let n: usize = f[f.len() - 1].parse().expect("size");
                while self.buf.len() < n + 2 {
                    let mut chunk = [0u8; 4096];
                    let got = self.s.read(&mut chunk).await.expect("read");
                    assert!(got > 0, "closed");
                    self.buf.extend_from_slice(&chunk[..got]);
                }
                let ack = String::from_utf8_lossy(&self.buf[..n]).into_owned();
                self.buf.drain(..n + 2);
                return ack;
            }
            assert!(!l.starts_with("-ERR"), "{l}");
        }
    }
}
