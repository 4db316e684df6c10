//! The fault proxy in every mode, against a small echo server.
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::proxy::{FaultProxy, Mode};

/// An echo server on a free port; runs until the test's runtime ends.
async fn echo_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// What a read within `limit` saw.
#[derive(Debug, PartialEq)]
enum Seen {
    Data(Vec<u8>),
    Eof,
    Reset,
    Silent,
}

async fn read_within(s: &mut TcpStream, limit: Duration) -> Seen {
    let mut buf = [0u8; 4096];
    match tokio::time::timeout(limit, s.read(&mut buf)).await {
        Err(_) => Seen::Silent,
        Ok(Ok(0)) => Seen::Eof,
        Ok(Ok(n)) => Seen::Data(buf[..n].to_vec()),
        Ok(Err(e)) if e.kind() == ErrorKind::ConnectionReset => Seen::Reset,
        Ok(Err(e)) => panic!("unexpected read error {e}"),
    }
}

async fn roundtrip(s: &mut TcpStream, msg: &[u8]) -> Seen {
    s.write_all(msg).await.unwrap();
    read_within(s, Duration::from_secs(2)).await
}

#[tokio::test]
async fn pass_forwards_and_counts() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(
        roundtrip(&mut c, b"hello").await,
        Seen::Data(b"hello".to_vec())
    );
    let st = proxy.stats();
    assert_eq!(
        (st.accepted, st.active, st.bytes_up, st.bytes_down),
        (1, 1, 5, 5)
    );
    drop(c);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        proxy.stats().active,
        0,
        "a closed client closes its connection"
    );
}

#[tokio::test]
async fn blackhole_keeps_sockets_open_and_silent_then_heals() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut old, b"a").await, Seen::Data(b"a".to_vec()));
    proxy.set_mode(Mode::Blackhole).await;
    old.write_all(b"held").await.unwrap();
    assert_eq!(
        read_within(&mut old, Duration::from_millis(700)).await,
        Seen::Silent
    );
    // New connections are accepted but never answered.
    let mut new = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(proxy.addr()))
        .await
        .expect("connect completes under Blackhole")
        .unwrap();
    new.write_all(b"new").await.unwrap();
    assert_eq!(
        read_within(&mut new, Duration::from_millis(500)).await,
        Seen::Silent
    );
    // Healing delivers what was held, on both connections.
    proxy.set_mode(Mode::Pass).await;
    assert_eq!(
        read_within(&mut old, Duration::from_secs(2)).await,
        Seen::Data(b"held".to_vec())
    );
    assert_eq!(
        read_within(&mut new, Duration::from_secs(2)).await,
        Seen::Data(b"new".to_vec())
    );
    assert_eq!(proxy.stats().resets, 0);
}

#[tokio::test]
async fn stall_silences_existing_connections_only() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut old, b"a").await, Seen::Data(b"a".to_vec()));
    proxy.set_mode(Mode::Stall).await;
    old.write_all(b"b").await.unwrap();
    assert_eq!(
        read_within(&mut old, Duration::from_millis(700)).await,
        Seen::Silent
    );
    let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut new, b"c").await, Seen::Data(b"c".to_vec()));
    proxy.set_mode(Mode::Pass).await;
    assert_eq!(
        read_within(&mut old, Duration::from_secs(2)).await,
        Seen::Data(b"b".to_vec())
    );
}

#[tokio::test]
async fn refuse_resets_existing_and_refuses_new() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut old, b"a").await, Seen::Data(b"a".to_vec()));
    proxy.set_mode(Mode::Refuse).await;
    assert_eq!(
        read_within(&mut old, Duration::from_secs(2)).await,
        Seen::Reset
    );
    let err = TcpStream::connect(proxy.addr()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    proxy.set_mode(Mode::Pass).await;
    let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut new, b"b").await, Seen::Data(b"b".to_vec()));
}

#[tokio::test]
async fn reset_resets_once_then_passes() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut a = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut b = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut a, b"a").await, Seen::Data(b"a".to_vec()));
    assert_eq!(roundtrip(&mut b, b"b").await, Seen::Data(b"b".to_vec()));
    proxy.set_mode(Mode::Reset).await;
    assert_eq!(proxy.mode(), Mode::Pass);
    assert_eq!(
        read_within(&mut a, Duration::from_secs(2)).await,
        Seen::Reset
    );
    assert_eq!(
        read_within(&mut b, Duration::from_secs(2)).await,
        Seen::Reset
    );
    let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(roundtrip(&mut c, b"c").await, Seen::Data(b"c".to_vec()));
    // reset_all() does the same without touching the mode.
    proxy
        .set_mode(Mode::Latency(Duration::from_millis(1)))
        .await;
    proxy.reset_all().await;
    assert_eq!(
        read_within(&mut c, Duration::from_secs(2)).await,
        Seen::Reset
    );
    assert_eq!(proxy.mode(), Mode::Latency(Duration::from_millis(1)));
    assert_eq!(proxy.stats().resets, 3);
}

#[tokio::test]
async fn latency_is_added_per_chunk_and_direction() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
    let t = Instant::now();
    assert_eq!(roundtrip(&mut c, b"x").await, Seen::Data(b"x".to_vec()));
    let base = t.elapsed();
    proxy
        .set_mode(Mode::Latency(Duration::from_millis(150)))
        .await;
    let t = Instant::now();
    assert_eq!(roundtrip(&mut c, b"y").await, Seen::Data(b"y".to_vec()));
    let slow = t.elapsed();
    assert!(
        slow >= Duration::from_millis(300) && slow < Duration::from_millis(1000),
        "round trip {slow:?} (without latency {base:?})"
    );
}

#[tokio::test]
async fn dropping_the_proxy_resets_its_connections() {
    let proxy = FaultProxy::start(echo_server().await).await;
    let addr = proxy.addr();
    let mut c = TcpStream::connect(addr).await.unwrap();
    assert_eq!(roundtrip(&mut c, b"a").await, Seen::Data(b"a".to_vec()));
    drop(proxy);
    assert_eq!(
        read_within(&mut c, Duration::from_secs(2)).await,
        Seen::Reset
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
}
