//! A test that panics leaves no server process and no directory behind.
use std::path::PathBuf;
use std::sync::mpsc;

use crate::harness::nats::{NatsConfig, PrivateNats};
use crate::harness::postgres::PrivatePostgres;
use crate::harness::{children_of, proxy::FaultProxy};

#[test]
fn a_panicking_test_kills_its_servers_and_removes_their_directories() {
    let (tx, rx) = mpsc::channel::<(Vec<u32>, Vec<PathBuf>)>();
    let panicked = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let pg = PrivatePostgres::start().await;
            let mut nats = PrivateNats::start(NatsConfig::jwt().tls(true)).await;
            let _proxy = FaultProxy::start(pg.addr()).await;
            nats.restart().await;
            let mut pids = vec![pg.pid().unwrap(), nats.pid().unwrap()];
            pids.extend(children_of(pg.pid().unwrap()).iter().map(|c| c.0));
            tx.send((pids, vec![pg.data_dir(), nats.dir().to_path_buf()]))
                .unwrap();
            panic!("a test fails with its servers running");
        })
    })
    .join();
    assert!(panicked.is_err());
    let (pids, dirs) = rx.recv().unwrap();
    assert!(pids.len() > 2, "postmaster, its children, nats-server");
    for pid in pids {
        assert!(!crate::harness::alive(pid), "{pid} survived");
    }
    for dir in dirs {
        assert!(!dir.exists(), "{dir:?} left behind");
    }
}
